"""The import task: the job ends with the upsert, which stores every item rendered; the render task
renders what other paths stored unrendered."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from apps.accounts.models import Study
from apps.core.models import JobStatus
from apps.corpus import services, tasks
from apps.corpus.models import Item
from apps.corpus.params import FileParams

from .conftest import make_record

pytestmark = pytest.mark.django_db


def _job(study: Study, tmp_path: Path, n: int = 12) -> Any:
    path = tmp_path / "items.jsonl"
    lines = [
        json.dumps({"url": f"https://example.org/p/{i}", "title": f"P{i}", "body": f"*{i}*"})
        for i in range(n)
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return services.create_import_job(study, FileParams(format="jsonl"), upload=path)


def test_the_import_job_ends_with_every_item_rendered_and_queues_no_render_task(
    study: Study, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent: list[tuple[Any, ...]] = []
    monkeypatch.setattr(tasks.render_items_task, "apply_async", lambda args, **kw: sent.append(args))
    job = _job(study, tmp_path)

    tasks.run_import_task.apply(args=(job.pk,))

    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED and job.created == 12
    assert not Item.objects.in_study(study).unrendered().exists()
    assert "<em>3</em>" in Item.objects.get(url="https://example.org/p/3").body_html
    assert sent == []


def test_the_render_task_renders_items_stored_unrendered(study: Study) -> None:
    services.upsert_records(study, [make_record(n, body=f"*{n}*") for n in range(3)], render=False)

    tasks.render_items_task.apply(args=(study.pk,))

    assert not Item.objects.in_study(study).unrendered().exists()
    assert "<em>2</em>" in Item.objects.get(url=make_record(2).url).body_html


def test_an_import_queued_before_its_study_was_archived_does_not_run(study: Study, tmp_path: Path) -> None:
    from django.utils import timezone

    job = _job(study, tmp_path)
    Study.objects.filter(pk=study.pk).update(archived_at=timezone.now())  # archived while the job waited

    tasks.run_import_task.apply(args=(job.pk,))

    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert f"study {study.slug} was archived after this job was queued" in job.message
    assert not Item.objects.in_study(study).exists()
    Study.objects.filter(pk=study.pk).update(archived_at=None)
    again = _job(study, tmp_path)
    tasks.run_import_task.apply(args=(again.pk,))
    again.refresh_from_db()
    assert again.status == JobStatus.SUCCEEDED and Item.objects.in_study(study).count() == 12


def test_the_study_pages_count_what_an_import_job_wrote(study: Study, tmp_path: Path) -> None:
    """A writing job forgets its study's cached figures as it writes, so the study page, whose figures are
    cached between changes, counts the imported items once the job has committed them."""
    from apps.adjudication.status import overview

    assert overview(study).status["items"] == 0  # now cached
    tasks.run_import_task.apply(args=(_job(study, tmp_path).pk,))
    assert overview(study).status["items"] == 12
