"""Real concurrency on whichever database the suite runs on: threads with their own connections.

On PostgreSQL every thread already opens its own connection to the test database. SQLite's test database
is in memory (one shared-cache database, whose locking is not the file's), so ``concurrent_database``
copies it, as the test left it so far, into a file and points the connections that threads open from
then on at that file, with the project's own SQLite options (WAL, busy timeout, IMMEDIATE transactions):
the embedded default as ``make run`` serves it. The test's own thread keeps the in-memory database, so
reads after the race go through ``in_thread`` too.

    def test_something(concurrent_database):   # also makes the test transactional
        ...set up with the ORM...
        concurrent_database.start()             # from here on, threads share one file database
        run_in_threads(racer, racer)
        assert in_thread(lambda: Annotation.objects.count()) == 1
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.db import DEFAULT_DB_ALIAS, connection, connections


class ConcurrentDatabase:
    def __init__(self, tmp_path: Path) -> None:
        self.path = tmp_path / "concurrent.sqlite3"
        self._saved: dict[str, Any] | None = None

    def start(self) -> None:
        """Threads started after this share one database: the test's data so far, in a file on SQLite."""
        if connection.vendor != "sqlite" or self._saved is not None:
            return
        connection.ensure_connection()
        target = sqlite3.connect(self.path)
        try:
            connection.connection.backup(target)
        finally:
            target.close()
        self._saved = connections.settings[DEFAULT_DB_ALIAS]
        # Wrappers made from now on (a new thread's) read this dict; this thread's wrapper keeps its own.
        connections.settings[DEFAULT_DB_ALIAS] = {**self._saved, "NAME": str(self.path)}

    def stop(self) -> None:
        if self._saved is not None:
            connections.settings[DEFAULT_DB_ALIAS] = self._saved
            self._saved = None


@pytest.fixture
def concurrent_database(transactional_db: None, tmp_path: Path) -> Iterator[ConcurrentDatabase]:
    database = ConcurrentDatabase(tmp_path)
    try:
        yield database
    finally:
        database.stop()


def run_in_threads(*targets: Callable[[], None], timeout: float = 60, together: bool = True) -> None:
    """Run each target on a thread with its own connection, all released at once by a barrier (or, with
    `together=False`, started in order, for tests that time their own overlap); re-raise the first
    exception one raised; fail if one is still running after `timeout` seconds."""
    errors: list[BaseException] = []
    barrier = threading.Barrier(len(targets)) if together else None

    def wrapped(target: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            try:
                if barrier is not None:
                    barrier.wait()
                target()
            except BaseException as exc:  # reported to the test below
                errors.append(exc)
            finally:
                connections.close_all()

        return run

    threads = [threading.Thread(target=wrapped(t)) for t in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=timeout)
    assert not any(t.is_alive() for t in threads), "a thread is stuck (a lock that is never released?)"
    if errors:
        raise errors[0]


def in_thread[T](read: Callable[[], T]) -> T:
    """Run `read` on a thread of its own (a connection to the database the racers shared)."""
    results: list[T] = []
    run_in_threads(lambda: results.append(read()))
    return results[0]
