"""PostgreSQL statements of the upsert: COPY for new items and comments, one INSERT ... ON CONFLICT for
changed items.

Why not Django's bulk_create here: compiling a thousand rows of a dozen values costs more than the
database's work, and a multi-row VALUES of large texts is slow for the server to parse, where COPY
streams rows through the text format at the speed of the disk. Rows are written exactly as
`bulk_create` would write them: every column the import does not fill gets its model default, so a
column added later keeps working.

New items (URLs not yet in the study, as read in the same transaction) get their ids from the
table's sequence first, so their comments can be copied in the same round. If another import created
one of those URLs meanwhile, the COPY fails on the unique constraint inside a savepoint and the batch
falls back to INSERT ... ON CONFLICT.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

from django.db import IntegrityError, connection, transaction
from django.db.models import Field, Model

from apps.core.bulk import copy_escape

from ..models import Item, ItemComment
from ..records import ItemRecord

Row = tuple[ItemRecord, str]
# url -> (the item's HTML, its comments' HTML in thread order), as the upsert renders them.
Rendered = dict[str, tuple[str, list[str]]]

_EXTERNAL_ID_MAX = Item._meta.get_field("external_id").max_length or 200
_TITLE_MAX = Item._meta.get_field("title").max_length or 500
_COMMENT_ID_MAX = ItemComment._meta.get_field("external_id").max_length or 100
_AUTHOR_MAX = ItemComment._meta.get_field("author").max_length or 150


# The first key of the advisory locks an import takes on a study (the second is the study's id); any
# constant no other lock of the project uses.
_STUDY_IMPORT_LOCK = 0x7461_7831  # "tax1"


def lock_study_for_import(study_id: int) -> None:
    """Wait for, then hold until the transaction ends, the study's import lock.

    Two imports into one study write one batch (one file import: the whole file) at a time, so each
    batch reads the stored items after the other's committed and its counts are its own: the jobs'
    created/updated/unchanged add up to what was written. The lock names no table (an advisory lock).
    """
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [_STUDY_IMPORT_LOCK, study_id])


def prefer_fast_compression() -> None:
    """lz4 TOAST compression for the bodies this session writes (PostgreSQL 14+), when available.

    pglz, the default, costs about a third of the server's time in a bulk import; reading is
    transparent whichever compressed a value.
    """
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SET default_toast_compression = 'lz4'")
    except Exception:  # a server built without lz4 keeps pglz
        return


def stored_hashes(study_id: int, urls: list[str]) -> dict[str, str]:
    """The stored hash of each of `urls` already an item of the study.

    One probe of the (study, url) unique index per URL, whatever the planner's statistics say: with
    `url = ANY(...)` and statistics taken while the study was small (the usual case during its first
    big import), PostgreSQL scans all of the study's items for every batch instead.
    """
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT i.url, i.content_hash FROM unnest(%s::text[]) AS wanted(url) CROSS JOIN LATERAL ("
            f"SELECT url, content_hash FROM {_table(Item)} WHERE study_id = %s AND url = wanted.url LIMIT 1"
            ") i",
            [urls, study_id],
        )
        return dict(cursor.fetchall())


def refresh_statistics(columns_only: bool = False) -> None:
    """ANALYZE the item tables so the planner knows their size: after a bulk import (the render pass
    and the item list then use their indexes), and during one (see :class:`GrowthWatch`).
    Autovacuum would do it, but only later. `columns_only`: just the columns the upsert looks up by."""
    items, comments = _table(Item), _table(ItemComment)
    with connection.cursor() as cursor:
        if columns_only:
            cursor.execute(f"ANALYZE {items} (study_id, url), {comments} (item_id)")
        else:
            cursor.execute(f"ANALYZE {items}, {comments}")


class GrowthWatch:
    """Refreshes the planner statistics each time a bulk import has multiplied the study's size.

    A first import into a study runs with statistics that say it has no rows: PostgreSQL then looks
    stored hashes up through another index that starts with `study_id` (the item list's
    `item_study_keyset`, the smallest) and filters every item of the study, per URL, and the import
    turns quadratic. ANALYZE counts the rows the import's own transaction has inserted, so refreshing
    whenever the rows written reach 250 or three times what the study held keeps every lookup on the
    (study, url) index at the cost of a few ANALYZEs (each samples at most 30,000 rows). The study's own
    size is what counts: a table already holding other studies' items says nothing about this one.
    """

    FACTOR = 4
    FIRST = 250.0  # the upsert's first batch (`upsert.FIRST_BATCH_SIZE`)

    def __init__(self, study_id: int, written_since: int = 0) -> None:
        """`written_since`: rows of this import already in the study, counted as written, not as known."""
        held = Item.objects.filter(study_id=study_id).count()  # once an import: the ORM
        self.known = float(held - written_since)
        self.written = 0

    def wrote(self, rows: int) -> None:
        self.written += rows
        if self.written >= max(self.FIRST, self.known * (self.FACTOR - 1)):
            refresh_statistics(columns_only=True)
            self.known += self.written
            self.written = 0


# --- text format -------------------------------------------------------------------------------------


def _json_text(value: Any) -> str:
    text = json.dumps(value, default=str)  # ASCII escapes; jsonb decodes them
    if "\\u0000" in text:
        text = text.replace("\\u0000", "\\ufffd")
    return copy_escape(text)


def _copy_text(value: Any) -> str:
    """Any default value in COPY's text format."""
    if value is None:
        return "\\N"
    if isinstance(value, bool):
        return "t" if value else "f"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, dict | list):
        return _json_text(value)
    return copy_escape(str(value))


def _time(value: datetime | None) -> str:
    return "\\N" if value is None else value.isoformat()


def _table(model: type[Model]) -> str:
    return connection.ops.quote_name(model._meta.db_table)


def _fields(model: type[Model]) -> list[Field[Any, Any]]:
    return [f for f in model._meta.concrete_fields if isinstance(f, Field)]


def _copy(model: type[Model], columns: list[str], fixed: dict[str, Any], lines: Iterable[str]) -> None:
    """COPY rows into `model`'s table: each line holds `columns` (attnames), then every other column
    (but the primary key unless named) as its value in `fixed` or its model default."""
    others = [f for f in _fields(model) if f.attname not in columns and not f.primary_key]
    names = [*columns, *(f.attname for f in others)]
    tail = "".join(
        "\t" + _copy_text(fixed[f.attname] if f.attname in fixed else f.get_default()) for f in others
    )
    buffer = io.StringIO()
    for line in lines:
        buffer.write(line)
        buffer.write(tail)
        buffer.write("\n")
    buffer.seek(0)
    by_name = {f.attname: f for f in _fields(model)}
    column_sql = ", ".join(connection.ops.quote_name(str(by_name[name].column)) for name in names)
    with connection.cursor() as cursor, connection.wrap_database_errors:  # Django's IntegrityError & co.
        cursor.cursor.copy_expert(f"COPY {_table(model)} ({column_sql}) FROM STDIN", buffer, size=1 << 20)


# --- items -------------------------------------------------------------------------------------------

_ITEM_COLUMNS = [
    "id", "study_id", "url", "source", "external_id", "title", "body", "body_format", "tags", "metadata",
    "raw", "content_hash", "created_at", "body_html",
]  # fmt: skip


def copy_new_items(
    study_id: int,
    rows: list[Row],
    now: datetime,
    raw_of: Callable[[ItemRecord], dict[str, Any]],
    html: Rendered | None = None,
    rendered_at: datetime | None = None,
) -> dict[str, int] | None:
    """COPY items whose URLs are not in the study yet; return url → id, or None when one of them
    appeared meanwhile (the caller then upserts the batch instead; nothing of this call is kept).
    `html` (url → the item's and its comments' HTML) and `rendered_at` are stored with them; without
    `html` the items are stored unrendered."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT nextval(pg_get_serial_sequence(%s, 'id')) FROM generate_series(1, %s)",
            [Item._meta.db_table, len(rows)],
        )
        ids = [row[0] for row in cursor.fetchall()]
    lines = (
        "\t".join(
            (
                str(item_id),
                str(study_id),
                copy_escape(record.url),
                copy_escape(record.source),
                copy_escape(record.external_id[:_EXTERNAL_ID_MAX]),
                copy_escape(record.title[:_TITLE_MAX]),
                copy_escape(record.body),
                record.body_format,
                _json_text(record.tags),
                _json_text(record.metadata),
                _json_text(raw_of(record)),
                digest,
                _time(record.created_at),
                copy_escape(html[record.url][0]) if html else "",
            )
        )
        for item_id, (record, digest) in zip(ids, rows, strict=True)
    )
    fixed = {"rendered_at": rendered_at if html else None, "imported_at": now, "updated_at": now}
    try:
        with transaction.atomic():
            _copy(Item, _ITEM_COLUMNS, fixed, lines)
    except IntegrityError:
        return None
    return {record.url: item_id for item_id, (record, _) in zip(ids, rows, strict=True)}


def upsert_items(
    study_id: int,
    rows: list[Row],
    now: datetime,
    update_fields: list[str],
    raw_of: Callable[[ItemRecord], dict[str, Any]],
    html: Rendered | None = None,
    rendered_at: datetime | None = None,
) -> dict[str, int]:
    """INSERT ... ON CONFLICT (study, url) DO UPDATE for items that may exist; return url → id.
    `html` and `rendered_at` as for :func:`copy_new_items`."""
    from psycopg2.extras import execute_values  # type: ignore[import-untyped]

    per_row = ["url", "source", "external_id", "title", "body", "body_format", "body_html", "tags",
               "metadata", "raw", "content_hash", "created_at"]  # fmt: skip
    fixed = {
        "study_id": study_id,
        "rendered_at": rendered_at if html else None,
        "imported_at": now,
        "updated_at": now,
    }
    columns: list[str] = []
    template: list[str] = []
    with connection.cursor() as cursor:
        for model_field in _fields(Item):
            if model_field.primary_key:
                continue
            columns.append(connection.ops.quote_name(str(model_field.column)))
            if model_field.attname in per_row:
                template.append("%s::jsonb" if model_field.get_internal_type() == "JSONField" else "%s")
            else:
                value = fixed.get(model_field.attname, model_field.get_default())
                prepared = model_field.get_db_prep_save(value, connection)
                template.append(cursor.mogrify("%s", [prepared]).decode())
        updates = ", ".join(f"{_column(name)} = EXCLUDED.{_column(name)}" for name in update_fields)
        sql = (
            f"INSERT INTO {_table(Item)} ({', '.join(columns)}) VALUES %s "
            f"ON CONFLICT (study_id, url) DO UPDATE SET {updates} RETURNING id, url"
        )
        values = [
            (
                record.url,
                record.source,
                record.external_id[:_EXTERNAL_ID_MAX].replace("\x00", "\ufffd"),
                record.title[:_TITLE_MAX].replace("\x00", "\ufffd"),
                record.body.replace("\x00", "\ufffd"),
                record.body_format,
                html[record.url][0] if html else "",
                json.dumps(record.tags, default=str),
                json.dumps(record.metadata, default=str).replace("\\u0000", "\\ufffd"),
                json.dumps(raw_of(record), default=str).replace("\\u0000", "\\ufffd"),
                digest,
                record.created_at,
            )
            for record, digest in rows
        ]
        returned = execute_values(
            cursor, sql, values, template="(" + ", ".join(template) + ")", page_size=len(values), fetch=True
        )
    return {url: item_id for item_id, url in returned}


def _column(name: str) -> str:
    model_field = Item._meta.get_field(name)
    assert isinstance(model_field, Field)
    return connection.ops.quote_name(str(model_field.column))


# --- comments ----------------------------------------------------------------------------------------

_COMMENT_COLUMNS = [
    "item_id", "position", "external_id", "author", "body", "body_format", "is_answer", "is_accepted",
    "score", "created_at",
]  # fmt: skip


def copy_comments(comments: list[tuple[int, ItemRecord]], html: Rendered | None = None) -> None:
    """COPY the comments of `(item id, record)` pairs, in thread order (positions from 1), with their
    HTML from `html` (url → the item's and its comments' HTML) when given."""
    lines = (
        "\t".join(
            (
                str(item_id),
                str(position),
                copy_escape(comment.external_id[:_COMMENT_ID_MAX]),
                copy_escape(comment.author[:_AUTHOR_MAX]),
                copy_escape(comment.body),
                comment.body_format,
                "t" if comment.is_answer else "f",
                "t" if comment.is_accepted else "f",
                "\\N" if comment.score is None else str(comment.score),
                _time(comment.created_at),
                copy_escape(html[record.url][1][position - 1]) if html else "",
            )
        )
        for item_id, record in comments
        for position, comment in enumerate(record.comments, start=1)
    )
    _copy(ItemComment, [*_COMMENT_COLUMNS, "body_html"], {}, lines)
