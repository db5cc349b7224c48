"""Read-only figures about a study: what `study_status` prints and the overview page shows."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db.models import Count, Q

from apps.accounts.models import Role, Study
from apps.annotation.models import Assignment, AssignmentStatus, Round, RoundItem
from apps.core import generations
from apps.corpus.models import Item
from apps.taxonomy.models import Codebook

from .models import Decision, Provenance, Review, ReviewState


@dataclass(frozen=True)
class AssignmentCount:
    """How many of the study's assignments have one annotator, round and status."""

    annotator: str
    round_id: int
    status: str
    n: int


def assignment_counts(study: Study) -> list[AssignmentCount]:
    """The study's assignments counted by annotator, round and status, in annotator order: one scan of
    the assignments, from which `study_status`, `progress_by_annotator` and `progress_by_round` can all
    be computed (the overview page would otherwise scan them three times, docs/performance.md)."""
    rows = (
        Assignment.objects.filter(study=study)
        .values_list("annotator__username", "round_id", "status")
        .annotate(n=Count("id"))
        .order_by("annotator__username")
    )
    return [AssignmentCount(*row) for row in rows]


def study_status(study: Study, counts: Sequence[AssignmentCount] | None = None) -> dict[str, Any]:
    """The docs/design.md §4 status object; a constant number of queries whatever the study's size.
    `counts` (from `assignment_counts`), when the caller has them, spare a scan of the assignments."""
    if counts is None:
        assignments = Assignment.objects.filter(study=study).aggregate(
            open=Count("id", filter=Q(status=AssignmentStatus.OPEN)),
            submitted=Count("id", filter=Q(status=AssignmentStatus.SUBMITTED)),
        )
    else:
        assignments = {
            key: sum(c.n for c in counts if c.status == status)
            for key, status in (("open", AssignmentStatus.OPEN), ("submitted", AssignmentStatus.SUBMITTED))
        }
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


@dataclass(frozen=True)
class Overview:
    """The study page's figures: the status object and the lead's progress per annotator and per round."""

    status: dict[str, Any]
    annotators: list[dict[str, Any]]
    rounds: list[dict[str, Any]]


def overview(study: Study) -> Overview:
    """`Overview` of `study`, from the cache while nothing in the study has changed
    (`apps.core.generations.study_figures`): computing it scans every assignment, decision and review of the
    study (70 ms at 100,000 items), and the study page and the status endpoint show it on every view."""

    def compute() -> Overview:
        counts = assignment_counts(study)
        return Overview(
            status=study_status(study, counts),
            annotators=progress_by_annotator(study, counts),
            rounds=progress_by_round(study, counts),
        )

    return generations.study_figures(study, "adjudication.overview", compute)


def blind_status(status: dict[str, Any]) -> dict[str, Any]:
    """What an annotator may read of the study's status: the same object with `decisions` and
    `disagreements_open` set to None. Those two move with the other annotators' labels: when an annotator
    submits on a shared item, the item becomes a unanimous decision or an open disagreement, so watching
    either count before and after tells them whether (on two categories, which way) the other chose
    differently. Items, rounds, the assignments' progress and the codebook version move with submissions,
    never with what was chosen, and stay."""
    return {**status, "decisions": None, "disagreements_open": None}


def status_for(study: Study, role: str) -> dict[str, Any]:
    """`study_status` as the member with `role` may read it: leads and owners in full, annotators blind
    (`blind_status`), from the cached `overview`. Pages and the API read the status through this."""
    status = overview(study).status
    return status if role in (Role.LEAD, Role.OWNER) else blind_status(status)


def progress_by_annotator(
    study: Study, counts: Sequence[AssignmentCount] | None = None
) -> list[dict[str, Any]]:
    """Per annotator, in username order: assigned, submitted and open items over all rounds."""
    per_annotator: dict[str, dict[str, Any]] = {}
    for c in assignment_counts(study) if counts is None else counts:
        row = per_annotator.setdefault(
            c.annotator, {"annotator__username": c.annotator, "total": 0, "submitted": 0}
        )
        row["total"] += c.n
        if c.status == AssignmentStatus.SUBMITTED:
            row["submitted"] += c.n
    rows = per_annotator.values()
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


def progress_by_round(study: Study, counts: Sequence[AssignmentCount] | None = None) -> list[dict[str, Any]]:
    """Per round: items, assignments and submitted assignments. Three grouped queries (two with `counts`
    from `assignment_counts`): counting both relations in one query joins every round item with every
    assignment of its round (69 s for a study of 10,000 items, docs/performance.md)."""
    items = dict(
        RoundItem.objects.filter(round__study=study)
        .values_list("round_id")
        .annotate(n=Count("id"))
        .values_list("round_id", "n")
    )
    work: dict[int, dict[str, int]] = {}
    for c in assignment_counts(study) if counts is None else counts:
        counted = work.setdefault(c.round_id, {"total": 0, "done": 0})
        counted["total"] += c.n
        if c.status == AssignmentStatus.SUBMITTED:
            counted["done"] += c.n
    out = []
    for r in Round.objects.filter(study=study).order_by("number"):
        tally = work.get(r.pk, {"total": 0, "done": 0})
        out.append(
            {
                "round": r,
                "items": items.get(r.pk, 0),
                "assignments": tally["total"],
                "submitted": tally["done"],
                "percent": round(100 * tally["done"] / tally["total"]) if tally["total"] else 0,
            }
        )
    return out
