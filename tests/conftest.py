"""The fixed cast of every test: two annotators, a lead, an owner and an outsider, in one study."""

from __future__ import annotations

import pytest
from django.test import Client

from apps.accounts.models import Role, Study, User
from tests.factories import MembershipFactory, StudyFactory, UserFactory


@pytest.fixture
def study(db: None) -> Study:
    return StudyFactory(slug="ddp", name="Distributed training faults")


@pytest.fixture
def owner(study: Study) -> User:
    return MembershipFactory(study=study, role=Role.OWNER, user=UserFactory(username="olivia")).user


@pytest.fixture
def lead(study: Study) -> User:
    return MembershipFactory(study=study, role=Role.LEAD, user=UserFactory(username="lena")).user


@pytest.fixture
def annotator_a(study: Study) -> User:
    return MembershipFactory(study=study, role=Role.ANNOTATOR, user=UserFactory(username="alice")).user


@pytest.fixture
def annotator_b(study: Study) -> User:
    return MembershipFactory(study=study, role=Role.ANNOTATOR, user=UserFactory(username="bob")).user


@pytest.fixture
def outsider(db: None) -> User:
    return UserFactory(username="oscar")


def login(client: Client, user: User) -> Client:
    client.force_login(user)
    return client
