"""`make run`'s servers (scripts/serve_demo.sh): Ctrl+C stops the worker and the web server, quietly.

The two servers are stand-ins with the real ones' signal behaviour: the worker, like Celery's, installs
its own SIGINT and SIGTERM handlers, says "Warm shutdown" on each and takes a moment to stop; the web
server, like runserver started in the background of a script, keeps SIGINT ignored and stops on SIGTERM.
Each notes the signals it got in a file, so the test sees who was stopped and how often.

Every test runs twice: under this machine's bash, and under it made to refuse `wait -n` as macOS's bash
3.2 does (`make run` there must not stop at once).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "serve_demo.sh"

# bash 3.2's `wait` knows no -n: an exported function of that name, which the script's bash imports and
# prefers to the builtin, refuses it the same way and passes every other call on.
WAIT_WITHOUT_N = {
    "BASH_FUNC_wait%%": (
        '() { case "${1-}" in -n) echo "wait: -n: invalid option" >&2; return 2;; esac; builtin wait "$@"; }'
    )
}


@pytest.fixture(params=["bash", "bash 3.2 (no wait -n)"])
def shell_env(request: pytest.FixtureRequest) -> dict[str, str]:
    return WAIT_WITHOUT_N if request.param.startswith("bash 3.2") else {}


WORKER = """\
import signal, sys, time
heard = []
signal.signal(signal.SIGINT, lambda number, frame: heard.append(number))
signal.signal(signal.SIGTERM, lambda number, frame: heard.append(number))
log = open(sys.argv[1], "a", buffering=1)
log.write("started\\n")
told, stopping_since = 0, None
while stopping_since is None or time.monotonic() - stopping_since < 0.3:  # a warm shutdown takes a while
    time.sleep(0.02)
    for number in heard[told:]:
        log.write(signal.Signals(number).name + "\\n")
        print("worker: Warm shutdown (MainProcess)", flush=True)
        told += 1
        stopping_since = stopping_since or time.monotonic()
"""

WEB = """\
import pathlib, signal, sys, time
def stop(number, frame):
    open(sys.argv[1], "a").write(signal.Signals(number).name + "\\n")
    sys.exit(0)
signal.signal(signal.SIGTERM, stop)
open(sys.argv[1], "a").write("started\\n")
if "--exit-at-once" in sys.argv:  # once the worker listens, as a port already in use would do
    worker_log = pathlib.Path(sys.argv[1]).with_name("worker.log")
    while "started" not in (worker_log.read_text() if worker_log.exists() else ""):
        time.sleep(0.02)
    sys.exit(3)
while True:
    time.sleep(0.05)
"""


def _stand_ins(tmp_path: Path, *, web_exits: bool = False) -> Path:
    """A BIN folder whose `celery` and `python` are the stand-ins, logging to worker.log and web.log."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (tmp_path / "worker.py").write_text(WORKER)
    (tmp_path / "web.py").write_text(WEB)
    flag = " --exit-at-once" if web_exits else ""
    for name, code, log in (("celery", "worker.py", "worker.log"), ("python", "web.py", "web.log")):
        stub = bin_dir / name
        stub.write_text(f"#!/bin/sh\nexec '{sys.executable}' '{tmp_path / code}' '{tmp_path / log}'{flag}\n")
        stub.chmod(0o755)
    return bin_dir


def _start(bin_dir: Path, shell_env: dict[str, str]) -> subprocess.Popen[str]:
    """The script in a process group of its own, with SIGINT at its default as under a terminal."""
    return subprocess.Popen(
        [str(SCRIPT)],
        env={**os.environ, **shell_env, "BIN": str(bin_dir), "PORT": "8765"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def _wait_for(path: Path, text: str) -> None:
    deadline = time.monotonic() + 20
    while text not in (path.read_text() if path.exists() else ""):
        if time.monotonic() > deadline:
            pytest.fail(f"{path.name} never said {text!r}")
        time.sleep(0.05)


def _group_is_gone(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    return False


def test_ctrl_c_stops_the_worker_and_the_web_server_quietly(
    tmp_path: Path, shell_env: dict[str, str]
) -> None:
    process = _start(_stand_ins(tmp_path), shell_env)
    _wait_for(tmp_path / "worker.log", "started")
    _wait_for(tmp_path / "web.log", "started")
    time.sleep(1.2)  # past the script's first looks at the servers
    assert process.poll() is None, "the script stopped while both servers were running"

    os.killpg(process.pid, signal.SIGINT)  # what Ctrl+C does: the whole foreground group
    output, _ = process.communicate(timeout=15)

    assert process.returncode == 0
    assert _group_is_gone(process.pid)
    assert (tmp_path / "web.log").read_text().splitlines()[1:] == ["SIGTERM"]  # it ignores SIGINT
    # the worker hears Ctrl+C itself and stops: the script sends it nothing more, so it says it once
    assert (tmp_path / "worker.log").read_text().splitlines()[1:] == ["SIGINT"]
    lines = [line for line in output.splitlines() if line.strip()]
    assert lines == ["worker: Warm shutdown (MainProcess)"], output


def test_sigterm_to_the_script_alone_stops_both_servers(tmp_path: Path, shell_env: dict[str, str]) -> None:
    process = _start(_stand_ins(tmp_path), shell_env)
    _wait_for(tmp_path / "worker.log", "started")
    _wait_for(tmp_path / "web.log", "started")

    process.terminate()
    output, _ = process.communicate(timeout=15)

    assert process.returncode == 0
    assert _group_is_gone(process.pid)
    assert (tmp_path / "worker.log").read_text().splitlines()[1:] == ["SIGTERM"]
    assert (tmp_path / "web.log").read_text().splitlines()[1:] == ["SIGTERM"]
    assert output.count("Warm shutdown") == 1


def test_a_server_that_stops_by_itself_stops_the_other_and_gives_its_status(
    tmp_path: Path, shell_env: dict[str, str]
) -> None:
    process = _start(_stand_ins(tmp_path, web_exits=True), shell_env)

    process.communicate(timeout=15)

    assert process.returncode == 3  # the web server's own exit status
    assert _group_is_gone(process.pid)
    _wait_for(tmp_path / "worker.log", "SIGTERM")
