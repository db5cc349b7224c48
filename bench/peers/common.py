"""What the three clients share: the items, free ports, server processes and the timing of requests.

Every server is bound to 127.0.0.1 on a port the kernel just handed out, runs in a session of its own
(so that stopping it by its process-group id also stops its workers) and writes its log to a file in the
run's temporary folder; `Process.stop` is called on every path out, errors and Ctrl-C included.
"""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

PEERS = Path(__file__).resolve().parent
BENCH = PEERS.parent
ROOT = BENCH.parent
for _path in (str(BENCH), str(ROOT)):
    if _path not in sys.path:
        sys.path.insert(0, _path)

from bench_http import Timing  # noqa: E402  (after the path above)
from bench_import import CODE, paragraph  # noqa: E402

LABELS = ("bug", "question", "feature")
PAGE_SIZE = 50
WARMUP = 3
SECRET_OPTIONS = ("--password", "--user-token")  # their values are not printed


class PeerError(Exception):
    """A tool could not be installed, started or driven: the message says why, for the table."""


# --- the data ------------------------------------------------------------------------------------------


def text(rng: random.Random) -> str:
    """About 1.5 KB (1,300-1,700 characters) of issue-like prose with a fenced code block."""
    target = rng.randint(1300, 1700)
    parts = [paragraph(rng, rng.randint(20, 40)), f"```python\n{rng.choice(CODE)}```"]
    while sum(len(p) + 2 for p in parts) < target:
        parts.append(paragraph(rng, rng.randint(15, 40)))
    return "\n\n".join(parts)[:target]


def make_items(count: int, seed: int = 2023) -> list[dict[str, str]]:
    """`count` items, the same for every tool: url, title and text (~1.5 KB)."""
    rng = random.Random(seed)
    return [
        {
            "url": f"https://github.com/bench/peers/issues/{n}",
            "title": paragraph(rng, rng.randint(5, 12))[:200],
            "text": text(rng),
        }
        for n in range(1, count + 1)
    ]


def write_jsonl(rows: list[dict[str, Any]], path: Path) -> Path:
    with path.open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row) + "\n")
    return path


def random_pages(items: int, requests: int, seed: int = 7) -> list[int]:
    """Page numbers (0-based, `PAGE_SIZE` items each) drawn uniformly, the same sequence for every tool."""
    pages = max(1, items // PAGE_SIZE)
    rng = random.Random(seed)
    return [rng.randrange(pages) for _ in range(requests + WARMUP)]


# --- processes -----------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class Process:
    """A server or worker in its own session, logging to `log`; `stop()` ends its whole process group."""

    def __init__(self, name: str, cmd: list[str], *, env: dict[str, str], cwd: Path, log: Path) -> None:
        self.name = name
        self.log = log
        self.handle = log.open("ab")
        shown = ["***" if n and cmd[n - 1] in SECRET_OPTIONS else arg for n, arg in enumerate(cmd)]
        print(f"  start {name}: {' '.join(shown)}", file=sys.stderr, flush=True)
        self.popen = subprocess.Popen(
            cmd, env=env, cwd=cwd, stdout=self.handle, stderr=subprocess.STDOUT, start_new_session=True
        )

    def alive(self) -> bool:
        return self.popen.poll() is None

    def tail(self, lines: int = 15) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self) -> None:
        if self.alive():
            for sig, wait in ((signal.SIGTERM, 20), (signal.SIGKILL, 10)):
                try:
                    os.killpg(self.popen.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    self.popen.wait(timeout=wait)
                    break
                except subprocess.TimeoutExpired:
                    continue
        # workers that outlived their parent are still in its process group
        with suppress(ProcessLookupError, PermissionError):
            os.killpg(self.popen.pid, signal.SIGKILL)
        self.handle.close()


def wait_until_up(url: str, processes: list[Process], *, timeout: float, ok: Callable[[Any], bool]) -> None:
    """Poll `url` until `ok(response)`; fail early, with the log's tail, when a process died."""
    import requests

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for process in processes:
            if not process.alive():
                raise PeerError(f"{process.name} exited ({process.popen.returncode}):\n{process.tail()}")
        try:
            if ok(requests.get(url, timeout=10)):
                return
        except (requests.ConnectionError, requests.Timeout):
            pass
        time.sleep(0.5)
    raise PeerError(f"{url} did not answer within {timeout:.0f} s:\n{processes[0].tail()}")


def loopback_only(port: int) -> None:
    """Fail unless every socket listening on `port` is bound to 127.0.0.1 (read from /proc/net/tcp*)."""
    bound = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            local, state = line.split()[1], line.split()[3]
            address, hex_port = local.rsplit(":", 1)
            if state == "0A" and int(hex_port, 16) == port:  # 0A: LISTEN
                bound.append(address)
    if not bound:
        raise PeerError(f"nothing listens on port {port}")
    if any(address != "0100007F" for address in bound):
        raise PeerError(f"port {port} is bound beyond 127.0.0.1: {bound}")


def package_version(bin_dir: Path, distribution: str) -> str:
    """The installed version of `distribution` in the virtualenv of `bin_dir`."""
    out = subprocess.run(
        [
            str(bin_dir / "python"),
            "-c",
            f"import importlib.metadata as m; print(m.version({distribution!r}))",
        ],
        capture_output=True,
        text=True,
    )
    return out.stdout.strip() or "?"


@contextmanager
def stopping(processes: list[Process]) -> Iterator[list[Process]]:
    """Stop every process started into the list, last first, however the block ends."""
    try:
        yield processes
    finally:
        for process in reversed(processes):
            process.stop()


# --- the client side -----------------------------------------------------------------------------------


def session(header: str) -> Any:
    """A `requests.Session` sending `Authorization: header` on every request."""
    import requests

    s = requests.Session()
    s.headers["Authorization"] = header
    return s


def check(response: Any, *expected: int) -> Any:
    """The decoded JSON of a response with one of the expected statuses (200 and 201 by default)."""
    if response.status_code not in (expected or (200, 201)):
        raise PeerError(
            f"{response.request.method} {response.url}: HTTP {response.status_code}: {response.text[:300]}"
        )
    return response.json() if response.content else None


def time_requests(
    name: str, calls: Sequence[Callable[[], Any]], *, statuses: tuple[int, ...]
) -> dict[str, Any]:
    """Time each call at the client; the first `WARMUP` are not counted. Returns `Timing.row()`."""
    timing = Timing(name)
    sizes = []
    print(f"  {name} ...", file=sys.stderr, flush=True)
    for n, call in enumerate(calls):
        started = time.perf_counter()
        response = call()
        elapsed = time.perf_counter() - started
        if response.status_code not in statuses:
            raise PeerError(f"{name}: HTTP {response.status_code}: {response.text[:300]}")
        if n >= WARMUP:
            timing.record(response, elapsed)
            sizes.append(len(response.content))
    return {**timing.row(), "bytes": statistics.median(sizes)}


def poll(fetch: Callable[[], Any], done: Callable[[Any], bool], *, timeout: float, every: float = 0.1) -> Any:
    """Call `fetch` until `done(result)`; a job that does not end within `timeout` seconds is an error."""
    deadline = time.monotonic() + timeout
    while True:
        result = fetch()
        if done(result):
            return result
        if time.monotonic() > deadline:
            raise PeerError(f"a job did not finish within {timeout:.0f} s: {str(result)[:300]}")
        time.sleep(every)
