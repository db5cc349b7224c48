"""Recording a decision: what a new current decision holds (`new_decision`, its `changes`), written
through `writes.py` (`record_decision`), which also holds the Review's writes these modules share
(`create_review`, `save_review`, `withdraw`, re-exported here). A new current decision supersedes the
previous one (kept, not current), never overwrites it; every function runs inside the caller's
transaction, which holds the item's or the Review's row lock (see the package's locking contract)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.utils import timezone

from apps.accounts.models import User
from apps.corpus.models import Item
from apps.taxonomy.index import CodebookIndex

from ..consolidation import PENDING, Findings, change
from ..models import Decision, Provenance
from ..queries import (
    ItemLabels,
    decision_findings,
)
from .errors import DecisionConflict, conflict_message
from .sql import GoldValue, NewDecision
from .writes import create_review, insert_decision, save_review, supersede, withdraw

__all__ = [
    "AUTOMATIC",
    "Gold",
    "create_review",
    "new_decision",
    "record_decision",
    "save_review",
    "withdraw",
]

# Decisions consolidation makes, and withdraws when the labels no longer agree (a revision in discussion).
AUTOMATIC = frozenset({Provenance.UNANIMOUS, Provenance.MAJORITY, Provenance.DISCUSSED})
Gold = list[dict[str, frozenset[int]]]


def record_decision(
    item: Item,
    gold: Gold,
    provenance: Provenance,
    labels: ItemLabels,
    *,
    previous: Decision | None,
    actor: User | None,
    rationale: str,
    round_id: int | None = None,
    override: bool = False,
    index: CodebookIndex | None = None,
) -> Decision:
    """Write a new current decision superseding `previous` (inside the caller's transaction)."""
    index = index or CodebookIndex.for_study(item.study)
    # Only the row still current may be superseded: 0 rows means someone else got there first.
    if previous is not None and not supersede(previous):
        raise DecisionConflict(conflict_message(None, previous.pk), None)
    new = new_decision(
        item, gold, provenance, labels, previous=previous, actor=actor, rationale=rationale,
        round_id=round_id, override=override, index=index,
    )  # fmt: skip
    return insert_decision(new)


def new_decision(
    item: Item,
    gold: Gold,
    provenance: Provenance,
    labels: ItemLabels,
    *,
    previous: Decision | None,
    actor: User | None,
    rationale: str,
    round_id: int | None,
    override: bool,
    index: CodebookIndex,
) -> NewDecision:
    """A new current decision superseding `previous`, as `record_decision` and the statements of `sql`
    write it: its fields, its gold values and its source annotations."""
    fields: dict[str, Any] = {
        "study_id": item.study_id,
        "item": item,
        "round_id": round_id or labels.round_id,
        "provenance": provenance,
        "rationale": rationale,
        "decided_by": actor,
        "decided_at": timezone.now(),
        "is_current": True,
        "supersedes": previous,
        "changes": _changes(gold, labels, previous, index, override),
        "codebook_version": index.version,
    }
    values = [
        GoldValue(number, index.dimension(key).id, category_id)
        for number, finding in enumerate(gold, start=1)
        for key, ids in finding.items()
        for category_id in sorted(ids)
    ]
    return NewDecision(fields, len(gold), values, [a.pk for a in dict.fromkeys(labels.annotations)])


def _keys(values: Iterable[int | str], index: CodebookIndex) -> list[str]:
    return [
        PENDING if v == PENDING else (index.categories[v].key if v in index.categories else str(v))
        for v in values
        if isinstance(v, int) or v == PENDING
    ]


def _changes(
    gold: Gold, labels: ItemLabels, previous: Decision | None, index: CodebookIndex, override: bool
) -> dict[str, Any]:
    """The decision's `changes` JSON: per source annotation (and against the decision it supersedes),
    whether the labels are identical, the finding counts, and each differing dimension's category keys."""

    def describe(findings: Findings) -> dict[str, Any]:
        diff = change(findings, gold)
        return {
            "identical": diff.identical,
            "findings": [diff.findings_from, diff.findings_to],
            "dimensions": {
                d: {"from": _keys(before, index), "to": _keys(after, index)}
                for d, (before, after) in diff.dimensions.items()
            },
        }

    out: dict[str, Any] = {
        "annotations": [
            {"annotation": a.pk, "annotator_id": a.assignment.annotator_id, **describe(f)}
            for a, f in zip(labels.annotations, labels.findings, strict=True)
        ],
        "override": override,
    }
    if previous is not None:
        out["previous"] = {"decision": previous.pk, **describe(decision_findings(previous))}
    return out
