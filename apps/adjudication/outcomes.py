"""Reads of each revealed round's discussion outcomes: items its discussion resolved, items it left to the
lead, items the lead decided, and the causes of disagreement. Reads only; `queries.queue_overview` shows
them on the disagreement queue, the package and the paper read `discussion_outcome_data`, and agreement
reads them through `annotation/outcomes.py`.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Count

from apps.accounts.models import Study
from apps.annotation.models import Round
from apps.annotation.phases import discusses
from apps.annotation.services.causes import cause_counts

from .models import Decision, Provenance, Review


def discussion_outcomes(study: Study) -> list[dict[str, Any]]:
    """Per revealed round that discussed (not one revealed straight to adjudication): items its discussion
    resolved (current decisions ``discussed``), items it did not (open disagreements, waiting for the
    lead) and items the lead decided (``adjudicated``), each kind's share of the three together, and how
    many items carry each cause of disagreement (`annotation.services.causes`). Three queries."""
    revealed = [
        r
        for r in Round.objects.filter(study=study, revealed_at__isnull=False)
        .select_related("study")
        .order_by("number")
        if discusses(r)  # a round revealed straight to adjudication had no discussion to report
    ]
    if not revealed:
        return []
    ids = [r.pk for r in revealed]
    rows = (
        Decision.objects.filter(study=study, is_current=True, round_id__in=ids)
        .order_by()
        .values_list("round_id", "provenance")
        .annotate(n=Count("*"))
        .values_list("round_id", "provenance", "n")
    )
    decided = {(round_id, provenance): n for round_id, provenance, n in rows}
    open_ = dict(
        Review.objects.open_disagreements()
        .filter(study=study, round_id__in=ids)
        .order_by()
        .values_list("round_id")
        .annotate(n=Count("*"))
        .values_list("round_id", "n")
    )
    per_cause: dict[int, list[tuple[str, str, int]]] = {}
    for count in cause_counts(study):
        per_cause.setdefault(count.round, []).append((count.key, count.name, count.n))
    outcomes = []
    for r in revealed:
        resolved = decided.get((r.pk, Provenance.DISCUSSED), 0)
        unresolved = open_.get(r.pk, 0)
        adjudicated = decided.get((r.pk, Provenance.ADJUDICATED), 0)
        total = resolved + unresolved + adjudicated
        outcomes.append(
            {
                "round": r,
                "resolved": resolved,
                "unresolved": unresolved,
                "adjudicated": adjudicated,
                "share_discussion": resolved / total if total else None,
                "share_adjudicator": adjudicated / total if total else None,
                "causes": per_cause.get(r.number, []),
            }
        )
    return outcomes


def outcome_data(outcome: dict[str, Any]) -> dict[str, Any]:
    """One `discussion_outcomes` row as plain data (cause keys to counts): the package's and agreement's
    shape (`annotation/outcomes.py`)."""
    return {
        "resolved_by_discussion": outcome["resolved"],
        "adjudicated": outcome["adjudicated"],
        "unresolved": outcome["unresolved"],
        "share_discussion": outcome["share_discussion"],
        "share_adjudicator": outcome["share_adjudicator"],
        "causes": {key: n for key, _, n in outcome["causes"]},
    }


def discussion_outcome_data(study_id: int) -> dict[int, dict[str, Any]]:
    """`outcome_data` of each revealed round of the study, by round number (the reader of
    `annotation/outcomes.py`)."""
    study = Study.objects.get(pk=study_id)
    return {o["round"].number: outcome_data(o) for o in discussion_outcomes(study)}
