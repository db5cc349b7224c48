"""Consolidation: bring an item's Review and automatic decision up to date with its annotations
(`consolidate_item`; `consolidate_submission`, its short path for a submission on PostgreSQL). The
receivers of annotation's submissions and of codebook changes call these."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from django.db import transaction
from django.utils import timezone

from apps.annotation.completion import ready
from apps.annotation.models import Revision
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
from .record import AUTOMATIC, Gold, create_review, new_decision, record_decision, save_review, withdraw
from .sql import decide_review, insert_review, read_submission_state, update_review


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
                if labels.round_id is not None and revised_in_round(item.pk, labels.round_id):
                    provenance = Provenance.DISCUSSED
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


def revised_in_round(item_id: int, round_id: int) -> bool:
    """Whether an annotator of the item revised their labels in the round's discussion: then labels that
    agree were agreed by discussion (provenance ``discussed``), not blind."""
    return Revision.objects.filter(
        annotation__assignment__item_id=item_id, annotation__assignment__round_id=round_id
    ).exists()


def consolidate_submission(item_id: int, *, index: CodebookIndex | None = None) -> None:
    """`consolidate_item` for the item of a submission that holds the item's row lock already (PostgreSQL,
    `index` the codebook the submission validated against, share-locked).

    The same outcomes in fewer statements: one read of the item's state, which also opens the Review
    (``annotating``) of an item that has none while its round is not complete (`completion.ready`); while
    the round is not all submitted, at most one more write of its Review; when this submission completes
    it, one read of the round's labels, `consolidate` under the study's rule, the Review and, when the
    annotators agree, the decision (`record_decision`). An item with a current decision, a decided Review,
    or a Review that a lead changed since the read is left to `consolidate_item`, whatever the case."""
    now = timezone.now()
    read = read_submission_state(item_id, now=now)
    if read is None:
        return
    state = read.state
    if state.opened:
        return
    was = state.review_state
    if index is None or state.round_id is None or state.has_current or was == ReviewState.DECIDED:
        consolidate_item(item_id, index=index)
        return
    round_id = state.round_id
    item = Item(pk=item_id, study_id=state.study_id)
    agreed: _Agreed | None = None
    target, disagreeing = ReviewState.ANNOTATING.value, []
    if ready(submitted=state.done, assigned=state.total, overlap=state.overlap):
        labels = labels_from_rows(item, round_id, index, read.round_labels())
        result = consolidate(labels.findings, rule=state.rule)
        disagreeing = list(result.disagreeing_dimensions)
        if result.decided:
            agreed = _Agreed(list(result.findings), Provenance(result.outcome.value), labels)
            target = ReviewState.DECIDED.value
        else:
            target = ReviewState.DISAGREEMENT.value
    if agreed is not None and state.review_id is not None:
        assert was is not None  # a Review has a state
        # The common end of a round: the Review and the decision in one statement.
        new = new_decision(
            item, agreed.gold, agreed.provenance, agreed.labels, previous=None, actor=None, rationale="",
            round_id=None, override=False, index=index,
        )  # fmt: skip
        if not decide_review(new, review_id=state.review_id, was=was, state=target, dimensions=disagreeing):
            consolidate_item(item_id, index=index)
        return
    if state.review_id is None:
        written = insert_review(
            item_id=item_id, study_id=state.study_id, round_id=round_id, state=target, dimensions=disagreeing,
            now=now,
        )  # fmt: skip
    else:
        assert was is not None  # a Review has a state
        changed = was != target or list(state.dimensions or []) != disagreeing
        if not changed and state.review_round == round_id:
            written = True
        else:
            written = update_review(
                state.review_id, was=was, round_id=round_id, state=target, dimensions=disagreeing,
                changed=changed, now=now,
            )  # fmt: skip
    if not written:
        consolidate_item(item_id, index=index)
        return
    if agreed is not None:
        record_decision(
            item, agreed.gold, agreed.provenance, agreed.labels, previous=None, actor=None, rationale="",
            index=index,
        )  # fmt: skip


class _Agreed(NamedTuple):
    """The decision a completed round's annotators agree on, before it is written."""

    gold: Gold
    provenance: Provenance
    labels: ItemLabels


def consolidate_items(item_ids: Iterable[int], **options: Any) -> int:
    """`consolidate_item` for each id, each in its own transaction; returns how many were looked at."""
    n = 0
    for item_id in dict.fromkeys(item_ids):
        consolidate_item(item_id, **options)
        n += 1
    return n
