"""The idempotent upsert of imported records into a study's items.

The canonical URL identifies an item in a study (the unique constraint on ``(study, url)``), so
importing the same records twice, or an import killed half-way and run again, ends with exactly one
row per URL. An import never deletes an item and never writes ``relevance``, ``screened_by`` or
``imported_at``, and labels live in other tables: re-importing never touches a label or a screening
decision.

How a batch is written (one transaction, a constant number of statements, never one per row):

1. read the stored ``(url, content_hash)`` of the batch's URLs;
2. split the batch into new (URL not in the study), changed (hash differs) and unchanged (same hash,
   or a bare URL for an item that already has content): unchanged records are not written at all;
3. SQLite (`sqlite.py`): one ``executemany`` INSERT of the new items, one UPDATE of the changed ones,
   and one SELECT of their ids; PostgreSQL (`pg.py`): a COPY of the new items (ids drawn from the
   sequence first) and one ``INSERT ... ON CONFLICT`` for the changed ones;
4. one DELETE of the changed items' comments and one INSERT (COPY) of the comments.

The new and changed items and their comments are rendered to sanitized HTML before they are written
(`render.BodyRenderer`: a process pool for big batches) and stored with it, in the same statements:
an import ends with every item readable, and no second pass writes the rendered column. Rendering
runs ahead of the writes: when a batch is complete, the records that the stored hashes say will be
written go to the pool, and the batch is handed to the writer only after the next one is complete,
so the pool renders while the caller parses and the writer writes. Whatever the transaction's own
reading finds to write that was not rendered ahead is rendered then.

On PostgreSQL, outside a surrounding transaction, batches are written by a background thread on
its own connection while the caller's thread parses the next batch (psycopg2 releases the GIL
while the server works), and the caller's connection stays free for progress writes. With
``atomic=True`` every batch goes into one transaction: all of the records or none.
"""

from __future__ import annotations

import hashlib
import json
import queue
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import connection, connections, transaction
from django.utils import timezone

from apps.accounts.models import Study
from apps.core.jobs import MAX_ERRORS, JobProgress

from ..models import ImportJob, Item, ItemComment
from ..records import ItemRecord, LinkRecord
from . import pg, sqlite
from .links import store_links
from .render import BodyRenderer
from .render_ahead import is_bare, render_ahead, render_records

BATCH_SIZE = 1000
# The first batches are smaller (250, 500, then BATCH_SIZE): the pool starts rendering and the writer
# writing after 250 records have been read instead of 1,000, while the rest of the machine waited.
FIRST_BATCH_SIZE = 250
# A slow source (GitHub: a request or two per issue) still shows its items within seconds.
MAX_BATCH_SECONDS = 3.0

_URL_MAX = Item._meta.get_field("url").max_length or 500
_TITLE_MAX = Item._meta.get_field("title").max_length or 500
_EXTERNAL_ID_MAX = Item._meta.get_field("external_id").max_length or 200
_SOURCE_MAX = Item._meta.get_field("source").max_length or 32
_COMMENT_ID_MAX = ItemComment._meta.get_field("external_id").max_length or 100
_AUTHOR_MAX = ItemComment._meta.get_field("author").max_length or 150
# Fields an import may change on an existing item; `relevance`, `screened_by` and `imported_at` are not
# among them, so screening decisions and the first import time survive every re-import.
UPDATE_FIELDS = [
    "source",
    "external_id",
    "title",
    "body",
    "body_format",
    "body_html",
    "rendered_at",
    "tags",
    "metadata",
    "raw",
    "content_hash",
    "created_at",
    "updated_at",
]

Batch = dict[str, tuple[ItemRecord, str]]
Rendered = pg.Rendered


@dataclass(slots=True)
class _Work:
    """A batch for the writer, with the HTML being rendered for the records expected to be written."""

    batch: Batch
    ahead: Callable[[], Rendered] | None = None


@dataclass
class ImportCounts:
    """What one upsert did, per item. `filtered_by` counts the screening rule that turned each one away."""

    created: int = 0
    updated: int = 0
    unchanged: int = 0
    filtered: int = 0
    failed: int = 0
    filtered_by: Counter[str] = field(default_factory=Counter)


class UnstorableRecord(ValueError):
    """A record the database cannot hold (a URL over 500 characters); raised in strict mode only."""

    def __init__(self, url: str, problem: str) -> None:
        super().__init__(f"{url[:200]}: {problem}")
        self.url = url
        self.problem = problem


def content_hash(record: ItemRecord) -> str:
    """SHA-256 over everything an import writes except `raw`: title, body, tags, metadata, comments...

    Two records with the same hash would write the same row, so an unchanged re-import writes
    nothing. The parts are hashed as one JSON array (keys sorted), so no two different records give
    the same input. `raw` is left out: it repeats the content in the source's own shape (plus
    volatile counters such as reactions).
    """
    payload = [
        record.source,
        record.external_id,
        record.title,
        record.body,
        record.body_format,
        record.created_at,
        record.tags,
        record.metadata,
        [
            [
                c.external_id,
                c.author,
                c.body,
                c.body_format,
                c.created_at,
                c.is_answer,
                c.is_accepted,
                c.score,
            ]
            for c in record.comments
        ],
    ]
    if record.links is not None:  # left out when not fetched: older items keep their hash
        payload.append([_link_json(link) for link in record.links])
    text = json.dumps(payload, sort_keys=True, default=_isoformat)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _link_json(link: LinkRecord) -> list[Any]:
    return [
        link.kind,
        link.url,
        link.provenance,
        link.title,
        link.state,
        link.body,
        link.found_at,
        link.note,
        link.metadata,
        [change.to_json() for change in link.files],
    ]


def _isoformat(value: Any) -> str:
    return value.isoformat() if isinstance(value, datetime) else str(value)


def stored_raw(record: ItemRecord) -> dict[str, Any]:
    """The `raw` to store: the record's, less a `body` cell that is the item's body itself.

    A file row's raw is the row, whose `body` cell is the item's body: stored once, in `body` (it is
    most of the bytes of a bulk import). API payloads (`{"issue": ...}`, `{"question": ...}`) are
    stored whole.
    """
    raw = record.raw
    if record.body and raw.get("body") == record.body:
        return {key: value for key, value in raw.items() if key != "body"}
    return raw


def unstorable(record: ItemRecord) -> str | None:
    """Why the database cannot hold this record, or None."""
    if len(record.url) > _URL_MAX:
        return f"the URL is longer than {_URL_MAX} characters"
    if len(record.source) > _SOURCE_MAX:
        return f"the source name {record.source[:40]!r} is longer than {_SOURCE_MAX} characters"
    return None


def add_error(job: ImportJob, where: str, field_name: str | None, value: object, message: str) -> None:
    """Keep one row-level error on the job (the first MAX_ERRORS only; `failed` counts them all)."""
    if len(job.errors) >= MAX_ERRORS:
        return
    shown = None if value is None else str(value)[:200]
    job.errors.append({"where": where, "field": field_name, "value": shown, "message": message})


def upsert_records(
    study: Study,
    records: Iterable[ItemRecord],
    job: ImportJob | None = None,
    *,
    rules: Any = None,
    progress: JobProgress | None = None,
    replace_comments: bool = True,
    batch_size: int = BATCH_SIZE,
    max_batch_seconds: float = MAX_BATCH_SECONDS,
    atomic: bool = False,
    background: bool | None = None,
    render: bool = True,
) -> ImportCounts:
    """Create or update the study's items from `records`; return the counts.

    - A record whose canonical URL is new creates an item; one whose content hash differs from the
      stored one updates the item's content fields, resets its rendering and replaces its comments
      (unless `replace_comments` is False, for imports that did not fetch comments); one with the
      same hash, or a bare URL (:func:`is_bare`) for an existing item, changes nothing.
    - `rules` (a ScreeningRules) screen each record first; a rejected record is counted in
      `filtered` and `filtered_by[rule]` and not written.
    - A record the database cannot hold is counted in `failed` (with an error on the job), or, with
      `atomic=True`, raises :class:`UnstorableRecord`.
    - Records are written in batches of `batch_size` (or whatever arrived in `max_batch_seconds`;
      the first ones smaller, from `FIRST_BATCH_SIZE` doubling up), each in one transaction; with
      `atomic=True`, all batches in one transaction, so an exception from `records` (a bad row, a
      crash) leaves nothing written. Otherwise a crash loses at most the batches in flight (two: one
      being read, one rendering), and running the same records again completes the work exactly.
    - `job`'s counters grow as batches are written; `progress` (the job's reporter) advances per
      record read. Two records with the same URL in one batch: the later one wins.
    - `background`: write on a thread of its own (default: on PostgreSQL when no transaction is open).
    - `render`: store the items rendered (the default); False stores them with `rendered_at` empty,
      for the render pass (`render_pending`) to render later.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    counts = ImportCounts()
    if background is None:
        background = connection.vendor == "postgresql" and not connection.in_atomic_block
    renderer = BodyRenderer() if render else None
    # Into a study empty at the start every record is new (or repeats one of this import, rendered
    # twice at worst): no need to ask what is stored. Asking would also be slow on PostgreSQL: the
    # writer's transaction holds the rows and the planner statistics of its own ANALYZEs, which this
    # connection does not see, so it plans for an empty study that its index scans find full.
    guess = render and Item.objects.filter(study_id=study.pk).exists()
    writer: _Writer = (
        _ThreadWriter(study.pk, counts, job, replace_comments, atomic, renderer)
        if background
        else _InlineWriter(study.pk, counts, job, replace_comments, atomic, renderer)
    )
    if progress is not None and isinstance(writer, _ThreadWriter):
        # Waiting for the writer (another import into the study holds its lock) is not dying.
        writer.on_wait = progress.save
    try:
        batch: Batch = {}
        waiting: _Work | None = None  # the previous batch, rendering while this one is read
        started = time.monotonic()
        limit = min(batch_size, FIRST_BATCH_SIZE)
        try:
            for record in records:
                if progress is not None:
                    progress.advance()
                rule = rules.screen(record) if rules is not None else None
                if rule is not None:
                    counts.filtered += 1
                    counts.filtered_by[rule] += 1
                    if job is not None:
                        job.filtered += 1
                        job.filtered_by[rule] = job.filtered_by.get(rule, 0) + 1
                    continue
                problem = unstorable(record)
                if problem is not None:
                    if atomic:
                        raise UnstorableRecord(record.url, problem)
                    counts.failed += 1
                    if job is not None:
                        job.failed += 1
                        add_error(job, record.url[:200], "url", record.url[:200], problem)
                    continue
                batch.pop(record.url, None)
                batch[record.url] = (record, content_hash(record))
                if len(batch) >= limit or time.monotonic() - started >= max_batch_seconds:
                    work = _Work(batch, render_ahead(study.pk, batch, renderer, guess))
                    if waiting is not None:
                        writer.write(waiting)
                    waiting, batch = work, {}
                    started = time.monotonic()
                    limit = min(batch_size, limit * 2)
            if waiting is not None:
                writer.write(waiting)
            if batch:
                writer.write(_Work(batch))
        except BaseException:
            if waiting is not None and not atomic:  # a complete batch: kept, as it was before the lag
                writer.write(waiting)
            writer.close(commit=False)
            raise
        writer.close(commit=True)
    finally:
        if renderer is not None:
            renderer.close()
    if progress is not None:
        progress.flush()
    return counts


# --- writers ----------------------------------------------------------------------------------------


class _Writer:
    """Writes batches and keeps the counts; `close` commits (atomic mode) or rolls back."""

    def __init__(
        self,
        study_id: int,
        counts: ImportCounts,
        job: ImportJob | None,
        replace_comments: bool,
        atomic: bool,
        renderer: BodyRenderer | None,
    ) -> None:
        self.study_id = study_id
        self.renderer = renderer
        self.counts = counts
        self.job = job
        self.replace_comments = replace_comments
        self.atomic = atomic
        self._growth: pg.GrowthWatch | None = None  # created on the writing thread, with its connection

    def write(self, work: _Work) -> None:
        raise NotImplementedError

    def close(self, commit: bool) -> None:
        raise NotImplementedError

    def _store(self, work: _Work) -> None:
        with transaction.atomic():
            created, updated, unchanged = store_batch(
                self.study_id, work.batch, self.replace_comments, self.renderer, work.ahead
            )
        if created and connection.vendor == "postgresql":
            if self._growth is None:
                # Counted after this batch: its rows are growth, not what the study held. Taken as held,
                # a first import ran its next batches' lookups on an empty study's statistics (0.3-0.6 s
                # each at 10,000 items, scanning the study per URL).
                self._growth = pg.GrowthWatch(self.study_id, written_since=created)
            self._growth.wrote(created)
        if settings.DEBUG and not connection.force_debug_cursor:
            # DEBUG keeps every statement with its values: a 100,000-item import would keep gigabytes.
            connection.queries_log.clear()
        self.counts.created += created
        self.counts.updated += updated
        self.counts.unchanged += unchanged
        if self.job is not None:
            self.job.created += created
            self.job.updated += updated
            self.job.unchanged += unchanged


class _InlineWriter(_Writer):
    """Writes on the caller's thread and connection (SQLite, or inside a surrounding transaction)."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self._outer = transaction.atomic() if self.atomic else None
        if self._outer is not None:
            self._outer.__enter__()

    def write(self, work: _Work) -> None:
        self._store(work)

    def close(self, commit: bool) -> None:
        if self._outer is not None:
            outer, self._outer = self._outer, None
            if commit:
                outer.__exit__(None, None, None)
            else:
                rollback = _Rollback()
                outer.__exit__(type(rollback), rollback, None)


class _Rollback(Exception):
    pass


_STOP = object()


class _ThreadWriter(_Writer):
    """Writes on a thread with its own connection while the caller parses the next batch.

    At most two batches wait in the queue, so memory stays bounded by the batch size. An error on
    the thread is raised again on the caller's next `write` or at `close`.
    """

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=2)
        self._error: BaseException | None = None
        self._commit = False
        self.on_wait: Callable[[], None] | None = None  # called every half second the queue stays full
        self._thread = threading.Thread(target=self._run, name="corpus-upsert", daemon=True)
        self._thread.start()

    def write(self, work: _Work) -> None:
        self._raise_pending()
        while True:
            try:
                self._queue.put(work, timeout=0.5)
                return
            except queue.Full:
                self._raise_pending()
                if self.on_wait is not None:
                    self.on_wait()

    def close(self, commit: bool) -> None:
        self._commit = commit
        if self._thread.is_alive():
            self._put_stop()
            self._thread.join()
        if commit:
            self._raise_pending()

    def _put_stop(self) -> None:
        while self._thread.is_alive():
            try:
                self._queue.put(_STOP, timeout=0.5)
                return
            except queue.Full:
                continue

    def _raise_pending(self) -> None:
        if self._error is not None:
            error, self._error = self._error, None
            raise error

    def _run(self) -> None:
        try:
            if connection.vendor == "postgresql":
                pg.prefer_fast_compression()
            if self.atomic:
                with transaction.atomic():
                    self._drain()
                    if not self._commit:
                        raise _Rollback
            else:
                self._drain()
        except _Rollback:
            pass
        except BaseException as exc:
            self._error = exc
            self._discard()
        finally:
            connections.close_all()  # this thread's connections only

    def _drain(self) -> None:
        while True:
            item = self._queue.get()
            if item is _STOP:
                return
            self._store(item)

    def _discard(self) -> None:
        """After an error, keep taking batches until the caller stops, so it never blocks."""
        while True:
            try:
                if self._queue.get(timeout=5) is _STOP:
                    return
            except queue.Empty:
                return


# --- one batch ------------------------------------------------------------------------------------


def store_batch(
    study_id: int,
    batch: Batch,
    replace_comments: bool,
    renderer: BodyRenderer | None = None,
    ahead: Callable[[], Rendered] | None = None,
) -> tuple[int, int, int]:
    """Write one batch in the current transaction; return (created, updated, unchanged).

    With a `renderer`, the items written and their comments are stored rendered (`rendered_at` set):
    with the HTML `ahead` gives for the records it covers (rendered from the same record objects),
    rendered now for the others; without one, with `rendered_at` empty, for the render pass.

    Two imports into one study take turns, batch by batch: on PostgreSQL the study's import lock
    (`pg.lock_study_for_import`), held to the end of the transaction; on SQLite the write lock that
    every transaction takes at its start (``transaction_mode: IMMEDIATE`` in settings). The read of the
    stored hashes therefore sees the other import's committed batches, and each item is counted once.
    """
    postgres = connection.vendor == "postgresql"
    urls = list(batch)
    if postgres:
        pg.lock_study_for_import(study_id)
        stored = pg.stored_hashes(study_id, urls)
    else:
        stored = dict(Item.objects.filter(study_id=study_id, url__in=urls).values_list("url", "content_hash"))
    new: list[tuple[ItemRecord, str]] = []
    changed: list[tuple[ItemRecord, str]] = []
    unchanged = 0
    for url, (record, digest) in batch.items():
        old = stored.get(url)
        if old is None:
            new.append((record, digest))
        elif old == digest or is_bare(record):
            unchanged += 1
        else:
            changed.append((record, digest))
    if not (new or changed):
        return 0, 0, unchanged
    now = timezone.now()
    html = ahead() if ahead is not None and renderer is not None else {}
    html.update(render_records([r for r, _ in (*new, *changed) if r.url not in html], renderer))
    rendered_at = now if renderer is not None else None
    ids: dict[str, int] = {}
    if postgres:
        copied = pg.copy_new_items(study_id, new, now, stored_raw, html, rendered_at) if new else {}
        to_upsert = changed if copied is not None else [*new, *changed]
        ids.update(copied or {})
        if to_upsert:
            ids.update(
                pg.upsert_items(study_id, to_upsert, now, UPDATE_FIELDS, stored_raw, html, rendered_at)
            )
    else:
        ids = sqlite.write_items(study_id, new, changed, now, UPDATE_FIELDS, stored_raw, html, rendered_at)
    changed_urls = {record.url for record, _ in changed}
    if changed and replace_comments:
        ItemComment.objects.filter(item_id__in=[ids[url] for url in changed_urls]).delete()
    comments = [
        (ids[record.url], record)
        for record, _ in (*new, *changed)
        if record.comments and (replace_comments or record.url not in changed_urls)
    ]
    if comments:
        if postgres:
            pg.copy_comments(comments, html)
        else:
            ItemComment.objects.bulk_create(
                [row for item_id, record in comments for row in _comment_rows(item_id, record, html)]
            )
    linked = {ids[record.url]: record.links for record, _ in (*new, *changed) if record.links is not None}
    if linked:
        store_links(linked, now)
    return len(new), len(changed), unchanged


def _comment_rows(item_id: int, record: ItemRecord, html: Rendered) -> list[ItemComment]:
    comments_html = html[record.url][1] if html else [""] * len(record.comments)
    return [
        ItemComment(
            item_id=item_id,
            position=position,
            external_id=comment.external_id[:_COMMENT_ID_MAX],
            author=comment.author[:_AUTHOR_MAX],
            body=comment.body,
            body_format=comment.body_format,
            body_html=comment_html,
            is_answer=comment.is_answer,
            is_accepted=comment.is_accepted,
            score=comment.score,
            created_at=comment.created_at,
        )
        for position, (comment, comment_html) in enumerate(
            zip(record.comments, comments_html, strict=True), start=1
        )
    ]
