from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from rest_framework.test import APIClient

from apps.accounts.models import Study, User
from tests.api.world import World, isolated_world


@pytest.fixture
def world(
    study: Study,
    owner: User,
    lead: User,
    annotator_a: User,
    annotator_b: User,
    outsider: User,
    settings: Any,
    tmp_path: Path,
) -> World:
    return isolated_world(settings, tmp_path, study, owner, lead, annotator_a, annotator_b, outsider)


@pytest.fixture
def api() -> APIClient:
    return APIClient()


def as_user(user: User | None) -> APIClient:
    """A client logged in (session) as `user`, anonymous for None."""
    client = APIClient()
    if user is not None:
        client.force_login(user)
    return client


def with_token(raw: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {raw}")
    return client
