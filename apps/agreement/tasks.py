"""Celery tasks of the agreement app: thin interfaces over `services` (ids in, one service call)."""

from __future__ import annotations

from typing import Any

from celery import shared_task

from apps.core.jobs import claim_job

from .models import AgreementSnapshot
from .services import run_snapshot


@shared_task(bind=True, acks_late=True, ignore_result=True, name="agreement.compute_agreement")
def compute_agreement_task(self: Any, snapshot_id: int) -> None:
    """Compute agreement snapshot `snapshot_id` (`services.run_snapshot`).

    Idempotent: a message delivered twice finds the snapshot finished, or running with a live heartbeat,
    and does nothing; a snapshot whose worker died is claimed again and recomputed (it only reads labels).
    """
    snapshot = claim_job(AgreementSnapshot, snapshot_id, task_id=getattr(self.request, "id", None) or "")
    if snapshot is None:
        return
    run_snapshot(snapshot)
