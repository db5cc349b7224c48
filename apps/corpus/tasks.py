"""Celery tasks of the corpus: thin interfaces over services (ids in, one service call)."""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task

from apps.accounts.models import Study
from apps.core.jobs import claim_job

from .models import ImportJob
from .services import render_pending, run_import
from .services.search_index import fill_search_vectors

logger = logging.getLogger(__name__)


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
    # The upsert stores every item rendered (issue 25: rendering done when the job ends), so no
    # render task follows; `render_items_task` remains for items stored unrendered by other paths.
    run_import(job)


@shared_task(acks_late=True, ignore_result=True, name="corpus.render_items")
def render_items_task(study_id: int) -> None:
    """Render the study's items that have no HTML yet. Idempotent: rendered items are skipped, and an
    item changed meanwhile is left for the next pass (`render_pending`)."""
    study = Study.objects.filter(pk=study_id).first()
    if study is not None:
        render_pending(study)


@shared_task(acks_late=True, ignore_result=True, name="corpus.index_search")
def index_search_task(study_id: int) -> None:
    """Fill the full-text vectors of the study's items that have none (PostgreSQL). Idempotent."""
    fill_search_vectors(study_id)
