"""The render pool: one per process, kept warm between imports, replaced when it breaks."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator

import pytest
from celery.signals import worker_process_init

from apps.corpus import rendering
from apps.corpus.services import render
from apps.corpus.services.render import POOL_MIN_BODIES, BodyRenderer, shared_pool

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


def test_closing_a_renderer_forgets_its_work_and_leaves_the_pool_to_the_next() -> None:
    renderer = BodyRenderer(processes=2)
    wait = renderer.submit(JOBS * 4)
    renderer.close()  # an import that failed: nobody waits for this batch
    assert renderer._pending == set()
    del wait

    with BodyRenderer(processes=2) as next_one:
        assert next_one.render(JOBS) == expected()


def test_a_worker_process_starts_its_render_pool_warm(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "cpu_count", lambda: 2)

    worker_process_init.send(sender="celery@test")

    assert set(render._pools) == {2}
    assert len(worker_pids()) == 2
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
