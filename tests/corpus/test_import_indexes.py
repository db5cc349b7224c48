"""An import writes no entry in the item table's indexes of columns it leaves empty (migration 0012): the
render pass's index holds only unrendered items, the screener's only screened ones."""

from __future__ import annotations

import re

import pytest
from django.db import connection

pytestmark = pytest.mark.django_db


def _item_index_definitions() -> list[str]:
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SELECT indexdef FROM pg_indexes WHERE tablename = 'corpus_item'")
        else:
            cursor.execute("SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'corpus_item'")
        return [row[0] for row in cursor.fetchall() if row[0]]


def _on(column: str) -> list[str]:
    """The definitions of the item indexes keyed on `column`."""
    keyed = re.compile(rf'\(.*"?{column}"?.*\)')
    return [d for d in _item_index_definitions() if keyed.search(d.split(" WHERE ")[0])]


def test_the_only_index_on_the_screener_holds_screened_items_only() -> None:
    (definition,) = _on("screened_by_id")
    assert re.search(r'WHERE \(?"?screened_by_id"? IS NOT NULL\)?$', definition), definition


def test_the_render_pass_index_holds_unrendered_items_only_in_id_order() -> None:
    assert not _on("rendered_at")  # no index keyed on it: every rendered item would take an entry
    (definition,) = [d for d in _item_index_definitions() if "item_unrendered" in d]
    assert re.search(r'\("?study_id"?, "?id"?\) WHERE \(?"?rendered_at"? IS NULL\)?$', definition), definition
