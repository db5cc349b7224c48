"""apps/core/postgresql: the health check asks the socket, and the server only when it has spoken."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection, connections

from apps.core.postgresql.base import DatabaseWrapper, quiet_and_idle

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="the PostgreSQL backend"),
]


@pytest.fixture
def other() -> Iterator[Any]:
    """A second connection to the test database with health checks on, as a server process has."""
    wrapper = connections.create_connection("default")
    assert isinstance(wrapper, DatabaseWrapper)
    wrapper.health_check_enabled = True
    wrapper.ensure_connection()
    yield wrapper
    wrapper.close()


def _checks(wrapper: Any, monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    calls: list[bool] = []
    usable = type(wrapper).is_usable

    def is_usable(self: Any) -> bool:
        result = usable(self)
        calls.append(result)
        return bool(result)

    monkeypatch.setattr(type(wrapper), "is_usable", is_usable)
    return calls


def test_the_settings_select_this_backend_for_postgres_urls() -> None:
    assert connection.settings_dict["ENGINE"] == "apps.core.postgresql"


def test_a_quiet_idle_connection_is_kept_without_a_query(other: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _checks(other, monkeypatch)
    raw = other.connection
    other.health_check_done = False
    other.close_if_health_check_failed()
    assert calls == [] and other.connection is raw and other.health_check_done
    with other.cursor() as cursor:  # and it still answers
        cursor.execute("SELECT 2")
        assert cursor.fetchone() == (2,)


def test_a_connection_the_server_ended_is_checked_closed_and_replaced(
    other: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _checks(other, monkeypatch)
    pid = other.connection.info.backend_pid
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(%s)", [pid])
    deadline = time.monotonic() + 5
    while quiet_and_idle(other.connection) and time.monotonic() < deadline:
        time.sleep(0.01)  # the server's goodbye reaches the socket
    other.health_check_done = False
    other.close_if_health_check_failed()
    assert calls == [False] and other.connection is None
    with other.cursor() as cursor:  # the next query opens a new connection
        cursor.execute("SELECT pg_backend_pid()")
        assert cursor.fetchone()[0] != pid


def test_a_connection_inside_a_transaction_is_not_judged_by_its_socket(other: Any) -> None:
    other.connection.autocommit = False
    with other.connection.cursor() as cursor:
        cursor.execute("SELECT 1")  # psycopg opens a transaction first
    assert not quiet_and_idle(other.connection)
    other.connection.rollback()
    assert quiet_and_idle(other.connection)
