"""SQLite's full-text index (FTS5) beside an import: the import's batches index their rows themselves, one
statement a batch, with the item triggers told to stand aside (issue 25: through the row triggers FTS5
flushed once a row, 2.3 s of a 20,000-item import's 3.1 s of writing). What must hold is that the index
stays exactly in step with the items, and that every other write still goes through the triggers.

PostgreSQL has no FTS5 table (tests/corpus/test_search_index.py covers its column), so these tests run in
the SQLite pass and are skipped, saying so, on PostgreSQL.
"""

from __future__ import annotations

import pytest
from django.db import IntegrityError, connection
from django.utils import timezone

from apps.accounts.models import Study
from apps.corpus.models import Item
from apps.corpus.search import SQLITE_FTS, ensure_sqlite_fts, matches, sqlite_fts_bulk
from apps.corpus.services import sqlite as sqlite_writes
from apps.corpus.services.upsert import UPDATE_FIELDS, stored_raw, upsert_records
from tests.corpus.conftest import RecordMaker
from tests.factories import ItemFactory

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(connection.vendor != "sqlite", reason="the FTS5 index is SQLite's"),
]


def found(study: Study, text: str) -> set[str]:
    return set(Item.objects.filter(study=study).filter(matches(text)).values_list("url", flat=True))


def assert_index_in_step() -> None:
    """FTS5's own check of an external-content index against the item table: raises if they differ."""
    with connection.cursor() as cursor:
        cursor.execute("INSERT INTO corpus_item_fts(corpus_item_fts, rank) VALUES ('integrity-check', 1)")


def flags() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM corpus_item_fts_bulk")
        return int(cursor.fetchone()[0])


def test_an_import_indexes_its_new_items_and_the_new_text_of_changed_ones(
    study: Study, record: RecordMaker
) -> None:
    upsert_records(study, [record(n, body=f"first words zebra{n}") for n in range(1, 4)], render=False)
    assert found(study, "zebra2") == {record(2).url}

    upsert_records(study, [record(2, body="second words okapi"), record(4, body="okapi too")], render=False)

    assert found(study, "zebra2") == set()  # the old text left the index with the update
    assert found(study, "okapi") == {record(2).url, record(4).url}
    assert found(study, "zebra1") == {record(1).url}  # untouched items stay indexed
    assert_index_in_step()
    assert flags() == 0


def test_other_writes_still_go_through_the_triggers_after_an_import(
    study: Study, record: RecordMaker
) -> None:
    upsert_records(study, [record(1, body="imported body")], render=False)
    made = ItemFactory(study=study, title="Made by hand", body="a hand-made capybara")
    assert found(study, "capybara") == {made.url}

    Item.objects.filter(pk=made.pk).update(body="now a tapir")
    assert found(study, "capybara") == set()
    assert found(study, "tapir") == {made.url}

    Item.objects.filter(pk=made.pk).delete()
    assert found(study, "tapir") == set()
    assert_index_in_step()


def test_a_batch_that_fails_leaves_neither_its_rows_nor_the_flag(study: Study, record: RecordMaker) -> None:
    same = (record(7, body="walrus"), "hash")
    with pytest.raises(IntegrityError):  # the same URL twice in one batch: the unique constraint
        sqlite_writes.write_items(
            study.pk, [same, same], [], timezone.now(), UPDATE_FIELDS, stored_raw, {}, None
        )

    assert flags() == 0
    assert found(study, "walrus") == set()
    made = ItemFactory(study=study, body="a walrus after all")  # the insert trigger is in force again
    assert found(study, "walrus") == {made.url}
    assert_index_in_step()


@pytest.mark.django_db(transaction=True)
def test_the_triggers_stand_aside_only_inside_a_transaction() -> None:
    with (
        connection.cursor() as cursor,
        pytest.raises(RuntimeError, match="needs a transaction"),
        sqlite_fts_bulk(cursor),
    ):
        pass
    assert flags() == 0


def test_migrate_replaces_a_trigger_of_the_older_definition_and_keeps_the_index(study: Study) -> None:
    kept = ItemFactory(study=study, body="an old narwhal")
    with connection.cursor() as cursor:  # the trigger as databases made before issue 25 have it
        cursor.execute("DROP TRIGGER corpus_item_fts_insert")
        cursor.execute(
            "CREATE TRIGGER corpus_item_fts_insert AFTER INSERT ON corpus_item BEGIN INSERT INTO "
            "corpus_item_fts(rowid, title, body) VALUES (new.id, new.title, new.body); END"
        )

    assert ensure_sqlite_fts() is True
    assert ensure_sqlite_fts() is False  # nothing left to do

    with connection.cursor() as cursor:
        cursor.execute("SELECT sql FROM sqlite_master WHERE name = 'corpus_item_fts_insert'")
        assert cursor.fetchone()[0] == SQLITE_FTS["corpus_item_fts_insert"]
    assert found(study, "narwhal") == {kept.url}
    assert_index_in_step()
