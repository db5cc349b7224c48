"""The fixed cast of every test: two annotators, a lead, an owner and an outsider, in one study; the one
Chromium fixture (`browser`), and the check that stops a run whose browser tests could not run."""

from __future__ import annotations

import faulthandler
import sys

import pytest
from django.test import Client

from apps.accounts.models import Role, Study, User
from tests.browser import browser, missing_browser  # noqa: F401  (browser: the one Chromium fixture)
from tests.factories import MembershipFactory, StudyFactory, UserFactory
from tests.live_server import requests_in_turn  # noqa: F401  (autouse: the live server on SQLite)


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


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Some tests kill PostgreSQL backends (tests/reliability); a connection the server closed must not
    fail the next test's setup. Before any fixture runs, an unusable connection is closed so Django
    opens a fresh one on first use."""
    from django.db import connections

    for conn in connections.all(initialized_only=True):
        if conn.connection is not None and not conn.in_atomic_block and not conn.is_usable():
            conn.close()


def pytest_collection_finish(session: pytest.Session) -> None:
    """A run with browser tests on a machine without Chromium (or Playwright) stops here, before its first
    test, with one message saying how to install it: never a skip or a failure per test."""
    wanted = [
        item
        for item in session.items
        if item.get_closest_marker("browser") or "browser" in getattr(item, "fixturenames", ())
    ]
    if not wanted:
        return
    problem = missing_browser()
    if problem is not None:
        pytest.exit(
            f"{len(wanted)} browser test(s) selected. {problem}", returncode=pytest.ExitCode.USAGE_ERROR
        )


EXIT_WATCHDOG_SECONDS = 120


def pytest_unconfigure(config: pytest.Config) -> None:
    """Once the run is over, the process has two minutes to exit. A test that leaves something behind that
    blocks interpreter shutdown (a server whose `shutdown()` waits for a thread shutdown has frozen) used to
    keep pytest alive after its summary until CI's time ran out; now every thread's traceback is printed
    and the process exits with status 1, naming the culprit."""
    faulthandler.dump_traceback_later(EXIT_WATCHDOG_SECONDS, exit=True, file=sys.__stderr__)
