"""The render pool: one per process, kept warm between imports, replaced when it breaks."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest
from celery.signals import worker_process_init

from apps.corpus import render_worker, rendering
from apps.corpus.services import render
from apps.corpus.services.render import POOL_MIN_BODIES, BodyRenderer, shared_pool

from . import render_probe

JOBS = [
    (f"Body **{n}**\n\n```python\nx = {n}\n```", "markdown", f"https://example.org/{n}", [])
    for n in range(240)
]
assert len(JOBS) >= POOL_MIN_BODIES


@pytest.fixture(autouse=True)
def fresh_pools() -> Iterator[None]:
    """Each test starts without a pool and leaves none behind (the pool outlives its renderers)."""
    for pool in list(render._pools.values()):
        render.discard_pool(pool)
    yield
    for pool in list(render._pools.values()):
        render.discard_pool(pool)


def expected() -> list[str]:
    return rendering.render_many(JOBS)


def worker_pids() -> set[int]:
    return {pid for pool in render._pools.values() for pid in pool._processes}


def test_two_imports_render_in_the_same_warm_workers() -> None:
    with BodyRenderer(processes=2) as first:
        assert first.render(JOBS) == expected()
    workers = worker_pids()
    assert len(workers) == 2  # spawned by the first batch, still running after its renderer closed

    with BodyRenderer(processes=2) as second:
        assert second.render(JOBS) == expected()
    assert worker_pids() == workers


def test_a_small_batch_is_rendered_in_the_process_without_starting_a_pool() -> None:
    with BodyRenderer(processes=2) as renderer:
        assert renderer.render(JOBS[:10]) == rendering.render_many(JOBS[:10])
    assert render._pools == {}


def test_a_pool_whose_worker_died_is_replaced_and_no_body_is_lost() -> None:
    with BodyRenderer(processes=2) as renderer:
        renderer.render(JOBS)
    broken, killed = shared_pool(2), worker_pids()
    for pid in killed:
        os.kill(pid, signal.SIGKILL)

    with BodyRenderer(processes=2) as renderer:
        assert renderer.render(JOBS) == expected()  # rendered here, the pool given up
    assert broken not in render._pools.values()

    with BodyRenderer(processes=2) as renderer:
        assert renderer.render(JOBS) == expected()
    assert shared_pool(2) is not broken
    assert worker_pids() and worker_pids().isdisjoint(killed)


def test_closing_a_renderer_cancels_its_waiting_work_and_leaves_the_pool_to_the_next() -> None:
    renderer = BodyRenderer(processes=2)
    renderer.submit(JOBS * 4)  # 10 chunks: at most 3 handed to the two processes, the rest waiting
    sent = set(renderer._pending)

    renderer.close()  # an import that failed: nobody waits for this batch

    assert any(future.cancelled() for future in sent)
    assert renderer._pending == set()

    with BodyRenderer(processes=2) as next_one:
        assert next_one.render(JOBS) == expected()


def test_a_worker_process_starts_its_render_pool_warm(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "cpu_count", lambda: 2)

    worker_process_init.send(sender="celery@test")

    assert set(render._pools) == {2}
    assert len(worker_pids()) == 2
    pool = shared_pool(2)
    for _ in range(4):  # whichever process answers has loaded the warm-up's lexers before its first task
        assert pool.submit(render_probe.lexers_loaded).result() >= len(rendering.WARM_UP_LANGUAGES)
    with BodyRenderer() as renderer:
        assert renderer.render(JOBS) == expected()


def test_a_single_cpu_worker_starts_no_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "cpu_count", lambda: 1)

    worker_process_init.send(sender="celery@test")

    assert render._pools == {}


def test_warming_up_loads_the_lexer_of_every_warm_up_language() -> None:
    rendering._lexer.cache_clear()

    rendering.warm_up()

    assert rendering._lexer.cache_info().currsize == len(rendering.WARM_UP_LANGUAGES)
    assert all(rendering._lexer(language) is not None for language in rendering.WARM_UP_LANGUAGES)


KILLED_PARENT = """
import os, signal, django
django.setup()
from apps.corpus.services.render import shared_pool
pool = shared_pool(2)
pool.submit(os.getpid).result()
print(" ".join(str(pid) for pid in pool._processes), flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


def running(pid: int) -> bool:
    """Whether `pid` runs (a zombie whose parent has not reaped it yet has ended)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads process states from /proc")
def test_render_processes_exit_when_the_process_that_started_them_is_killed() -> None:
    """A SIGKILLed worker cannot shut its pool down: its render processes must not live on as orphans."""
    child = subprocess.run(
        [sys.executable, "-c", KILLED_PARENT], capture_output=True, text=True, timeout=30, check=False
    )
    assert child.returncode == -signal.SIGKILL, child.stderr
    orphans = [int(pid) for pid in child.stdout.split()]  # (run waits for them too: they share its stdout)
    assert orphans

    deadline = time.monotonic() + 10 * render_worker.WATCH_SECONDS
    while any(running(pid) for pid in orphans) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(running(pid) for pid in orphans)
