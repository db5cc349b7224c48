"""Consolidation: bring an item's Review and automatic decision up to date with its annotations
(`consolidate_item`; `consolidate_submission`, its short path for a submission on PostgreSQL). The
receivers of annotation's submissions and of codebook changes call these."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from django.db import transaction
from django.utils import timezone

from apps.annotation.completion import ready
from apps.annotation.models import AssignmentStatus
from apps.corpus.models import Item
from apps.taxonomy.index import CodebookIndex

from ..consolidation import consolidate, same_labels
from ..models import Decision, Provenance, Review, ReviewState
from ..queries import (
    ItemLabels,
    decision_findings,
    item_labels,
    labels_from_rows,
)
from .record import AUTOMATIC, Gold, create_review, decision_rows, record_decision, save_review, withdraw
from .sql import DECIDE_REVIEW, INSERT_REVIEW, STATE_WIDTH, SUBMISSION_STATE, UPDATE_REVIEW, decision_params


def consolidate_item(
    item_id: int,
    *,
    remap: Mapping[int, int] | None = None,
    label_remap: Mapping[int, int] | None = None,
    index: CodebookIndex | None = None,
) -> Review | None:
    """Bring the item's Review (and automatic decision) up to date with its annotations.

    While some annotation of the item's round is not submitted the Review is ``annotating``. Once all k
    are, `consolidation.consolidate` under the study's rule gives a unanimous or majority decision (a new
    current decision unless the current one already holds the same labels and provenance) or an open
    disagreement. A decision made by a lead or imported is never replaced here: the Review stays
    ``decided``. An automatic decision whose annotations no longer agree is withdrawn (kept, not current).
    `remap` / `label_remap` let a codebook change in progress count as done (see `queries.item_labels`).
    `index`, the study's current codebook when the caller already holds it, saves reading it again.
    Returns the Review, or None for an item with neither assignments nor decisions.
    """
    # No savepoint when nested (a submission): an error here fails the caller's whole transaction anyway.
    with transaction.atomic(savepoint=False):
        item = Item.objects.select_for_update().select_related("study").filter(pk=item_id).first()
        if item is None:
            return None
        labels = item_labels(item, remap=remap, label_remap=label_remap, index=index, complete_only=True)
        current = Decision.objects.filter(item=item, is_current=True).first()
        if labels.round_id is None and current is None:
            return None
        review = Review.objects.select_for_update().filter(item=item).first()
        dimensions: list[str] = list(review.disagreeing_dimensions or []) if review else []
        if current is not None and current.provenance not in AUTOMATIC:
            state = ReviewState.DECIDED
        elif not labels.consolidable:  # not all submitted, or fewer than two or than the overlap: waits
            if current is not None:
                withdraw(current)
            state, dimensions = ReviewState.ANNOTATING, []
        else:
            result = consolidate(labels.findings, rule=item.study.consolidation_rule)
            dimensions = list(result.disagreeing_dimensions)
            if result.decided:
                gold = list(result.findings)
                provenance = Provenance(result.outcome.value)
                unchanged = (
                    current is not None
                    and current.provenance == provenance
                    and same_labels(decision_findings(current, remap=labels.follow), gold)
                )
                if not unchanged:
                    record_decision(
                        item,
                        gold,
                        provenance,
                        labels,
                        previous=current,
                        actor=None,
                        rationale="",
                        index=index,
                    )
                state = ReviewState.DECIDED
            else:
                if current is not None:
                    withdraw(current)
                state = ReviewState.DISAGREEMENT
        if review is None:
            return create_review(item, state, dimensions, labels.round_id)
        save_review(review, state, dimensions, labels.round_id)
        return review


def consolidate_submission(item_id: int, *, index: CodebookIndex | None = None) -> None:
    """`consolidate_item` for the item of a submission that holds the item's row lock already (PostgreSQL,
    `index` the codebook the submission validated against, share-locked).

    The same outcomes in fewer statements: one read of the item's state, which also opens the Review of an
    item's first annotation (``annotating``); while the round is not all submitted, at most one more write
    of its Review; when this submission completes it, one read of the round's labels, `consolidate` under
    the study's rule, the Review and, when the annotators agree, the decision (`record_decision`). An item
    with a current decision, a decided Review, or a Review that a lead changed since the read is left to
    `consolidate_item`, whatever the case."""
    now = timezone.now()
    rows, _ = SUBMISSION_STATE.run(
        {
            "item": item_id,
            "submitted": AssignmentStatus.SUBMITTED.value,
            "annotating": ReviewState.ANNOTATING.value,
            "now": now,
        }
    )
    if not rows:
        return
    state = rows[0][:STATE_WIDTH]
    (
        study_id, rule, round_id, total, done, has_current, review_id, was, dimensions, review_round,
        round_overlap, study_overlap, opened,
    ) = state  # fmt: skip
    if opened:
        return
    if isinstance(dimensions, str):  # jsonb comes as text: Django parses JSON in its fields, not the driver
        dimensions = json.loads(dimensions)
    if index is None or round_id is None or has_current or was == ReviewState.DECIDED:
        consolidate_item(item_id, index=index)
        return
    item = Item(pk=item_id, study_id=study_id)
    decision: tuple[Gold, Provenance, ItemLabels] | None = None
    target, disagreeing = ReviewState.ANNOTATING.value, []
    recorded = _whole(round_overlap) or None  # as `Round.assigned_overlap` reads it
    if ready(submitted=done, assigned=total, overlap=study_overlap if recorded is None else recorded):
        labels = labels_from_rows(item, round_id, index, (r[STATE_WIDTH:] for r in rows if r[STATE_WIDTH]))
        result = consolidate(labels.findings, rule=rule)
        disagreeing = list(result.disagreeing_dimensions)
        if result.decided:
            decision = (list(result.findings), Provenance(result.outcome.value), labels)
            target = ReviewState.DECIDED.value
        else:
            target = ReviewState.DISAGREEMENT.value
    if decision is not None and review_id is not None:
        # The common end of a round: the Review and the decision in one statement.
        gold, provenance, labels = decision
        fields, gold_values, sources = decision_rows(
            item, gold, provenance, labels, previous=None, actor=None, rationale="", round_id=None,
            override=False, index=index,
        )  # fmt: skip
        params = decision_params(fields, len(gold), gold_values, sources)
        review = {"review_state": target, "review_dimensions": json.dumps(disagreeing), "review": review_id}
        decided = DECIDE_REVIEW.one({**params, **review, "was": was})
        if decided is None or not decided[0]:
            consolidate_item(item_id, index=index)
        return
    values = {
        "item": item_id,
        "study": study_id,
        "round": round_id,
        "state": target,
        "dimensions": json.dumps(disagreeing),
        "now": now,
    }
    if review_id is None:
        written = INSERT_REVIEW.one(values) is not None
    else:
        changed = was != target or list(dimensions or []) != disagreeing
        if not changed and review_round == round_id:
            written = True
        else:
            _, count = UPDATE_REVIEW.run({**values, "changed": changed, "review": review_id, "was": was})
            written = count == 1
    if not written:
        consolidate_item(item_id, index=index)
        return
    if decision is not None:
        gold, provenance, labels = decision
        record_decision(item, gold, provenance, labels, previous=None, actor=None, rationale="", index=index)


def _whole(text: str | None) -> int | None:
    """A whole number read as JSON text from the database, or None."""
    return int(text) if text is not None and text.isdigit() else None


def consolidate_items(item_ids: Iterable[int], **options: Any) -> int:
    """`consolidate_item` for each id, each in its own transaction; returns how many were looked at."""
    n = 0
    for item_id in dict.fromkeys(item_ids):
        consolidate_item(item_id, **options)
        n += 1
    return n
