"""Full-text search on PostgreSQL: `search_vector` becomes a plain column, filled after an import by a
background task instead of computed by PostgreSQL on every insert (issue 25).

As a stored generated column it cost an import of 20,000 items 7 of its 14 seconds (the English parser
and the GIN index on every row of the COPY); the same work done after the job takes 6.7 s in the
background while the items are already viewable. Its values are kept (`DROP EXPRESSION`). A row whose
title or body changes has its vector cleared by a trigger, so a stale vector never answers a search; an
item with no vector yet is matched by computing the expression on it (`apps.corpus.search.matches`),
found through the partial index `item_search_pending`. SQLite (FTS5 and its triggers) is unchanged.
"""

from django.db import migrations

TSVECTOR = "to_tsvector('english'::regconfig, left(coalesce(title, '') || ' ' || coalesce(body, ''), 200000))"

FORWARD = [
    "ALTER TABLE corpus_item ALTER COLUMN search_vector DROP EXPRESSION IF EXISTS",
    "CREATE OR REPLACE FUNCTION corpus_item_search_stale() RETURNS trigger LANGUAGE plpgsql AS $$ "
    "BEGIN NEW.search_vector := NULL; RETURN NEW; END $$",
    "DROP TRIGGER IF EXISTS corpus_item_search_stale ON corpus_item",
    "CREATE TRIGGER corpus_item_search_stale BEFORE UPDATE OF title, body ON corpus_item FOR EACH ROW "
    "WHEN (OLD.title IS DISTINCT FROM NEW.title OR OLD.body IS DISTINCT FROM NEW.body) "
    "EXECUTE FUNCTION corpus_item_search_stale()",
    "CREATE INDEX IF NOT EXISTS item_search_pending ON corpus_item (study_id) WHERE search_vector IS NULL",
]
BACKWARD = [
    "DROP INDEX IF EXISTS item_search_pending",
    "DROP TRIGGER IF EXISTS corpus_item_search_stale ON corpus_item",
    "DROP FUNCTION IF EXISTS corpus_item_search_stale()",
    "DROP INDEX IF EXISTS item_fts",
    "ALTER TABLE corpus_item DROP COLUMN IF EXISTS search_vector",
    f"ALTER TABLE corpus_item ADD COLUMN search_vector tsvector GENERATED ALWAYS AS ({TSVECTOR}) STORED",
    "CREATE INDEX item_fts ON corpus_item USING gin (search_vector)",
]


def forward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for statement in FORWARD:
            schema_editor.execute(statement)


def backward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for statement in BACKWARD:
            schema_editor.execute(statement)


class Migration(migrations.Migration):

    dependencies = [
        ("corpus", "0009_items_grid"),
    ]

    operations = [migrations.RunPython(forward, backward, elidable=False)]
