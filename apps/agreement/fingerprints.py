"""A dashboard snapshot's *fingerprint*: what it was computed on (the codebook version, and the number and
latest change of the submitted annotations and label values), counted once per change of the labels
(`freshness.cached`: a second at 100,000 items) and, for a large study, in the background
(`count_fingerprint_soon`) while the dashboard shows its last figures as updating."""

from __future__ import annotations

import logging
from typing import Any

from django.db import transaction
from django.db.models import Count, Max

from apps.accounts.models import Study
from apps.annotation.models import Annotation, LabelValue
from apps.taxonomy.models import Codebook

from . import freshness

logger = logging.getLogger(__name__)


def fingerprint(study: Study) -> dict[str, Any]:
    """What a dashboard snapshot depends on: the codebook version, and the submitted annotations (their
    number and latest change) and label values (their number, which decides sync or background).

    The version is read every time (one query); the rest, aggregates over every label of the study (a
    second at 100,000 items), once per change of the labels (`freshness.cached`)."""
    codebook_id, version = codebook_of(study)
    labels = freshness.cached(study, codebook_id, "fingerprint", lambda: _labels_fingerprint(study))
    return {"codebook_version": version, **labels}


def codebook_of(study: Study) -> tuple[int | None, int]:
    """The study's codebook id and version; (None, 0) without a codebook."""
    row = Codebook.objects.filter(study=study).values_list("pk", "version").first()
    return (row[0], row[1] or 0) if row is not None else (None, 0)


def _labels_fingerprint(study: Study) -> dict[str, Any]:
    annotations = Annotation.objects.filter(assignment__study=study, submitted_at__isnull=False).aggregate(
        n=Count("id"), updated=Max("updated_at"), submitted=Max("submitted_at")
    )
    last = max((t for t in (annotations["updated"], annotations["submitted"]) if t is not None), default=None)
    return {
        "annotations": annotations["n"],
        "last_change": last.isoformat() if last is not None else None,
        "ratings": LabelValue.objects.filter(
            finding__annotation__assignment__study=study, finding__annotation__submitted_at__isnull=False
        ).count(),
    }


def known_fingerprint(study: Study) -> dict[str, Any] | None:
    """`fingerprint(study)` when its labels part is in the cache for the labels as they are, else None
    (nothing is counted)."""
    codebook_id, version = codebook_of(study)
    hit = freshness.peek(study, codebook_id, "fingerprint")
    return None if hit is None else {"codebook_version": version, **hit[0]}


def count_fingerprint_soon(study: Study) -> None:
    """Count the study's labels fingerprint in the background (`tasks.count_fingerprint_task`), once per
    change of the labels whoever asks: the dashboard shows its last figures marked as updating meanwhile,
    and asks again. With the broker down, nothing is sent; the page counts it itself after a while
    (`views.dashboard_check`)."""
    from .tasks import count_fingerprint_task  # tasks import this module

    codebook_id, _ = codebook_of(study)
    if freshness.peek(study, codebook_id, "fingerprint:asked") is not None:
        return
    freshness.cached(study, codebook_id, "fingerprint:asked", lambda: True)

    def send() -> None:
        try:
            count_fingerprint_task.delay(study.pk)
        except Exception as exc:  # the broker's own errors
            logger.warning("fingerprint of study %s not sent to a worker: %s", study.pk, exc)

    transaction.on_commit(send)
