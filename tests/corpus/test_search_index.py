"""The full-text column on PostgreSQL: filled after an import, cleared when a title or body changes, and a
search complete meanwhile (issue 25: computing it on every insert cost half of an import's time).

SQLite keeps its FTS5 index by triggers (tests/corpus/test_grid.py searches on both databases); what is
tested here is the PostgreSQL column, which SQLite does not have, so these tests run in CI's PostgreSQL
pass and are skipped, saying so, on SQLite.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connection, transaction

from apps.accounts.models import Study
from apps.core.models import JobStatus
from apps.corpus import services
from apps.corpus.models import ImportKind, Item
from apps.corpus.params import params_from_json
from apps.corpus.search import matches
from apps.corpus.services.search_index import fill_search_vectors, pending_search_vectors
from tests.factories import ItemFactory

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(connection.vendor != "postgresql", reason="the search column is PostgreSQL's"),
]


def vector_of(item: Item) -> str | None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT search_vector::text FROM corpus_item WHERE id = %s", [item.pk])
        value: str | None = cursor.fetchone()[0]
        return value


def found(text: str) -> list[int]:
    return sorted(Item.objects.filter(matches(text)).values_list("id", flat=True))


def write_items(path: Path, count: int) -> Path:
    lines = [f'{{"url": "https://github.com/a/b/issues/{n}", "title": "NCCL hang {n}", "body": "allreduce"}}'
             for n in range(count)]  # fmt: skip
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_an_import_job_leaves_its_items_to_a_worker_that_fills_every_vector(
    study: Study, tmp_path: Path, django_capture_on_commit_callbacks: object
) -> None:
    job = services.create_import_job(study, params_from_json(ImportKind.FILE, {}))
    job.upload = str(write_items(tmp_path / "items.jsonl", 5))
    job.save(update_fields=["upload"])

    with django_capture_on_commit_callbacks() as on_commit:  # type: ignore[operator]
        services.run_import(job)

    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED and job.created == 5
    assert pending_search_vectors(study.pk) == 5  # the job ended without parsing them
    for callback in on_commit:  # the commit sends the worker's task (eager in tests: it runs here)
        callback()
    assert pending_search_vectors(study.pk) == 0
    assert "'allreduc':" in (vector_of(Item.objects.filter(study=study).first()) or "")


def test_a_search_finds_items_whose_vector_is_not_filled_yet(study: Study) -> None:
    waiting = ItemFactory(study=study, title="Training stops", body="The allreduce hangs after NCCL upgrade")
    ItemFactory(study=study, title="Pandas question", body="How do I merge frames?")

    assert vector_of(waiting) is None and pending_search_vectors(study.pk) == 2
    assert found("hang nccl") == [waiting.pk]
    assert fill_search_vectors(study.pk) == 2
    assert found("hang nccl") == [waiting.pk]  # now through the column


def test_a_changed_body_clears_its_vector_so_a_stale_one_never_answers(study: Study) -> None:
    item = ItemFactory(study=study, title="Training stops", body="The allreduce hangs")
    fill_search_vectors(study.pk)
    Item.objects.filter(pk=item.pk).update(metadata={"venue": "ICSE"})  # other columns keep the vector
    assert vector_of(item) is not None

    Item.objects.filter(pk=item.pk).update(body="Gradient overflow in fp16")

    assert vector_of(item) is None
    assert found("allreduce") == [] and found("overflow") == [item.pk]
    fill_search_vectors(study.pk)
    assert found("allreduce") == [] and found("overflow") == [item.pk]


def test_the_fill_works_in_batches_and_only_on_the_studys_waiting_items(study: Study) -> None:
    other = Study.objects.create(slug="other", name="Other")
    ItemFactory.create_batch(5, study=study)
    ItemFactory(study=other)

    assert fill_search_vectors(study.pk, batch=2) == 5
    assert fill_search_vectors(study.pk, batch=2) == 0
    assert pending_search_vectors(study.pk) == 0 and pending_search_vectors(other.pk) == 1


def test_a_search_reads_the_two_indexes_not_every_body(study: Study) -> None:
    """The filled rows through the GIN index, the waiting ones through the partial index: with sequential and
    plain index scans off, the plan can only be cheap as a bitmap OR of both."""
    ItemFactory(study=study, title="Training stops", body="The allreduce hangs after NCCL upgrade")
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("SET LOCAL enable_indexscan = off")
        plan = Item.objects.filter(matches("deadlock")).explain()
    assert "BitmapOr" in plan and "item_fts" in plan and "item_search_pending" in plan, plan


def test_the_import_command_fills_the_vectors_before_it_returns(study: Study, tmp_path: Path) -> None:
    path = write_items(tmp_path / "items.jsonl", 3)

    call_command("import_items", study.slug, str(path), stdout=io.StringIO(), stderr=io.StringIO())

    assert Item.objects.filter(study=study).count() == 3
    assert pending_search_vectors(study.pk) == 0
