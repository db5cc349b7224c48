"""Untrusted bodies (Markdown, HTML, text) to sanitized HTML: at import, and the render pass.

The upsert renders the bodies it writes (:class:`BodyRenderer`, in a process pool for big batches)
and stores them rendered, in the same statement as the text. Items stored without HTML (an upsert
told not to render, a body format changed by hand) are rendered by :func:`render_pending` (the
`render_items` command), and a page that meets such an item renders it on the spot
(:func:`ensure_rendered`).
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from django.db import transaction
from django.db.models import Case, DateTimeField, F, Q, TextField, Value, When
from django.utils import timezone

from apps.accounts.models import Study
from apps.core.jobs import JobProgress

from .. import render_worker, rendering
from ..models import Item, ItemComment

logger = logging.getLogger(__name__)

RENDER_BATCH_SIZE = 250
# Below this many bodies a batch is rendered in this process: shipping it to a pool would cost more.
POOL_MIN_BODIES = 200
# Bodies per task sent to a worker: big enough that pickling is noise, small enough to share the work.
POOL_CHUNK = 100


def render_body(body: str, body_format: str, url: str = "", tags: list[str] | None = None) -> str:
    """Sanitized HTML for an untrusted body of the item at `url` (relative links resolve against it;
    its tags choose the default code language). See rendering.py for what survives."""
    return rendering.render_job((body, body_format, url, tags or []))


class BodyRenderer:
    """Renders batches of bodies; a batch of `POOL_MIN_BODIES` or more in a pool of worker processes.

    The pool is the process's own (:func:`shared_pool`), shared by every renderer and kept warm between
    imports; :meth:`close` cancels this renderer's work that has not started and leaves the pool running.
    Its workers are *spawned* (a fresh interpreter that imports only the pure `rendering` module): the
    importing process has threads (the upsert's writer) and database connections, which a forked child
    must not inherit. Where a pool cannot start (a single CPU, a daemonic worker process that may not have
    children), every batch is rendered here.
    """

    def __init__(self, processes: int | None = None) -> None:
        self.processes = processes if processes is not None else (os.cpu_count() or 1)
        self._pool_failed = self.processes < 2
        self._pending: set[Future[list[str]]] = set()  # sent by one thread, waited for by another
        self._pending_lock = threading.Lock()

    def render(self, jobs: Sequence[rendering.RenderJob]) -> list[str]:
        """The HTML of each job, in order."""
        return self.submit(jobs)()

    def submit(self, jobs: Sequence[rendering.RenderJob]) -> Callable[[], list[str]]:
        """Start rendering `jobs` in the pool (a big batch) and return the call that waits for their
        HTML; a small batch is rendered by that call, in the process (and thread) that makes it."""
        pool = self._pool_for(len(jobs))
        if pool is None:
            return lambda: rendering.render_many(jobs)
        chunks = [jobs[start : start + POOL_CHUNK] for start in range(0, len(jobs), POOL_CHUNK)]
        try:
            futures = [pool.submit(rendering.render_many, chunk) for chunk in chunks]
        except (AssertionError, OSError, RuntimeError, BrokenProcessPool) as exc:
            self._give_up(pool, exc)  # AssertionError: a daemonic process, which may not have children
            return lambda: rendering.render_many(jobs)
        with self._pending_lock:
            self._pending.update(futures)

        def wait() -> list[str]:
            try:
                return [html for future in futures for html in future.result()]
            except BrokenProcessPool as exc:  # a worker died (killed, out of memory)
                self._give_up(pool, exc)
                return rendering.render_many(jobs)
            finally:
                with self._pending_lock:  # a done future holds its HTML: let it go
                    self._pending.difference_update(futures)

        return wait

    def _give_up(self, pool: ProcessPoolExecutor, exc: BaseException) -> None:
        logger.warning("rendering in this process: the worker pool failed (%r)", exc)
        self._pool_failed = True
        discard_pool(pool)

    def _pool_for(self, size: int) -> ProcessPoolExecutor | None:
        if size < POOL_MIN_BODIES or self._pool_failed:
            return None
        return shared_pool(self.processes)

    def close(self) -> None:
        """Cancel what this renderer sent to the pool and nobody waited for (an import that failed)."""
        with self._pending_lock:
            pending, self._pending = self._pending, set()
        for future in pending:
            future.cancel()

    def __enter__(self) -> BodyRenderer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# The render pools of this process, by size: started by the first big batch (or by `start_render_pool` when
# a Celery worker starts) and kept until the process exits. Spawning a worker and its first bodies (cmark-gfm,
# nh3 and a lexer's states made on first use) cost 0.6-1 s of each worker's time, which every import of a
# few thousand items used to pay again.
_pools: dict[int, ProcessPoolExecutor] = {}
_pools_lock = threading.Lock()


def shared_pool(processes: int) -> ProcessPoolExecutor:
    """This process's pool of `processes` spawned render workers, started on first use."""
    with _pools_lock:
        pool = _pools.get(processes)
        if pool is None:
            context = multiprocessing.get_context("spawn")
            pool = _pools[processes] = ProcessPoolExecutor(
                processes, mp_context=context, initializer=render_worker.start, initargs=(os.getpid(),)
            )
        return pool


def discard_pool(pool: ProcessPoolExecutor) -> None:
    """Stop a pool that failed and forget it: the next big batch starts a new one."""
    with _pools_lock:
        for processes, known in list(_pools.items()):
            if known is pool:
                del _pools[processes]
    pool.shutdown(wait=False, cancel_futures=True)


def start_render_pool(**_signal: object) -> None:
    """Celery's ``worker_process_init`` (sent in the process that runs the tasks, whatever the worker's pool):
    start the render pool's processes, each warming up as it starts (`render_worker.start`), so that the
    first import does not wait for them. Never stops the worker: a pool that cannot start is logged, and
    imports render in the process, as they would anyway."""
    processes = os.cpu_count() or 1
    if processes < 2:
        return
    try:
        pool = shared_pool(processes)
        for _ in range(processes):  # a pool spawns a process per task sent while none is idle
            pool.submit(os.getpid)
    except (AssertionError, OSError, RuntimeError, BrokenProcessPool) as exc:
        logger.warning(
            "the render pool did not start with the worker (%r); imports render in the process", exc
        )


def render_pending(
    study: Study,
    progress: JobProgress | None = None,
    *,
    batch_size: int = RENDER_BATCH_SIZE,
    echo: Callable[[str], None] | None = None,
) -> int:
    """Render every item of the study whose `rendered_at` is empty, with its comments; return how many.

    Each batch writes with one UPDATE whose CASE matches an item only if its `content_hash` is still
    the one that was rendered, so an import that changes an item meanwhile leaves it unrendered (and
    the next pass renders the new text) instead of being overwritten with stale HTML. Progress goes
    to the job's `progress` (a phase of an import) or, without a job, to `echo` once per batch.
    """
    pending = Item.objects.in_study(study).unrendered()
    total = pending.count()
    if not total:  # the usual case after an import, whose upsert rendered what it wrote
        return 0
    if progress is not None:
        progress.job.progress_done = 0
        progress.set_total(total)
    rendered = 0
    last_id = 0
    while True:
        items = list(
            pending.filter(id__gt=last_id)
            .order_by("id")
            .only("id", "url", "tags", "body", "body_format", "content_hash")[:batch_size]
        )
        if not items:
            break
        last_id = items[-1].id
        _render_batch(items)
        rendered += len(items)
        if progress is not None:
            progress.advance(len(items))
        elif echo is not None:
            echo(f"[{rendered}/{total}] rendering")
    return rendered


def _render_batch(items: list[Item]) -> None:
    now = timezone.now()
    by_id = {item.id: item for item in items}
    comments = list(
        ItemComment.objects.filter(item_id__in=list(by_id)).only("id", "item_id", "body", "body_format")
    )
    for comment in comments:
        owner = by_id[comment.item_id]
        comment.body_html = render_body(comment.body, comment.body_format, owner.url, owner.tags)
    html_cases = [
        When(
            pk=item.id,
            content_hash=item.content_hash,
            then=Value(render_body(item.body, item.body_format, item.url, item.tags)),
        )
        for item in items
    ]
    fresh = Q()
    for item in items:
        fresh |= Q(pk=item.id, content_hash=item.content_hash)
    with transaction.atomic():
        Item.objects.filter(pk__in=[item.id for item in items]).update(
            body_html=Case(*html_cases, default=F("body_html"), output_field=TextField()),
            rendered_at=Case(
                When(fresh, then=Value(now)), default=F("rendered_at"), output_field=DateTimeField()
            ),
        )
        if comments:
            ItemComment.objects.bulk_update(comments, ["body_html"], batch_size=500)


def ensure_rendered(item: Item) -> Item:
    """Render one item (and its comments) now if the render pass has not reached it yet."""
    if item.rendered_at is None:
        _render_batch([item])
        item.refresh_from_db(fields=["body_html", "rendered_at"])
    return item
