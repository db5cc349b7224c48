"""Celery tasks of the export app: thin interfaces over services (ids in, one service call)."""

from __future__ import annotations

from typing import Any

from celery import shared_task

from apps.core.jobs import claim_job

from .models import ExportJob
from .services import run_export


@shared_task(bind=True, acks_late=True, ignore_result=True, name="export.export_dataset")
def export_dataset_task(self: Any, job_id: int) -> None:
    """Run export job `job_id`.

    Idempotent: a message delivered twice (acks_late redelivers after a worker dies) finds the job
    finished, or running with a live heartbeat, and does nothing; a job whose worker died is claimed
    again and rerun, which writes a fresh file (exports only read the database).
    """
    job = claim_job(ExportJob, job_id, task_id=getattr(self.request, "id", None) or "")
    if job is None:
        return
    run_export(job)
