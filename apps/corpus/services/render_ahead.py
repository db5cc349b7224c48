"""The upsert's rendering: the HTML of records about to be written, started in the pool ahead of the
writer (`upsert.py` says when). Split from upsert.py by concern."""

from __future__ import annotations

from collections.abc import Callable

from django.db import connection

from ..models import Item
from ..records import ItemRecord
from ..rendering import RenderJob
from . import pg
from .render import BodyRenderer

Rendered = pg.Rendered
Batch = dict[str, tuple[ItemRecord, str]]


def is_bare(record: ItemRecord) -> bool:
    """A record that carries only its URL (a line of a URL list, to be hydrated later).

    It creates the item when the URL is new, but never overwrites an item that already has content.
    """
    return not (record.title or record.body or record.tags or record.metadata or record.comments)


def render_records(records: list[ItemRecord], renderer: BodyRenderer | None) -> Rendered:
    """The HTML of each record's body and comments (an empty mapping without a renderer)."""
    return submit_render(records, renderer)() if records else {}


def submit_render(records: list[ItemRecord], renderer: BodyRenderer | None) -> Callable[[], Rendered]:
    if renderer is None:
        return dict
    jobs: list[RenderJob] = []
    for record in records:
        jobs.append((record.body, record.body_format, record.url, record.tags))
        jobs.extend((c.body, c.body_format, record.url, record.tags) for c in record.comments)
    wait = renderer.submit(jobs)

    def result() -> Rendered:
        done = iter(wait())
        return {record.url: (next(done), [next(done) for _ in record.comments]) for record in records}

    return result


def render_ahead(
    study_id: int, batch: Batch, renderer: BodyRenderer | None, guess: bool
) -> Callable[[], Rendered] | None:
    """Start rendering the records of `batch` that will be written: all of them, or with `guess`
    those that the stored hashes say will be (read on the caller's connection, outside the writer's
    transaction: a guess that `store_batch` corrects)."""
    if renderer is None:
        return None
    if not guess:
        return submit_render([record for record, _ in batch.values()], renderer)
    urls = list(batch)
    if connection.vendor == "postgresql":
        stored = pg.stored_hashes(study_id, urls)
    else:
        stored = dict(Item.objects.filter(study_id=study_id, url__in=urls).values_list("url", "content_hash"))
    expected = [
        record
        for url, (record, digest) in batch.items()
        if url not in stored or (stored[url] != digest and not is_bare(record))
    ]
    return submit_render(expected, renderer) if expected else None
