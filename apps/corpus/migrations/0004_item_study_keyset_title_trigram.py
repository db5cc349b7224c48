"""Indexes of the item list: keyset pages within a study, and title search.

`item_study_keyset` (study, id) lets a page start exactly where it begins, whatever other studies hold.
On PostgreSQL, a trigram GIN index on `UPPER(title)` (extension pg_trgm, trusted since PostgreSQL 13) serves
`title__icontains` (`UPPER(title) LIKE UPPER('%q%')`) for rare words, which otherwise scan every item of the study; SQLite has no such
index and scans (its studies are the small, embedded ones).
"""

from django.db import migrations, models

# On UPPER(title): Django's `title__icontains` is `UPPER(title) LIKE UPPER('%q%')` on PostgreSQL.
TRIGRAM = "CREATE INDEX IF NOT EXISTS item_title_trgm ON corpus_item USING gin ((UPPER(title)) gin_trgm_ops)"


def add_trigram_index(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    schema_editor.execute(TRIGRAM)


def drop_trigram_index(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("DROP INDEX IF EXISTS item_title_trgm")


class Migration(migrations.Migration):
    dependencies = [
        ("corpus", "0003_item_study_no_lone_index"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="item",
            index=models.Index(fields=["study", "id"], name="item_study_keyset"),
        ),
        migrations.RunPython(add_trigram_index, drop_trigram_index, elidable=False),
    ]
