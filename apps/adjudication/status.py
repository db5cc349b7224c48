"""Read-only figures about a study: what `study_status` prints and the overview page shows."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, Q

from apps.accounts.models import Study
from apps.annotation.models import Assignment, AssignmentStatus, Round
from apps.corpus.models import Item
from apps.taxonomy.models import Codebook

from .models import Decision, Provenance, Review, ReviewState


def study_status(study: Study) -> dict[str, Any]:
    """The DESIGN.md §4 status object; a constant number of queries whatever the study's size."""
    assignments = Assignment.objects.filter(study=study).aggregate(
        open=Count("id", filter=Q(status=AssignmentStatus.OPEN)),
        submitted=Count("id", filter=Q(status=AssignmentStatus.SUBMITTED)),
    )
    by_provenance = dict(
        Decision.objects.filter(study=study, is_current=True)
        .values_list("provenance")
        .annotate(n=Count("id"))
        .values_list("provenance", "n")
    )
    version = Codebook.objects.filter(study=study).values_list("version", flat=True).first()
    return {
        "items": Item.objects.filter(study=study).count(),
        "rounds": Round.objects.filter(study=study).count(),
        "assignments": {"open": assignments["open"], "submitted": assignments["submitted"]},
        "decisions": {p.value: by_provenance.get(p.value, 0) for p in Provenance},
        "disagreements_open": Review.objects.filter(study=study, state=ReviewState.DISAGREEMENT).count(),
        "codebook_version": version or 0,
    }


def progress_by_annotator(study: Study) -> list[dict[str, Any]]:
    """Per annotator: assigned, submitted and open items over all rounds."""
    rows = (
        Assignment.objects.filter(study=study)
        .values("annotator__username")
        .annotate(
            total=Count("id"),
            submitted=Count("id", filter=Q(status=AssignmentStatus.SUBMITTED)),
        )
        .order_by("annotator__username")
    )
    return [
        {
            "annotator": r["annotator__username"],
            "total": r["total"],
            "submitted": r["submitted"],
            "open": r["total"] - r["submitted"],
            "percent": round(100 * r["submitted"] / r["total"]) if r["total"] else 0,
        }
        for r in rows
    ]


def progress_by_round(study: Study) -> list[dict[str, Any]]:
    rows = (
        Round.objects.filter(study=study)
        .annotate(
            n_items=Count("round_items", distinct=True),
            n_assign=Count("assignments", distinct=True),
            n_done=Count(
                "assignments", filter=Q(assignments__status=AssignmentStatus.SUBMITTED), distinct=True
            ),
        )
        .order_by("number")
    )
    return [
        {
            "round": r,
            "items": r.n_items,
            "assignments": r.n_assign,
            "submitted": r.n_done,
            "percent": round(100 * r.n_done / r.n_assign) if r.n_assign else 0,
        }
        for r in rows
    ]
