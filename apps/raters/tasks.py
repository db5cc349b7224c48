"""Celery tasks of the raters app: thin interfaces over `runs` (ids in, one service call)."""

from __future__ import annotations

from typing import Any

from celery import shared_task

from apps.core.jobs import claim_job

from .models import ModelRun
from .runs import execute_model_run


@shared_task(bind=True, acks_late=True, ignore_result=True, name="raters.run_model")
def run_model_task(self: Any, run_id: int) -> None:
    """Execute model run `run_id` (`runs.execute_model_run`). A message delivered twice finds the run
    finished or live and does nothing; a run whose worker died is claimed again and resumes: the answers
    it stored are not asked again."""
    run = claim_job(ModelRun, run_id, task_id=getattr(self.request, "id", None) or "")
    if run is None:
        return
    execute_model_run(run)
