"""Celery tasks of the corpus: thin interfaces over services (ids in, one service call)."""

from __future__ import annotations

from typing import Any

from celery import shared_task

from .jobs import claim_job
from .models import ImportJob
from .services import run_import


@shared_task(bind=True, acks_late=True, ignore_result=True, name="corpus.run_import")
def run_import_task(self: Any, job_id: int) -> None:
    """Run import job `job_id`.

    Idempotent: a message delivered twice (acks_late redelivers after a worker dies) finds the job
    either finished or running with a live heartbeat and does nothing; a job whose worker died is
    claimed again and rerun, which the upsert makes safe.
    """
    job = claim_job(ImportJob, job_id, task_id=getattr(self.request, "id", None) or "")
    if job is None:
        return
    run_import(job)
