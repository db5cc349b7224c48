"""On PostgreSQL an item's long values are compressed with LZ4 (migration 0011, decision 0014)."""

from __future__ import annotations

import importlib

import pytest
from django.db import DatabaseError, connection

from apps.corpus.models import Item

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(connection.vendor != "postgresql", reason="column compression is PostgreSQL's"),
]


def _compression(table: str) -> dict[str, str]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT attname, attcompression FROM pg_attribute WHERE attrelid = %s::regclass AND attnum > 0",
            [table],
        )
        return dict(cursor.fetchall())


def test_long_item_and_comment_values_are_compressed_with_lz4() -> None:
    assert {k: v for k, v in _compression("corpus_item").items() if v} == {
        "body": "l",
        "body_html": "l",
        "raw": "l",
    }
    assert {k: v for k, v in _compression("corpus_itemcomment").items() if v} == {
        "body": "l",
        "body_html": "l",
    }


def test_a_long_body_is_stored_compressed_and_reads_back_whole(study) -> None:  # type: ignore[no-untyped-def]
    body = "A traceback line that repeats.\n" * 400  # 12 KB: compressed as the row is written
    item = Item.objects.create(
        study=study, url="https://x.org/1", title="t", body=body, body_html=f"<p>{body}</p>"
    )
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_column_compression(body), pg_column_size(body) FROM corpus_item WHERE id = %s",
            [item.pk],
        )
        method, stored = cursor.fetchone()
    assert method == "lz4" and stored < len(body) / 4
    assert Item.objects.get(pk=item.pk).body == body


class _Server:
    """A schema editor whose ALTER fails with `pgcode`, as psycopg2's error under Django's."""

    def __init__(self, pgcode: str) -> None:
        self.pgcode = pgcode
        self.connection = connection

    def execute(self, statement: str) -> None:
        cause = Exception("compression method lz4 not supported")
        cause.pgcode = self.pgcode  # type: ignore[attr-defined]
        raise DatabaseError(statement) from cause


_MIGRATION = importlib.import_module("apps.corpus.migrations.0011_lz4_compression")


def test_a_server_without_lz4_keeps_pglz_and_the_migration_goes_on() -> None:
    _MIGRATION.use_lz4(None, _Server(_MIGRATION.FEATURE_NOT_SUPPORTED))


def test_any_other_database_error_stops_the_migration() -> None:
    with pytest.raises(DatabaseError):
        _MIGRATION.use_lz4(None, _Server("42P01"))  # undefined table
