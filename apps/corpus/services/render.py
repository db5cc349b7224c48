"""The render pass: untrusted bodies (Markdown, HTML, text) to sanitized HTML, in batches.

The upsert stores raw text with `rendered_at` empty; :func:`render_pending` renders those items and
their comments after an import (a phase of the same job), and a page that meets an item the pass has
not reached renders it on the spot (:func:`ensure_rendered`), so every item is readable at once.
"""

from __future__ import annotations

from collections.abc import Callable

from django.db import transaction
from django.db.models import Case, DateTimeField, F, Q, TextField, Value, When
from django.utils import timezone

from apps.accounts.models import Study
from apps.core.jobs import JobProgress

from .. import rendering
from ..models import Item, ItemComment

RENDER_BATCH_SIZE = 250


def render_body(body: str, body_format: str, url: str = "", tags: list[str] | None = None) -> str:
    """Sanitized HTML for an untrusted body of the item at `url` (relative links resolve against it;
    its tags choose the default code language). See rendering.py for what survives."""
    if not body:
        return ""
    fmt = body_format if body_format in ("markdown", "html", "text") else "text"
    return rendering.render_body(body, fmt, **rendering.render_options(url, tags or []))  # type: ignore[arg-type]


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
