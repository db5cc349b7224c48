"""Fast inserts: COPY on PostgreSQL, `bulk_create` elsewhere (SQLite). Shared infrastructure: it knows no
app; each app's writes module (`annotation/writes.py`, `adjudication/writes.py`) calls it on its own
models, and the package restore on corpus's and annotation's rounds (docs/decisions/0006).

A restore writes hundreds of thousands of rows into tables that nobody else can see yet (the new
study is created in the same transaction). Django's `bulk_create` spends more time compiling a
multi-row VALUES than PostgreSQL spends storing it; COPY streams the same rows in PostgreSQL's text
format. The rows are exactly those `bulk_create` would write: every column not given gets the model
field's default, evaluated once per call (so `timezone.now` defaults share one instant per call).

Ids: with ``returning=True`` the new rows' ids come back in the order of the rows; on PostgreSQL
they are drawn from the table's sequence before the COPY (one query), so a restore never reads its
own rows back to learn their ids.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from itertools import islice
from typing import Any

from django.db import connection
from django.db.models import BooleanField, DateTimeField, Field, JSONField, Model

BATCH_SIZE = 5000

Row = Mapping[str, Any]


def postgres() -> bool:
    return connection.vendor == "postgresql"


def copy_escape(text: str) -> str:
    """A value in COPY's text format: backslash, tab, newline and carriage return escaped; NUL replaced
    (PostgreSQL text cannot hold it; GitHub bodies occasionally do)."""
    if "\\" in text:
        text = text.replace("\\", "\\\\")
    if "\t" in text:
        text = text.replace("\t", "\\t")
    if "\n" in text:
        text = text.replace("\n", "\\n")
    if "\r" in text:
        text = text.replace("\r", "\\r")
    if "\x00" in text:
        text = text.replace("\x00", "\ufffd")
    return text


def insert_rows(
    model: type[Model],
    rows: Iterable[Row],
    *,
    returning: bool = False,
    batch_size: int = BATCH_SIZE,
) -> list[int]:
    """Insert `rows` (attname → value; every row names the same fields) into `model`'s table in
    batches of `batch_size`, inside the caller's transaction. Returns the new ids in row order when
    `returning`, else an empty list."""
    ids: list[int] = []
    iterator = iter(rows)
    while batch := list(islice(iterator, batch_size)):
        if postgres():
            new = _copy(model, batch, returning)
        else:
            objects = model._default_manager.bulk_create([model(**row) for row in batch])
            new = [obj.pk for obj in objects]
        if returning:
            ids.extend(new)
    return ids


def _fields(model: type[Model]) -> list[Field[Any, Any]]:
    return [f for f in model._meta.concrete_fields if isinstance(f, Field)]


def _converter(field: Field[Any, Any]) -> Callable[[Any], str]:
    """The function that writes one non-null value of `field` in COPY's text format."""
    if isinstance(field, JSONField):
        encoder = field.encoder

        def as_json(value: Any) -> str:
            text = json.dumps(value, cls=encoder)  # ASCII escapes; jsonb decodes them
            if "\\u0000" in text:
                text = text.replace("\\u0000", "\\ufffd")
            return copy_escape(text)

        return as_json
    if isinstance(field, BooleanField):
        return lambda value: "t" if value else "f"
    if isinstance(field, DateTimeField):
        return lambda value: value.isoformat() if isinstance(value, datetime) else copy_escape(str(value))
    return lambda value: copy_escape(str(value))


def _text(convert: Callable[[Any], str], value: Any) -> str:
    return "\\N" if value is None else convert(value)


def _copy(model: type[Model], rows: Sequence[Row], returning: bool) -> list[int]:
    pk = model._meta.pk
    assert pk is not None
    fields = [f for f in _fields(model) if not f.primary_key]
    given = [f for f in fields if f.attname in rows[0]]
    others = [f for f in fields if f.attname not in rows[0]]
    ids: list[int] = []
    if returning:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT nextval(pg_get_serial_sequence(%s, %s)) FROM generate_series(1, %s)",
                [model._meta.db_table, pk.column, len(rows)],
            )
            ids = [row[0] for row in cursor.fetchall()]
    converters = [(f.attname, _converter(f)) for f in given]
    defaults = [_text(_converter(f), f.get_default()) for f in others]

    def lines() -> Iterator[str]:
        for position, row in enumerate(rows):
            cells = [_text(convert, row[name]) for name, convert in converters]
            if returning:
                cells.insert(0, str(ids[position]))
            yield "\t".join(cells + defaults) + "\n"

    names = ([str(pk.column)] if returning else []) + [str(f.column) for f in (*given, *others)]
    column_sql = ", ".join(connection.ops.quote_name(name) for name in names)
    table = connection.ops.quote_name(model._meta.db_table)
    with connection.cursor() as cursor, connection.wrap_database_errors:
        cursor.cursor.copy_expert(f"COPY {table} ({column_sql}) FROM STDIN", _Source(lines()), size=1 << 16)
    return ids


class _Source:
    """The file COPY reads from: the rows' lines, encoded as psycopg2 asks for them (`read(size)`), so a
    batch of large bodies is never held twice (a text buffer would hold it at four bytes a character)."""

    def __init__(self, lines: Iterator[str]) -> None:
        self._lines = lines
        self._pending = b""

    def read(self, size: int = -1) -> bytes:
        chunks = [self._pending]
        total = len(self._pending)
        while size < 0 or total < size:
            line = next(self._lines, None)
            if line is None:
                break
            data = line.encode("utf-8")
            chunks.append(data)
            total += len(data)
        data = b"".join(chunks)
        if size < 0:
            self._pending = b""
            return data
        self._pending = data[size:]
        return data[:size]
