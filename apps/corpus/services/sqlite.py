"""SQLite statements of the upsert: `executemany` of one INSERT for new items, one UPDATE for changed.

Why not `bulk_create(update_conflicts=True)` here: Django compiles every value of a multi-row INSERT in
Python (a thousand items of sixteen columns: 16,000 `prepare_value` calls, then the statement split by
SQLite's variable limit), which was most of a JSONL import's time on the embedded default (issue 25:
4.9 s of the upsert's 20,000 items, against 0.5 s here). `executemany` binds each row's values in C.
Decision record: docs/decisions/0008-sqlite-import-executemany.md.

The full-text index (FTS5) of the rows written is brought in step here, by one statement a batch, with
the item triggers told to stand aside (`search.sqlite_fts_bulk`): through the row triggers FTS5 flushes
its pending terms once a row, which cost 2.3 s of the 3.1 s an executemany of 20,000 items took, against
0.9 s for the set-based statement (decision 0011).

No statement here can meet a conflict: on SQLite a transaction takes the database's write lock at its
start (``transaction_mode: IMMEDIATE``), so the stored URLs the batch read in the same transaction are
still all there are. Rows are written as `bulk_create` would write them: every column the import does
not fill gets its model default, evaluated once per call.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime
from typing import Any

from django.db import connection, transaction
from django.db.models import Field

from ..models import Item
from ..records import ItemRecord
from ..search import sqlite_fts_bulk, sqlite_fts_index, sqlite_fts_unindex
from .pg import Rendered, Row

_EXTERNAL_ID_MAX = Item._meta.get_field("external_id").max_length or 200
_TITLE_MAX = Item._meta.get_field("title").max_length or 500
# The columns whose values come from each record, in the order `_values` gives them.
_PER_ROW = ["url", "source", "external_id", "title", "body", "body_format", "body_html", "rendered_at",
            "tags", "metadata", "raw", "content_hash", "created_at", "updated_at"]  # fmt: skip


def write_items(
    study_id: int,
    new: list[Row],
    changed: list[Row],
    now: datetime,
    update_fields: list[str],
    raw_of: Callable[[ItemRecord], dict[str, Any]],
    html: Rendered,
    rendered_at: datetime | None,
) -> dict[str, int]:
    """Insert `new`, update `changed` (`update_fields` only); return url → id of both."""
    stamp = _datetime(now) or ""
    rendered = _datetime(rendered_at) if html else None
    fields = [f for f in Item._meta.concrete_fields if isinstance(f, Field) and not f.primary_key]
    fixed = {"study_id": study_id, "imported_at": now}
    others = [f for f in fields if f.attname not in _PER_ROW]
    other_values = tuple(
        f.get_db_prep_save(fixed.get(f.attname, f.get_default()), connection) for f in others
    )
    table = connection.ops.quote_name(Item._meta.db_table)
    with transaction.atomic(), connection.cursor() as cursor, sqlite_fts_bulk(cursor):
        changed_urls = [row[0].url for row in changed]
        reindex = bool(changed_urls) and not {"title", "body"}.isdisjoint(update_fields)
        if reindex:
            for part in _chunks(changed_urls):  # out of the index with the text it was indexed with
                sqlite_fts_unindex(cursor, _url_in(part), [study_id, *part])
        if new:
            cursor.execute(f"SELECT coalesce(max(id), 0) FROM {table}")
            (last_id,) = cursor.fetchone()  # the write lock is held: every id above it is this batch's
            columns = [_column(name) for name in _PER_ROW] + [
                connection.ops.quote_name(str(f.column)) for f in others
            ]
            cursor.executemany(
                f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join(['%s'] * len(columns))})",
                [_values(row, raw_of, html, rendered, stamp) + other_values for row in new],
            )
            sqlite_fts_index(cursor, "id > %s", [last_id])
        if changed:
            assignments = ", ".join(f"{_column(name)} = %s" for name in _PER_ROW if name in update_fields)
            positions = [index for index, name in enumerate(_PER_ROW) if name in update_fields]
            cursor.executemany(
                f"UPDATE {table} SET {assignments} WHERE study_id = %s AND url = %s",
                [
                    (*(values[i] for i in positions), study_id, row[0].url)
                    for row in changed
                    for values in [_values(row, raw_of, html, rendered, stamp)]
                ],
            )
            if reindex:
                for part in _chunks(changed_urls):
                    sqlite_fts_index(cursor, _url_in(part), [study_id, *part])
        urls = [record.url for record, _ in (*new, *changed)]
        ids: dict[str, int] = {}
        for part in _chunks(urls):
            cursor.execute(f"SELECT url, id FROM {table} WHERE {_url_in(part)}", [study_id, *part])
            ids.update(cursor.fetchall())
    return ids


def _chunks(urls: list[str]) -> list[list[str]]:
    """`urls` in parts of 500, under SQLite's limit of bound variables."""
    return [urls[start : start + 500] for start in range(0, len(urls), 500)]


def _url_in(urls: list[str]) -> str:
    """The condition on items of a study (the first parameter) whose URL is one of `urls` (the rest)."""
    return f"study_id = %s AND url IN ({', '.join(['%s'] * len(urls))})"


def _values(
    row: Row, raw_of: Callable[[ItemRecord], dict[str, Any]], html: Rendered, rendered: str | None, stamp: str
) -> tuple[Any, ...]:
    record, digest = row
    return (
        record.url,
        record.source,
        record.external_id[:_EXTERNAL_ID_MAX],
        record.title[:_TITLE_MAX],
        record.body,
        record.body_format,
        html[record.url][0] if html else "",
        rendered,
        json.dumps(record.tags),
        json.dumps(record.metadata, default=str),
        json.dumps(raw_of(record), default=str),
        digest,
        _datetime(record.created_at),
        stamp,
    )


def _datetime(value: datetime | None) -> str | None:
    return connection.ops.adapt_datetimefield_value(value)


def _column(name: str) -> str:
    model_field = Item._meta.get_field(name)
    assert isinstance(model_field, Field)
    return connection.ops.quote_name(str(model_field.column))
