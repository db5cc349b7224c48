"""On PostgreSQL an item's long values are compressed with LZ4 (migration 0011, decision 0014)."""

from __future__ import annotations

import pytest
from django.db import connection

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
