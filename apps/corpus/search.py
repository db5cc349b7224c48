"""Full-text search over items' title and body: PostgreSQL's text search, SQLite's FTS5.

- PostgreSQL: a column `search_vector` (`TSVECTOR`) with a GIN index (migrations 0009, 0010), queried with
  `websearch_to_tsquery` (words are all required, "a phrase" in quotes, -word excluded, `or`). It is filled
  after an import by a background task (`services.search_index`), not on insert: an item with no vector
  yet (just imported, or its title or body changed: a trigger clears its vector) is matched by computing
  the expression on that row, found through the partial index `item_search_pending`, so a search is
  always complete, only slower while an import's items wait for their vectors.
- SQLite: an FTS5 table `corpus_item_fts` with external content (the item table), kept in sync by three
  triggers. A SQLite migration that remakes the item table drops its triggers, so they are not created by
  a migration but ensured after every `migrate` (`ensure_sqlite_fts`, on `post_migrate`), which also
  rebuilds the index when it had to create something. The query is translated by :func:`fts5_query`.
  A bulk writer (the import's batches) indexes its rows itself with one statement a batch
  (:func:`sqlite_fts_bulk`): a row trigger costs FTS5 a flush per row, 3 times the set-based statement.

Both stem English words (PostgreSQL's `english` configuration, FTS5's `porter` tokenizer), so `hangs`
finds `hang`; they may differ on rare words.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import BooleanField
from django.db.models.expressions import RawSQL

# What the column `search_vector` holds (migrations 0009 and 0010 on PostgreSQL; the model does not declare
# it), of the item's `{table}` title and body. The body is cut so that no tsvector passes PostgreSQL's 1 MB
# limit.
_TSVECTOR_OF = (
    "to_tsvector('english'::regconfig, left(coalesce({table}title, '') || ' ' || coalesce({table}body, ''), "
    "200000))"
)
TSVECTOR = _TSVECTOR_OF.format(table="")

# A row in `corpus_item_fts_bulk` tells the insert and update triggers that the transaction's writer
# indexes its rows itself (`sqlite_fts_bulk`). Only ever written inside a transaction that removes it
# again, so no other connection sees a row. The delete trigger always runs.
_SQLITE_BULK_OFF = "WHEN NOT EXISTS (SELECT 1 FROM corpus_item_fts_bulk) "
SQLITE_FTS = {
    "corpus_item_fts": "CREATE VIRTUAL TABLE corpus_item_fts USING fts5(title, body, "
    "content='corpus_item', content_rowid='id', tokenize='porter unicode61')",
    "corpus_item_fts_bulk": "CREATE TABLE corpus_item_fts_bulk (id INTEGER PRIMARY KEY)",
    "corpus_item_fts_insert": "CREATE TRIGGER corpus_item_fts_insert AFTER INSERT ON corpus_item "
    + _SQLITE_BULK_OFF
    + "BEGIN INSERT INTO corpus_item_fts(rowid, title, body) VALUES (new.id, new.title, new.body); END",
    "corpus_item_fts_delete": "CREATE TRIGGER corpus_item_fts_delete AFTER DELETE ON corpus_item BEGIN "
    "INSERT INTO corpus_item_fts(corpus_item_fts, rowid, title, body) VALUES ('delete', old.id, old.title, "
    "old.body); END",
    "corpus_item_fts_update": "CREATE TRIGGER corpus_item_fts_update AFTER UPDATE OF title, body ON "
    "corpus_item "
    + _SQLITE_BULK_OFF
    + "BEGIN INSERT INTO corpus_item_fts(corpus_item_fts, rowid, title, body) VALUES ('delete', old.id, "
    "old.title, old.body); INSERT INTO corpus_item_fts(rowid, title, body) VALUES (new.id, new.title, "
    "new.body); END",
}
_SQLITE_TRIGGERS = ("corpus_item_fts_insert", "corpus_item_fts_delete", "corpus_item_fts_update")

_PG_MATCH = (
    '("corpus_item"."search_vector" @@ websearch_to_tsquery(\'english\', %s) OR '
    '("corpus_item"."search_vector" IS NULL AND '
    + _TSVECTOR_OF.format(table='"corpus_item".')
    + " @@ websearch_to_tsquery('english', %s)))"
)

_TERM = re.compile(r'(-?)"([^"]*)"|(\S+)')


def fts5_query(text: str) -> str:
    """`text` as an FTS5 query with the meaning `websearch_to_tsquery` gives it: every word required,
    "quoted phrases", `-word` excluded, `or` between two terms. Every term is quoted, so no character of
    the input is FTS5 syntax. Empty when nothing searchable is left."""
    required: list[str] = []
    excluded: list[str] = []
    pending_or = False
    for match in _TERM.finditer(text):
        negated, phrase, word = match.group(1), match.group(2), match.group(3)
        if word is not None and word.lower() == "or" and required:
            pending_or = True
            continue
        if word is not None and word.startswith("-") and len(word) > 1:
            negated, phrase = "-", word[1:]
        value = phrase if phrase is not None else word
        tokens = re.findall(r"\w+", value or "")
        if not tokens:
            continue
        quoted = '"' + " ".join(tokens) + '"'
        if negated:
            excluded.append(quoted)
        elif pending_or:
            required[-1] = f"({required[-1]} OR {quoted})"
            pending_or = False
        else:
            required.append(quoted)
    if not required:
        return ""
    query = " AND ".join(required)
    for term in excluded:
        query = f"{query} NOT {term}"
    return query


def matches(text: str) -> RawSQL:
    """A filter for `Item` querysets: the item's title or body matches the search `text`."""
    if connection.vendor == "postgresql":
        # The stored column, not the expression: only the column has the GIN index, and recomputing the
        # expression walks and re-parses every body (a word no item has took over 20 s at 100k items).
        # Only the rows still waiting for their vector are parsed here (a bitmap OR of the two indexes).
        return RawSQL(_PG_MATCH, (text, text), output_field=BooleanField())
    query = fts5_query(text)
    if not query:
        return RawSQL("1 = 0", (), output_field=BooleanField())
    return RawSQL(
        '"corpus_item"."id" IN (SELECT rowid FROM corpus_item_fts WHERE corpus_item_fts MATCH %s)',
        (query,),
        output_field=BooleanField(),
    )


def ensure_sqlite_fts(using: str = DEFAULT_DB_ALIAS, **kwargs: Any) -> bool:
    """Create the FTS5 table, its flag table and its triggers on SQLite where missing (a trigger of an
    older definition is replaced), then rebuild the index if the FTS5 table or a trigger was missing.
    Returns whether anything was created or replaced. A no-op elsewhere. Connected to `post_migrate`."""
    conn: BaseDatabaseWrapper = connections[using]
    if conn.vendor != "sqlite":
        return False
    with conn.cursor() as cursor:
        if "corpus_item" not in conn.introspection.table_names(cursor):
            return False
        names = ", ".join(["%s"] * len(SQLITE_FTS))
        cursor.execute(f"SELECT name, sql FROM sqlite_master WHERE name IN ({names})", list(SQLITE_FTS))
        present = dict(cursor.fetchall())
        # Tables are created where missing; triggers also replaced where their definition is older.
        todo = [
            name
            for name, statement in SQLITE_FTS.items()
            if name not in present or (name in _SQLITE_TRIGGERS and present[name] != statement)
        ]
        if not todo:
            return False
        for name in todo:
            if name in present:
                cursor.execute(f"DROP TRIGGER {name}")
            cursor.execute(SQLITE_FTS[name])
        # A trigger of an older definition kept the index in step: only a missing piece needs a rebuild.
        if any(name not in present for name in ("corpus_item_fts", *_SQLITE_TRIGGERS)):
            cursor.execute("INSERT INTO corpus_item_fts(corpus_item_fts) VALUES ('rebuild')")
    return True


@contextmanager
def sqlite_fts_bulk(cursor: Any) -> Iterator[None]:
    """Within a transaction on SQLite: the item triggers leave the FTS5 index to the caller, who must
    bring it in step before the block ends (:func:`sqlite_fts_index`, :func:`sqlite_fts_unindex`)."""
    if not connection.in_atomic_block:
        raise RuntimeError("sqlite_fts_bulk needs a transaction (its flag must never be committed)")
    cursor.execute("INSERT INTO corpus_item_fts_bulk (id) VALUES (1)")
    try:
        yield
    finally:
        cursor.execute("DELETE FROM corpus_item_fts_bulk")


def sqlite_fts_index(cursor: Any, where: str, params: list[Any]) -> None:
    """Index the items `where` selects (a condition on `corpus_item`), as the insert trigger would."""
    cursor.execute(
        "INSERT INTO corpus_item_fts(rowid, title, body) "
        f"SELECT id, title, body FROM corpus_item WHERE {where}",
        params,
    )


def sqlite_fts_unindex(cursor: Any, where: str, params: list[Any]) -> None:
    """Take the items `where` selects out of the index, with the values they were indexed with (their
    current title and body): before an update of either, as the update trigger would."""
    cursor.execute(
        "INSERT INTO corpus_item_fts(corpus_item_fts, rowid, title, body) "
        f"SELECT 'delete', id, title, body FROM corpus_item WHERE {where}",
        params,
    )
