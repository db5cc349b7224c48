"""On PostgreSQL, an item's long values are compressed with LZ4 instead of pglz (docs/decisions/0014).

A row longer than about 2 KB has its longest values compressed as it is written. An item holds the body, its
rendered HTML and the source's record; a COPY of 10,000 items' bodies and HTML took 510-670 ms with pglz and
230-240 ms with LZ4, and LZ4 reads back faster too. Only rows written from now on are compressed with LZ4;
PostgreSQL reads either. A server built without LZ4 (`--with-lz4`; the Debian and PGDG packages have it)
keeps pglz; SQLite compresses nothing.
"""

from django.db import DatabaseError, migrations, transaction

# PostgreSQL's error code for a server built without LZ4; any other error stops the migration.
FEATURE_NOT_SUPPORTED = "0A000"
COLUMNS = {"corpus_item": ("body", "body_html", "raw"), "corpus_itemcomment": ("body", "body_html")}


def _set_compression(schema_editor, method: str) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    for table, columns in COLUMNS.items():
        for column in columns:
            try:
                with transaction.atomic(using=schema_editor.connection.alias):  # a savepoint
                    schema_editor.execute(
                        f'ALTER TABLE "{table}" ALTER COLUMN "{column}" SET COMPRESSION {method}'
                    )
            except DatabaseError as exc:
                if getattr(exc.__cause__, "pgcode", None) == FEATURE_NOT_SUPPORTED:
                    return  # "compression method lz4 not supported": this server keeps pglz
                raise


def use_lz4(apps, schema_editor):
    _set_compression(schema_editor, "lz4")


def use_default(apps, schema_editor):
    _set_compression(schema_editor, "default")


class Migration(migrations.Migration):
    dependencies = [
        ("corpus", "0010_search_vector_filled_after_import"),
    ]

    operations = [migrations.RunPython(use_lz4, use_default, elidable=False)]
