"""A test run ends by itself once it has reported: nothing a test leaves behind may keep the process alive
(tests/conftest.py's exit watchdog turns such a hang into a failure with every thread's traceback)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_a_run_that_used_the_jobs_fake_model_server_exits_once_it_has_reported() -> None:
    """tests/core/test_jobs.py keeps one fake OpenAI-compatible server open for its module. Left to the
    garbage collector, its shutdown waited at exit for a thread interpreter shutdown had frozen: pytest
    printed '3024 passed' and never exited, until CI's 90 minutes ran out. The run must end by itself."""
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "tests/core/test_jobs.py",
            "-k",
            "ModelRun",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )

    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert re.search(r"\d+ passed", run.stdout), run.stdout
    assert "Timeout (0:" not in run.stderr  # the exit watchdog (tests/conftest.py) never had to fire
