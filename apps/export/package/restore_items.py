"""Writing a checked package's items into the new study (inside `restore.import_study`'s transaction).

One pass over items.jsonl writes each item once, whole: its content as the item import stores it
(`corpus.services.upsert`: truncated title and external id, `raw` less a body cell, content hash), its
body and comments rendered through the sanitizer (`corpus.services.render_body`, as the render pass
would: the package's own HTML is never read), and its screening (relevance, reason, screener). The
rows go in by COPY on PostgreSQL (`bulk`), a batch at a time, so memory stays bounded by the batch.
"""

from __future__ import annotations

import zipfile
from collections.abc import Iterator, Mapping
from itertools import islice

from django.utils import timezone

from apps.accounts.models import Study, User
from apps.core.bulk import insert_rows, postgres
from apps.corpus.models import Item, ItemComment
from apps.corpus.records import ItemRecord
from apps.corpus.services import content_hash, render_body
from apps.corpus.services.upsert import stored_raw

from .reading import item_records

ITEM_BATCH = 1000
_EXTERNAL_ID_MAX = Item._meta.get_field("external_id").max_length or 200
_TITLE_MAX = Item._meta.get_field("title").max_length or 500
_COMMENT_ID_MAX = ItemComment._meta.get_field("external_id").max_length or 100
_AUTHOR_MAX = ItemComment._meta.get_field("author").max_length or 150

Screening = tuple[str, str, str]
Entry = tuple[ItemRecord, Screening]
Text = tuple[str, str, str, list[str]]
"""What `render_body` renders: body, body format, the item's URL and tags."""


def write_items(
    study: Study, archive: zipfile.ZipFile, users: Mapping[str, User], item_ids: dict[str, int]
) -> int:
    """Write every item of the package with its comments, setting `item_ids[url]` to each one's id (the
    checks' dict of URLs is reused, so a large package holds its URLs once); return how many."""
    written = 0
    records = item_records(archive)
    while batch := list(islice(records, ITEM_BATCH)):
        written += _write_batch(study, batch, users, item_ids)
    return written


def _stored(text: str) -> str:
    """The text as the database keeps it (PostgreSQL cannot hold NUL: the item import writes U+FFFD),
    which is what the render pass would read back and render."""
    return text.replace("\x00", "\ufffd") if "\x00" in text and postgres() else text


def _texts(batch: list[Entry]) -> list[Text]:
    """The bodies to render: every item's, then every comment's, in order."""
    texts: list[Text] = [
        (_stored(record.body), record.body_format, record.url, record.tags) for record, _ in batch
    ]
    texts.extend(
        (_stored(comment.body), comment.body_format, record.url, record.tags)
        for record, _ in batch
        for comment in record.comments
    )
    return texts


def _write_batch(
    study: Study,
    batch: list[Entry],
    users: Mapping[str, User],
    item_ids: dict[str, int],
) -> int:
    html = [render_body(*text) for text in _texts(batch)]
    items_html, comments_html = html[: len(batch)], iter(html[len(batch) :])  # as `_texts` lists them
    now = timezone.now()
    ids = insert_rows(
        Item,
        (
            {
                "study_id": study.pk,
                "url": record.url,
                "source": record.source,
                "external_id": record.external_id[:_EXTERNAL_ID_MAX],
                "title": record.title[:_TITLE_MAX],
                "body": record.body,
                "body_format": record.body_format,
                "body_html": body_html,
                "rendered_at": now,
                "tags": record.tags,
                "metadata": record.metadata,
                "raw": stored_raw(record),
                "content_hash": content_hash(record),
                "created_at": record.created_at,
                "imported_at": now,
                "updated_at": now,
                "relevance": relevance,
                "relevance_reason": reason,
                "screened_by_id": _user_id(users, screener),
            }
            for (record, (relevance, reason, screener)), body_html in zip(batch, items_html, strict=True)
        ),
        returning=True,
        batch_size=len(batch),
    )
    insert_rows(
        ItemComment, _comment_rows(zip(ids, (record for record, _ in batch), strict=True), comments_html)
    )
    for item_id, (record, _) in zip(ids, batch, strict=True):
        item_ids[record.url] = item_id
    return len(ids)


def _user_id(users: Mapping[str, User], name: str) -> int | None:
    user = users.get(name) if name else None
    return user.pk if user is not None else None


def _comment_rows(
    items: Iterator[tuple[int, ItemRecord]], html: Iterator[str]
) -> Iterator[dict[str, object]]:
    for item_id, record in items:
        for position, comment in enumerate(record.comments, start=1):
            yield {
                "item_id": item_id,
                "position": position,
                "external_id": comment.external_id[:_COMMENT_ID_MAX],
                "author": comment.author[:_AUTHOR_MAX],
                "body": comment.body,
                "body_format": comment.body_format,
                "body_html": next(html),
                "is_answer": comment.is_answer,
                "is_accepted": comment.is_accepted,
                "score": comment.score,
                "created_at": comment.created_at,
            }
