"""What a render process runs as it starts (the render pool's initializer). Pure module (no Django).

A render process is spawned by the process that imports (a Celery worker, a command) and keeps running
between imports. It warms up first (:func:`rendering.warm_up`), before it takes its first batch. When
the process that started it ends normally, its pool is shut down with it; when that process is killed
(SIGKILL, the out-of-memory killer, a test that kills workers on purpose), nothing tells the render
processes, which would live on as orphans, one set per killed worker. So each one watches its parent
and exits once it is gone.
"""

from __future__ import annotations

import os
import threading
import time

from apps.corpus import rendering

WATCH_SECONDS = 1.0


def start(parent: int) -> None:
    """Warm up, and exit this process (within `WATCH_SECONDS`) once process `parent` is no longer its
    parent."""
    rendering.warm_up()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(WATCH_SECONDS)
        os._exit(0)  # no cleanup to wait for: the work it held belonged to the dead process

    threading.Thread(target=watch, name="render-watch-parent", daemon=True).start()
