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

Both stem English words (PostgreSQL's `english` configuration, FTS5's `porter` tokenizer), so `hangs`
finds `hang`; they may differ on rare words.
"""

from __future__ import annotations

import re
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

SQLITE_FTS = [
    "CREATE VIRTUAL TABLE IF NOT EXISTS corpus_item_fts USING fts5(title, body, content='corpus_item', "
    "content_rowid='id', tokenize='porter unicode61')",
    "CREATE TRIGGER IF NOT EXISTS corpus_item_fts_insert AFTER INSERT ON corpus_item BEGIN "
    "INSERT INTO corpus_item_fts(rowid, title, body) VALUES (new.id, new.title, new.body); END",
    "CREATE TRIGGER IF NOT EXISTS corpus_item_fts_delete AFTER DELETE ON corpus_item BEGIN "
    "INSERT INTO corpus_item_fts(corpus_item_fts, rowid, title, body) VALUES ('delete', old.id, old.title, "
    "old.body); END",
    "CREATE TRIGGER IF NOT EXISTS corpus_item_fts_update AFTER UPDATE OF title, body ON corpus_item BEGIN "
    "INSERT INTO corpus_item_fts(corpus_item_fts, rowid, title, body) VALUES ('delete', old.id, old.title, "
    "old.body); INSERT INTO corpus_item_fts(rowid, title, body) VALUES (new.id, new.title, new.body); END",
]
_SQLITE_OBJECTS = (
    "corpus_item_fts",
    "corpus_item_fts_insert",
    "corpus_item_fts_delete",
    "corpus_item_fts_update",
)

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
    """Create the FTS5 table and its triggers on SQLite where missing, and then rebuild the index from the
    items. Returns whether anything was created. A no-op elsewhere. Connected to `post_migrate`."""
    conn: BaseDatabaseWrapper = connections[using]
    if conn.vendor != "sqlite":
        return False
    with conn.cursor() as cursor:
        if "corpus_item" not in conn.introspection.table_names(cursor):
            return False
        cursor.execute("SELECT name FROM sqlite_master WHERE name IN (%s, %s, %s, %s)", _SQLITE_OBJECTS)
        present = {row[0] for row in cursor.fetchall()}
        if present.issuperset(_SQLITE_OBJECTS):
            return False
        for statement in SQLITE_FTS:
            cursor.execute(statement)
        cursor.execute("INSERT INTO corpus_item_fts(corpus_item_fts) VALUES ('rebuild')")
    return True
