"""The items grid: columns to sort on (round, labelling progress, decision, kept on the item), an index per
sort, saved views, and full-text search.

Full-text search on PostgreSQL is a stored generated column `search_vector` (the expression
`apps.corpus.search.TSVECTOR`, copied here: a migration keeps the text it ran with) with a GIN index. The
model does not declare the column (SQLite has none); nothing writes it, PostgreSQL computes it. On SQLite this migration adds nothing for search: the FTS5 table
and its triggers are ensured after every migrate (`apps.corpus.search.ensure_sqlite_fts`), since a later
table remake would drop triggers made here. The new columns start at their defaults ("not in a round");
`apps.adjudication.progress.refresh_progress(study=...)` computes them for a study that had rounds before.
"""

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models

TSVECTOR = "to_tsvector('english'::regconfig, left(coalesce(title, '') || ' ' || coalesce(body, ''), 200000))"


def add_fts_index(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        # A stored column, not an index on the expression: a match is rechecked on the row (phrases always,
        # and a page walks the sort's index checking rows), and recomputing the expression on 2 KB bodies
        # cost 0.7 s for a common word at 100k items, 5 s for a phrase (bench/bench_items_grid.py).
        schema_editor.execute(
            f"ALTER TABLE corpus_item ADD COLUMN IF NOT EXISTS search_vector tsvector "
            f"GENERATED ALWAYS AS ({TSVECTOR}) STORED"
        )
        schema_editor.execute("CREATE INDEX IF NOT EXISTS item_fts ON corpus_item USING gin (search_vector)")


def drop_fts_index(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("DROP INDEX IF EXISTS item_fts")
        schema_editor.execute("ALTER TABLE corpus_item DROP COLUMN IF EXISTS search_vector")


class Migration(migrations.Migration):

    dependencies = [
        ('accounts', '0002_study_discuss_after_reveal'),
        ('corpus', '0008_importjob_hydrate'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='SavedView',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('name', models.CharField(max_length=100)),
                ('query', models.CharField(blank=True, max_length=2000)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
            ],
            options={
                'ordering': ['name'],
            },
        ),
        migrations.RemoveIndex(
            model_name='item',
            name='item_relevance',
        ),
        migrations.AddField(
            model_name='item',
            name='decision',
            field=models.CharField(blank=True, db_default='', default='', help_text='Provenance of the current decision.', max_length=16),
        ),
        migrations.AddField(
            model_name='item',
            name='progress',
            field=models.CharField(choices=[('unsampled', 'Not in a round'), ('waiting', 'In a round, not assigned'), ('labelling', 'Being labelled'), ('labelled', 'Labelled'), ('disagreement', 'Disagreement open'), ('decided', 'Decided')], db_default='unsampled', default='unsampled', max_length=16),
        ),
        migrations.AddField(
            model_name='item',
            name='round_number',
            field=models.PositiveIntegerField(db_default=0, default=0, help_text="The item's latest round; 0 for none."),
        ),
        migrations.AddIndex(
            model_name='item',
            index=models.Index(fields=['study', 'relevance', 'id'], name='item_grid_relevance'),
        ),
        migrations.AddIndex(
            model_name='item',
            index=models.Index(fields=['study', 'title', 'id'], name='item_grid_title'),
        ),
        migrations.AddIndex(
            model_name='item',
            index=models.Index(fields=['study', 'source', 'id'], name='item_grid_source'),
        ),
        migrations.AddIndex(
            model_name='item',
            index=models.Index(fields=['study', 'created_at', 'id'], name='item_grid_created'),
        ),
        migrations.AddIndex(
            model_name='item',
            index=models.Index(fields=['study', 'round_number', 'id'], name='item_grid_round'),
        ),
        migrations.AddIndex(
            model_name='item',
            index=models.Index(fields=['study', 'progress', 'id'], name='item_grid_progress'),
        ),
        migrations.AddIndex(
            model_name='item',
            index=models.Index(fields=['study', 'decision', 'id'], name='item_grid_decision'),
        ),
        migrations.AddField(
            model_name='savedview',
            name='study',
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='accounts.study'),
        ),
        migrations.AddField(
            model_name='savedview',
            name='user',
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to=settings.AUTH_USER_MODEL),
        ),
        migrations.AddConstraint(
            model_name='savedview',
            constraint=models.UniqueConstraint(fields=('user', 'study', 'name'), name='savedview_unique_name'),
        ),
        migrations.RunPython(add_fts_index, drop_fts_index, elidable=False),
    ]
