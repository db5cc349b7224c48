"""The import task: the job ends with the upsert, and the render pass follows as a task of its own."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from kombu.exceptions import OperationalError

from apps.accounts.models import Study
from apps.core.models import JobStatus
from apps.corpus import services, tasks
from apps.corpus.models import Item
from apps.corpus.params import FileParams

pytestmark = pytest.mark.django_db


def _job(study: Study, tmp_path: Path, n: int = 12) -> Any:
    path = tmp_path / "items.jsonl"
    lines = [
        json.dumps({"url": f"https://example.org/p/{i}", "title": f"P{i}", "body": f"*{i}*"})
        for i in range(n)
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return services.create_import_job(study, FileParams(format="jsonl"), upload=path)


def test_the_import_job_succeeds_before_rendering_and_the_render_task_follows(
    study: Study, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent: list[tuple[Any, ...]] = []
    monkeypatch.setattr(tasks.render_items_task, "apply_async", lambda args, **kw: sent.append(args))
    job = _job(study, tmp_path)

    tasks.run_import_task.apply(args=(job.pk,))

    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED and job.created == 12
    assert Item.objects.in_study(study).unrendered().count() == 12
    assert sent == [(study.pk,)]
    tasks.render_items_task.apply(args=(study.pk,))
    assert not Item.objects.in_study(study).unrendered().exists()
    assert "<em>3</em>" in Item.objects.get(url="https://example.org/p/3").body_html


def test_without_a_queue_for_the_render_pass_the_import_still_succeeds(
    study: Study, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def unavailable(*args: Any, **kwargs: Any) -> None:
        raise OperationalError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    monkeypatch.setattr(tasks.render_items_task, "apply_async", unavailable)
    job = _job(study, tmp_path)

    tasks.run_import_task.apply(args=(job.pk,))

    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED
    item = services.ensure_rendered(Item.objects.get(url="https://example.org/p/3"))  # what pages do
    assert "<em>3</em>" in item.body_html
