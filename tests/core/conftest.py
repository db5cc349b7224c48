from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

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
