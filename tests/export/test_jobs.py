"""The export job lifecycle: queued, running, succeeded with a checksummed file, or failed cleanly."""

from __future__ import annotations

import hashlib
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone

from apps.accounts.models import Study, User
from apps.annotation.models import Round
from apps.core.models import JobStatus
from apps.export import services
from apps.export.models import ExportJob
from apps.export.rows import ExportOptions
from apps.export.tasks import export_dataset_task

pytestmark = pytest.mark.django_db


def test_a_submitted_export_is_queued_then_run_by_the_task_on_commit(
    labelled: Study, lead: User, export_root: Path, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        job = services.submit_export(labelled, ExportOptions(format="csv", raw=True), user=lead)
    assert job.status == JobStatus.QUEUED and not services.is_downloadable(job)
    assert len(callbacks) == 1
    callbacks[0]()  # the eager Celery task runs the job
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED, job.error
    assert job.options == {"raw": True, "round": None, "provenance": None, "source": None, "level": None}
    path = services.stored_path(job)
    assert path is not None and path.parent == export_root / "ddp"
    assert job.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert job.file_size == path.stat().st_size
    assert job.row_count == 9 and job.codebook_version == 1
    assert job.progress_done == job.progress_total == 4
    assert job.finished_at is not None and job.started_at is not None
    assert services.is_downloadable(job)
    assert sorted(p.name for p in path.parent.iterdir()) == [f"ddp-export-{job.pk}.csv"]


def test_the_task_is_idempotent_for_a_finished_job(labelled: Study, export_root: Path) -> None:
    job = services.export_in_foreground(labelled, ExportOptions(format="json"))
    job.refresh_from_db()
    finished, digest = job.finished_at, job.sha256
    export_dataset_task.delay(job.pk)
    job.refresh_from_db()
    assert (job.status, job.finished_at, job.sha256) == (JobStatus.SUCCEEDED, finished, digest)


def test_a_running_job_with_a_live_heartbeat_is_left_alone(labelled: Study) -> None:
    job = services.create_export(labelled, ExportOptions(format="csv"))
    ExportJob.objects.filter(pk=job.pk).update(status=JobStatus.RUNNING, heartbeat_at=timezone.now())
    export_dataset_task.delay(job.pk)
    job.refresh_from_db()
    assert job.status == JobStatus.RUNNING and not job.sha256


def test_a_stalled_job_is_claimed_again_and_completed(labelled: Study) -> None:
    job = services.create_export(labelled, ExportOptions(format="zip"))
    long_ago = timezone.now() - timedelta(hours=2)
    ExportJob.objects.filter(pk=job.pk).update(
        status=JobStatus.RUNNING, started_at=long_ago, heartbeat_at=long_ago
    )
    export_dataset_task.delay(job.pk)
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED
    assert services.file_name(job) == f"ddp-replication-package-{job.pk}.zip"
    assert services.is_downloadable(job)


def test_a_failing_export_leaves_no_file_and_records_the_error(
    labelled: Study, export_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: Any, **kwargs: Any) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(services, "sha256_of", broken)
    job = services.create_export(labelled, ExportOptions(format="csv"))
    with pytest.raises(OSError, match="disk full"):
        services.run_export(job)
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert "disk full" in job.error
    assert not job.sha256 and not job.file_path
    assert not services.is_downloadable(job)
    assert list((export_root / "ddp").iterdir()) == []


def test_a_job_whose_options_became_invalid_fails_with_the_reason(labelled: Study, export_root: Path) -> None:
    job = services.create_export(labelled, ExportOptions(format="csv", round=2))
    Round.objects.filter(study=labelled, number=2).delete()
    services.run_export(job)
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert job.error == "unknown round 2; valid rounds: 1"
    assert list((export_root / "ddp").iterdir()) == []


def test_a_recorded_path_outside_the_export_root_is_never_served(labelled: Study, tmp_path: Path) -> None:
    job = services.export_in_foreground(labelled, ExportOptions(format="csv"))
    outside = tmp_path / "secret.txt"
    outside.write_text("secret")
    ExportJob.objects.filter(pk=job.pk).update(file_path="../secret.txt")
    job.refresh_from_db()
    assert services.stored_path(job) is None
    assert not services.is_downloadable(job)


def test_an_export_started_while_the_queue_is_down_is_sent_when_its_row_is_polled(
    labelled: Study,
    lead: User,
    client: Any,
    monkeypatch: pytest.MonkeyPatch,
    django_capture_on_commit_callbacks: Any,
) -> None:
    from kombu.exceptions import OperationalError

    from apps.core.jobs import QUEUE_UNAVAILABLE

    down = {"value": True}
    original = export_dataset_task.apply_async

    def apply_async(*args: Any, **kwargs: Any) -> Any:
        if down["value"]:
            raise OperationalError("Redis is down")
        return original(*args, **kwargs)

    monkeypatch.setattr(export_dataset_task, "apply_async", apply_async)
    with django_capture_on_commit_callbacks(execute=True):
        job = services.submit_export(labelled, ExportOptions(format="csv"), user=lead)
    job.refresh_from_db()
    assert job.status == JobStatus.QUEUED and job.message == QUEUE_UNAVAILABLE
    down["value"] = False
    client.force_login(lead)
    client.get(f"/studies/ddp/export/jobs/{job.pk}/", HTTP_HX_REQUEST="true")
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED and services.is_downloadable(job)
