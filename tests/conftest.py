"""The fixed cast of every test: two annotators, a lead, an owner and an outsider, in one study; the one
Chromium fixture (`browser`), and the check that stops a run whose browser tests could not run."""

from __future__ import annotations

import faulthandler
import sys
from typing import Any

import pytest
from django.core.servers.basehttp import WSGIServer
from django.db import connection
from django.test import Client
from django.test.testcases import LiveServerThread, QuietWSGIRequestHandler

from apps.accounts.models import Role, Study, User
from tests.browser import browser, missing_browser  # noqa: F401  (browser: the one Chromium fixture)
from tests.factories import MembershipFactory, StudyFactory, UserFactory


class _OneRequestAtATimeServer(WSGIServer):
    """Django's single-threaded development server, taking (and ignoring) the threaded one's argument."""

    def __init__(self, *args: Any, connections_override: Any = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)


_threaded_server = LiveServerThread._create_server


def _live_server(self: LiveServerThread, connections_override: Any = None) -> Any:
    """On SQLite the live server answers one request at a time. Its test database lives in memory: the
    server shares the test's connection (pytest-django passes it when the database exists before the
    server starts) or its threads open their own to the shared-cache database. Either way Django's
    threaded server would run a page's parallel requests (its figures, say) on one in-memory database
    at once, and SQLite then hands a statement the wrong rows: an empty session row, a 500 (Django's
    docs warn of it for the test thread and the server). Answering in turn closes each connection after
    its response, as the development server does without threads. PostgreSQL keeps the threaded server,
    with a connection per thread."""
    if connection.vendor == "sqlite":
        return _OneRequestAtATimeServer(
            (self.host, self.port), QuietWSGIRequestHandler, allow_reuse_address=False
        )
    return _threaded_server(self, connections_override=connections_override)


LiveServerThread._create_server = _live_server  # type: ignore[method-assign]


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
