"""Celery tasks of the agreement app: thin interfaces over `services` (ids in, one service call)."""

from __future__ import annotations

from typing import Any

from celery import shared_task

from apps.accounts.models import Study
from apps.core.jobs import claim_job

from .fingerprints import fingerprint
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


@shared_task(ignore_result=True, name="agreement.count_fingerprint")
def count_fingerprint_task(study_id: int) -> None:
    """Count study `study_id`'s labels fingerprint into the cache (`fingerprints.fingerprint`), for the
    dashboard that shows its last figures as updating meanwhile. Reads only; a lost message is asked
    again."""
    study = Study.objects.filter(pk=study_id).first()
    if study is not None:
        fingerprint(study)
