"""Every write of adjudication's tables: Reviews, decisions with their findings, gold values and source
annotations. Adjudication owns these tables (docs/decisions/0006-one-writer-per-table.md): no other app
writes them, and consolidation, the lead's decision and claim, the gold-label import, the package restore
and the codebook's merges and splits all write through here, inside the caller's transaction (which holds
the item's or the Review's row lock: see the package's locking contract).

Variants behind one signature each:

* a Review: `create_review` / `save_review` (ORM); consolidation's hand-written statements `insert_review`,
  `update_review` and `decide_review` (`sql.py`, PostgreSQL) write the same rows;
* a new current decision: `insert_decision` (one statement of `sql.py` on PostgreSQL, four ORM inserts
  elsewhere), after `supersede` took the previous one out;
* the package restore: `restore_decisions`, `restore_reviews` (COPY on PostgreSQL through
  `core.bulk.insert_rows`, `bulk_create` elsewhere; docs/decisions/0005);
* gold labels following a merge, split or rejection: `move_gold_values`, registered with the codebook as
  its `gold` label store (`adjudication/readers.py`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.db import IntegrityError, connection, transaction
from django.db.models import Q
from django.utils import timezone

from apps.accounts.models import Study, User
from apps.core.bulk import insert_rows
from apps.corpus.models import Item
from apps.taxonomy.label_stores import Moved, remap_category_rows
from apps.taxonomy.models import Category

from ..models import Decision, DecisionFinding, DecisionValue, Review, ReviewState
from . import sql
from .sql import NewDecision, decide_review, insert_review, update_review

__all__ = [
    "RestoredDecision",
    "RestoredGold",
    "RestoredReview",
    "create_review",
    "decide_review",
    "delete_study_gold",
    "insert_decision",
    "insert_review",
    "move_gold_values",
    "restore_decisions",
    "restore_reviews",
    "save_review",
    "supersede",
    "update_review",
    "withdraw",
]


# --- Reviews ----------------------------------------------------------------------------------------


def create_review(item: Item, state: str, dimensions: list[str], round_id: int | None) -> Review:
    """The item's first Review, written with its state in one insert (the item row is locked)."""
    fields = {
        "item": item,
        "study_id": item.study_id,
        "round_id": round_id,
        "state": state,
        "disagreeing_dimensions": dimensions,
        "updated_at": timezone.now(),
    }
    if connection.vendor == "postgresql":  # the item's row lock keeps every other writer of it waiting
        return Review.objects.create(**fields)
    try:
        with transaction.atomic():
            return Review.objects.create(**fields)
    except IntegrityError:
        # Only without row locks (SQLite) can another transaction have created it since our read.
        review = Review.objects.select_for_update().get(item=item)
        save_review(review, state, dimensions, round_id, force=True)
        return review


def save_review(
    review: Review, state: str, dimensions: list[str], round_id: int | None, *, force: bool = False
) -> None:
    changed = force or review.state != state or list(review.disagreeing_dimensions or []) != dimensions
    if not changed and review.round_id == round_id:
        return
    review.state = state
    review.disagreeing_dimensions = dimensions
    if round_id is not None:
        review.round_id = round_id
    if changed:
        review.updated_at = timezone.now()
    review.save(update_fields=["state", "disagreeing_dimensions", "round", "updated_at"])


def release_claim(review: Review) -> None:
    """No lead has the item open any more (it was just decided)."""
    review.claimed_by = None
    review.claimed_at = None
    review.save(update_fields=["claimed_by", "claimed_at"])


def claim_review(item: Item, user: User, now: datetime, ttl: timedelta) -> bool:
    """`user` claims the item's Review unless another lead's claim is younger than `ttl`: one conditional
    UPDATE, so of two leads at once only one wins. Whether `user` holds the claim now."""
    free = Q(claimed_by=None) | Q(claimed_by=user) | Q(claimed_at=None) | Q(claimed_at__lte=now - ttl)
    return bool(Review.objects.filter(free, item=item).update(claimed_by=user, claimed_at=now))


# --- Decisions --------------------------------------------------------------------------------------


def withdraw(decision: Decision) -> None:
    """The decision is no longer current (its item's labels changed and no longer agree)."""
    Decision.objects.filter(pk=decision.pk).update(is_current=False)


def supersede(previous: Decision) -> bool:
    """Take `previous` out of being current, only if it still is; False when another writer was first."""
    return bool(Decision.objects.filter(pk=previous.pk, is_current=True).update(is_current=False))


def insert_decision(new: NewDecision) -> Decision:
    """Write a new current decision with its findings, gold values and source annotations: one statement on
    PostgreSQL (`sql.insert_decision`), the same rows through the ORM elsewhere."""
    if connection.vendor == "postgresql":
        return sql.insert_decision(new)
    decision = Decision.objects.create(**new.fields)
    findings = DecisionFinding.objects.bulk_create(
        DecisionFinding(decision=decision, number=number) for number in range(1, new.findings + 1)
    )
    DecisionValue.objects.bulk_create(
        DecisionValue(finding=findings[v.number - 1], dimension_id=v.dimension_id, category_id=v.category_id)
        for v in new.values
    )
    if new.sources:
        # A new decision has no source rows yet: insert them, skipping the read `set()` would make.
        through = Decision.source_annotations.through
        through.objects.bulk_create(
            [through(decision_id=decision.pk, annotation_id=pk) for pk in new.sources]
        )
    return decision


# --- The package restore (bulk) ---------------------------------------------------------------------

RestoredGold = tuple[int, int, int | None]
"""(dimension id, category id, original category id or None)."""


@dataclass(frozen=True)
class RestoredDecision:
    """A current decision of a package, as it is written into the new study."""

    study_id: int
    item_id: int
    round_id: int | None
    provenance: str
    rationale: str
    decided_by_id: int | None
    decided_at: datetime
    codebook_version: int
    findings: Sequence[Sequence[RestoredGold]]
    """Each gold finding's values, numbered from 1 in order."""
    sources: Sequence[int] = field(default=())
    """The submitted annotations behind it."""


@dataclass(frozen=True)
class RestoredReview:
    item_id: int
    study_id: int
    round_id: int | None
    state: str
    updated_at: datetime
    disagreeing_dimensions: list[str] = field(default_factory=list)


def restore_decisions(decisions: Sequence[RestoredDecision]) -> None:
    """Each current decision with its findings, values and source annotations, and its item's ``decided``
    Review, in bulk (COPY on PostgreSQL)."""
    if not decisions:
        return
    decision_ids = insert_rows(
        Decision,
        (
            {
                "study_id": d.study_id,
                "item_id": d.item_id,
                "round_id": d.round_id,
                "provenance": d.provenance,
                "rationale": d.rationale,
                "decided_by_id": d.decided_by_id,
                "decided_at": d.decided_at,
                "is_current": True,
                "changes": {},
                "codebook_version": d.codebook_version,
            }
            for d in decisions
        ),
        returning=True,
    )
    numbered = [
        (decision_id, number, values)
        for d, decision_id in zip(decisions, decision_ids, strict=True)
        for number, values in enumerate(d.findings, start=1)
    ]
    finding_ids = insert_rows(
        DecisionFinding,
        ({"decision_id": decision_id, "number": number} for decision_id, number, _ in numbered),
        returning=True,
    )
    insert_rows(
        DecisionValue,
        (
            {
                "finding_id": finding_id,
                "dimension_id": dimension_id,
                "category_id": category_id,
                "original_category_id": original_id,
            }
            for finding_id, (_, _, values) in zip(finding_ids, numbered, strict=True)
            for dimension_id, category_id, original_id in values
        ),
    )
    del numbered, finding_ids
    insert_rows(
        Decision.source_annotations.through,
        (
            {"decision_id": decision_id, "annotation_id": annotation_id}
            for d, decision_id in zip(decisions, decision_ids, strict=True)
            for annotation_id in d.sources
        ),
    )
    restore_reviews(
        RestoredReview(d.item_id, d.study_id, d.round_id, ReviewState.DECIDED, d.decided_at)
        for d in decisions
    )


def restore_reviews(reviews: Iterable[RestoredReview]) -> None:
    """Reviews in bulk, in the order given (COPY on PostgreSQL)."""
    insert_rows(Review, (_review_row(r) for r in reviews))


def _review_row(review: RestoredReview) -> dict[str, Any]:
    return {
        "item_id": review.item_id,
        "study_id": review.study_id,
        "round_id": review.round_id,
        "state": review.state,
        "disagreeing_dimensions": review.disagreeing_dimensions,
        "updated_at": review.updated_at,
    }


def delete_study_gold(study: Study) -> None:
    """Every gold value of the study, and the links between its decisions, before the study's deletion
    cascades (a gold value protects its category; a decision the one it supersedes)."""
    DecisionValue.objects.filter(finding__decision__study=study).delete()
    Decision.objects.filter(study=study).update(supersedes=None)


# --- Following the codebook -------------------------------------------------------------------------


def move_gold_values(source: Category, target: Category, ids: Sequence[int] | None) -> Moved:
    """Gold labels on `source` (all, or the decision values `ids`) moved to `target`
    (`label_stores.remap_category_rows`)."""
    return remap_category_rows(DecisionValue, source, target, ids)
