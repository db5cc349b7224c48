"""Shared machinery of the reliability tests: threads with their own connections, a real Celery worker.

Most of these tests need PostgreSQL (real row locks, real concurrent connections) and some need Redis
(a real broker between the test and a worker process). Run them with

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/reliability REDIS_URL=redis://127.0.0.1:6379/7 \
        .venv/bin/pytest tests/reliability

On SQLite they skip with the reason. The worker tests use Redis database 7 (``RELIABILITY_REDIS_URL``
overrides it) and flush it first, so they never touch another process's queue.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.db import connection

from tests.annotation.conftest import book, items  # noqa: F401  (fixtures of the race tests)

ROOT = Path(__file__).resolve().parents[2]
REDIS_URL = os.environ.get("RELIABILITY_REDIS_URL", "redis://127.0.0.1:6379/7")

needs_postgres = [
    pytest.mark.postgres,
    pytest.mark.skipif(
        connection.vendor != "postgresql",
        reason="needs PostgreSQL (set DATABASE_URL): SQLite serialises every write, so these races and "
        "a worker process sharing the test database cannot happen there",
    ),
]


def wait_for(condition: Callable[[], Any], timeout: float, what: str, interval: float = 0.05) -> Any:
    """Poll `condition` until it returns something truthy; fail naming `what` after `timeout` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(interval)
    pytest.fail(f"timed out after {timeout} s waiting for {what}")


def redis_available(url: str = REDIS_URL) -> bool:
    import redis

    try:
        redis.Redis.from_url(url, socket_connect_timeout=1).ping()
    except Exception:
        return False
    return True


def database_url() -> str:
    """A URL of the test database this process uses (pytest-django's test_<name>) for a subprocess."""
    s = connection.settings_dict
    auth = s["USER"] + (f":{s['PASSWORD']}" if s.get("PASSWORD") else "")
    return f"postgres://{auth}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"


@contextlib.contextmanager
def celery_broker(url: str, *, eager: bool = False) -> Iterator[None]:
    """Point this process's Celery app at `url` (tasks really sent, not run in-process) for a while.

    Settings are read once into the app's configuration, so the app's own config and its cached
    producer pool are swapped, then restored.
    """
    from config.celery import app

    saved = {
        "broker_url": app.conf.broker_url,
        "broker_transport_options": app.conf.broker_transport_options,
        "task_always_eager": app.conf.task_always_eager,
    }

    def reset_pools() -> None:
        # Dropped, not closed: kombu's global pool registry may hand the same pool out again.
        app._pool = None
        app.amqp._producer_pool = None

    reset_pools()
    app.conf.update(broker_url=url, broker_transport_options={}, task_always_eager=eager)
    try:
        yield
    finally:
        reset_pools()
        app.conf.update(**saved)


class Worker:
    """A `celery -A config worker --pool=solo` process against the test database and a Redis broker.

    `slow_export` (seconds per chunk of 20 items) slows the export down through
    tests/reliability/worker.py so that a kill lands in the middle of writing the file.
    """

    def __init__(self, var_dir: Path, log: Path, *, slow_export: float = 0.0) -> None:
        env = {
            **os.environ,
            "DATABASE_URL": database_url(),
            "REDIS_URL": REDIS_URL,
            "CELERY_TASK_ALWAYS_EAGER": "0",
            "TAXONOMIST_VAR_DIR": str(var_dir),
            "DEBUG": "0",
            "LOG_LEVEL": "INFO",
            "RELIABILITY_SLOW_EXPORT": str(slow_export),
        }
        env.pop("DJANGO_SETTINGS_MODULE", None)
        self.log = log
        self._handle = log.open("ab")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.reliability.worker"],
            cwd=ROOT,
            env=env,
            stdout=self._handle,
            stderr=subprocess.STDOUT,
        )
        wait_for(self._ready, 90, "the Celery worker to be ready")

    def _ready(self) -> bool:
        if self.process.poll() is not None:
            pytest.fail(f"the Celery worker exited early:\n{self.log.read_text(errors='replace')[-3000:]}")
        return " ready." in self.log.read_text(errors="replace")

    def kill(self) -> None:
        """SIGKILL: no clean-up, no acknowledgement, exactly what an OOM kill or a pulled plug does."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill()
        self._handle.close()


@pytest.fixture
def broker() -> Iterator[str]:
    """Redis database 7, emptied, as this process's Celery broker (tasks go to a real worker)."""
    if not redis_available():
        pytest.skip(f"needs Redis at {REDIS_URL} (start redis-server, or set RELIABILITY_REDIS_URL)")
    import redis

    redis.Redis.from_url(REDIS_URL).flushdb()
    with celery_broker(REDIS_URL):
        yield REDIS_URL
    redis.Redis.from_url(REDIS_URL).flushdb()


@pytest.fixture
def start_worker(tmp_path: Path, broker: str, settings: Any) -> Iterator[Callable[..., Worker]]:
    """Start workers sharing `tmp_path/var` (uploads and exports) with this process; all stopped after."""
    var_dir = tmp_path / "var"
    var_dir.mkdir()
    settings.EXPORT_ROOT = var_dir / "exports"
    settings.UPLOAD_ROOT = var_dir / "uploads"
    workers: list[Worker] = []

    def start(**kwargs: Any) -> Worker:
        worker = Worker(var_dir, tmp_path / f"worker-{len(workers) + 1}.log", **kwargs)
        workers.append(worker)
        return worker

    yield start
    for worker in workers:
        worker.stop()
