"""Read-only figures about a study: what `study_status` prints and the overview page shows."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, Q

from apps.accounts.models import Study
from apps.annotation.models import Assignment, AssignmentStatus, Round, RoundItem
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
    """Per round: items, assignments and submitted assignments. Three grouped queries: counting both
    relations in one query joins every round item with every assignment of its round (69 s for a study
    of 10,000 items, docs/performance.md)."""
    items = dict(
        RoundItem.objects.filter(round__study=study)
        .values_list("round_id")
        .annotate(n=Count("id"))
        .values_list("round_id", "n")
    )
    work = {
        r["round_id"]: r
        for r in Assignment.objects.filter(study=study)
        .values("round_id")
        .annotate(total=Count("id"), done=Count("id", filter=Q(status=AssignmentStatus.SUBMITTED)))
        .order_by()
    }
    out = []
    for r in Round.objects.filter(study=study).order_by("number"):
        counts = work.get(r.pk, {"total": 0, "done": 0})
        out.append(
            {
                "round": r,
                "items": items.get(r.pk, 0),
                "assignments": counts["total"],
                "submitted": counts["done"],
                "percent": round(100 * counts["done"] / counts["total"]) if counts["total"] else 0,
            }
        )
    return out
