"""A Celery worker for the crash tests: ``python -m tests.reliability.worker``.

The same worker as ``celery -A config worker --pool=solo``; with ``RELIABILITY_SLOW_EXPORT=S`` it
writes exports in chunks of 20 items and sleeps S seconds per chunk, so that a test can kill it in the
middle of writing a file. Nothing else changes: the tasks, services and settings are the real ones.
"""

from __future__ import annotations

import os
import time
from typing import Any


def slow_down_exports(seconds: float) -> None:
    from apps.export import services, tables

    real = tables.dataset_rows

    def slow_rows(*args: Any, **kwargs: Any) -> Any:
        time.sleep(seconds)
        return real(*args, **kwargs)

    services.DEFAULT_CHUNK_SIZE = 20  # type: ignore[attr-defined]
    tables.dataset_rows = slow_rows  # type: ignore[assignment]


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    slow = float(os.environ.get("RELIABILITY_SLOW_EXPORT") or 0)
    if slow > 0:
        slow_down_exports(slow)
    from config.celery import app

    app.worker_main(
        [
            "worker",
            "--pool=solo",
            "--concurrency=1",
            "--loglevel=INFO",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
        ]
    )


if __name__ == "__main__":
    main()
