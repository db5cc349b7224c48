"""The live server the browser tests drive answers requests in turn on SQLite.

SQLite's test database lives in memory. The live server shares the test's connection to it (pytest-django
passes it when the database exists before the server starts), or its threads open their own to the
shared-cache database. Either way Django's threaded server would run a page's parallel requests (its
figures, say) on one in-memory database at once, and SQLite then hands a statement the wrong rows: a
session read got an empty row and the figure a 500 (Django's docs warn of it for the test thread and the
server). On SQLite each request therefore holds one lock from its start to the end of its response body
(a streamed body is read inside the lock). The server stays threaded, so that a request waiting for the
lock does not hold up the server, and a test whose requests must overlap (a model run held open by its
fake server while a second page watches it) is marked ``overlapping_requests`` and runs them at once,
with the shared connection's risk. PostgreSQL keeps the plain threaded server: a connection per thread.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import pytest
from django.core.servers.basehttp import ThreadedWSGIServer
from django.db import connection
from django.test.testcases import LiveServerThread, QuietWSGIRequestHandler

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


class InTurn:
    """A WSGI application answering one request at a time, unless `overlap` is set (by the marker)."""

    lock = threading.Lock()
    overlap = False

    def __init__(self, application: WSGIApp) -> None:
        self.application = application

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if InTurn.overlap:
            return self.application(environ, start_response)
        with InTurn.lock:
            response = self.application(environ, start_response)
            try:
                return [bytes(chunk) for chunk in response]
            finally:
                close = getattr(response, "close", None)
                if close is not None:
                    close()  # Django's request_finished, inside the turn


class InTurnServer(ThreadedWSGIServer):
    def set_app(self, application: WSGIApp) -> None:
        super().set_app(InTurn(application))


_threaded = LiveServerThread._create_server


def _create_server(self: LiveServerThread, connections_override: Any = None) -> Any:
    if connection.vendor != "sqlite":
        return _threaded(self, connections_override=connections_override)
    return InTurnServer(
        (self.host, self.port),
        QuietWSGIRequestHandler,
        allow_reuse_address=False,
        connections_override=connections_override,
    )


LiveServerThread._create_server = _create_server  # type: ignore[method-assign]


@pytest.fixture(autouse=True)
def requests_in_turn(request: pytest.FixtureRequest) -> Iterator[None]:
    """Every test's live server answers in turn on SQLite, but a test marked ``overlapping_requests``."""
    InTurn.overlap = request.node.get_closest_marker("overlapping_requests") is not None
    yield
    InTurn.overlap = False
