"""The lead's workflow: check a decision's labels against the codebook (`gold_from_keys`), record it
(`decide`, provenance ``adjudicated``, refused on a conflict) and mark the item as open (`claim`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from django.db import IntegrityError, transaction
from django.utils import timezone

from apps.accounts.models import User
from apps.accounts.permissions import can_adjudicate
from apps.corpus.models import Item
from apps.taxonomy.index import CodebookIndex, UnknownDimensionError

from ..consolidation import PENDING, overrides_everyone, same_labels
from ..models import Decision, Provenance, Review, ReviewState
from ..progress import refresh_progress
from ..queries import (
    CLAIM_TTL,
    decision_findings,
    item_labels,
)
from .errors import AdjudicationError, DecisionConflict, conflict_message
from .record import Gold, create_review, record_decision, save_review
from .writes import claim_review, release_claim


def gold_from_keys(
    index: CodebookIndex, findings: Sequence[Mapping[str, Sequence[str] | str]], *, complete: bool
) -> Gold:
    """Check a decision's findings (dimension key → category keys) against the codebook and return them as
    category ids. Refused (AdjudicationError listing every problem by finding, dimension and value): no
    finding, an empty finding, an unknown or retired dimension, a category not in the dimension or not
    active (retired, merged, proposed), *pending*, several categories on a single-choice dimension, a value
    on a dimension that does not apply; with `complete`, an applicable dimension left without a value."""
    problems: list[str] = []
    if not findings:
        problems.append("a decision needs at least one finding")
    gold: Gold = []
    for number, values in enumerate(findings, start=1):
        chosen: dict[str, frozenset[int]] = {}
        for key, keys in values.items():
            where = f"finding {number}, dimension {key!r}"
            try:
                dimension = index.dimension(key)
            except UnknownDimensionError:
                problems.append(f"{where}: not a dimension of the codebook")
                continue
            if dimension.retired:
                problems.append(f"{where}: the dimension is retired")
                continue
            texts = [keys] if isinstance(keys, str) else list(keys)
            texts = [t.strip() for t in texts if t.strip()]
            if any(t.casefold() == PENDING for t in texts):
                problems.append(f"{where}: a decision cannot leave a dimension pending; choose a category")
                continue
            ids: list[int] = []
            for text in texts:
                try:
                    category = index.category_by_key(key, text)
                except LookupError:
                    problems.append(f"{where}, value {text!r}: not a category of {dimension.name!r}")
                    continue
                if not category.is_active:
                    status = category.status
                    if category.merged_into_id in index.categories:
                        status += f" into {index.path(category.merged_into_id)!r}"
                    problems.append(f"{where}, value {text!r}: the category is {status}")
                    continue
                ids.append(category.id)
            if not dimension.multiple and len(set(texts)) > 1:
                problems.append(f"{where}: {dimension.name!r} takes one category, got {', '.join(texts)}")
            if ids:
                chosen[key] = frozenset(ids)
        applicable = {d.key for d in index.applicable_dimensions({k: list(v) for k, v in chosen.items()})}
        for key in chosen:
            if key not in applicable:
                on = index.dimension(key).applies_when
                when = f" (only when {on[0]!r} is {on[1]!r})" if on else ""
                problems.append(f"finding {number}, dimension {key!r}: does not apply to this finding{when}")
        if complete:
            for dimension in index.applicable_dimensions({k: list(v) for k, v in chosen.items()}):
                if dimension.key not in chosen:
                    problems.append(f"finding {number}, dimension {dimension.key!r}: choose a category")
        if not values:
            problems.append(f"finding {number}: the finding is empty")
        gold.append({k: v for k, v in chosen.items() if k in applicable})
    if problems:
        raise AdjudicationError("The decision was not saved:", problems)
    return gold


def decide(
    item: Item,
    findings: Sequence[Mapping[str, Sequence[str] | str]],
    *,
    actor: User,
    rationale: str = "",
    expected_decision_id: int | None,
) -> Decision:
    """Record the lead's decision on `item` (provenance ``adjudicated``) and close its Review.

    `findings` are dimension key → category keys, one mapping per gold finding (`gold_from_keys` checks
    them). `expected_decision_id` is the current decision the lead saw when they opened the item (None when
    there was none): if another decision is current now, nothing is written and DecisionConflict says who
    decided and when. A decision that differs from the current one supersedes it (a reversal; the old one
    is kept). Refused with AdjudicationError: `actor` is not a lead or owner of the study, the item's
    annotations are not all submitted, the decision holds what no annotator chose (`overrides_everyone`)
    without a rationale while the study requires one, or it repeats the current decision.
    """
    study = item.study
    if not can_adjudicate(actor, study):
        raise AdjudicationError("Only a lead or an owner of this study can decide its items.")
    index = CodebookIndex.for_study(study)
    gold = gold_from_keys(index, findings, complete=True)
    rationale = rationale.strip()
    with transaction.atomic():
        review = Review.objects.select_for_update().filter(item=item).first()
        current = Decision.objects.filter(item=item, is_current=True).select_related("decided_by").first()
        if (current.pk if current else None) != expected_decision_id:
            raise DecisionConflict(conflict_message(current, expected_decision_id), current)
        labels = item_labels(item)
        if not labels.complete and not (current is not None and not labels.assignments):
            if labels.assignments:
                raise AdjudicationError(
                    f"This item is not fully annotated yet: {labels.submitted} of {labels.k} annotations "
                    "are submitted. It can be decided once every annotator has submitted."
                )
            raise AdjudicationError("This item has no annotations to decide from.")
        if current is not None and same_labels(decision_findings(current), gold):
            raise AdjudicationError("This is already the current decision: nothing to save.")
        override = overrides_everyone(gold, labels.findings)
        if override and study.require_rationale_on_override and not rationale:
            raise AdjudicationError(
                "This decision differs from every annotator: write a rationale saying why "
                "(the study requires one when a decision overrides everyone)."
            )
        try:
            with transaction.atomic():
                decision = record_decision(
                    item,
                    gold,
                    Provenance.ADJUDICATED,
                    labels,
                    previous=current,
                    actor=actor,
                    rationale=rationale,
                    override=override,
                    index=index,
                )
        except IntegrityError:
            winner = Decision.objects.filter(item=item, is_current=True).select_related("decided_by").first()
            raise DecisionConflict(conflict_message(winner, expected_decision_id), winner) from None
        if review is None:
            create_review(item, ReviewState.DECIDED, [], labels.round_id)
        else:
            release_claim(review)
            save_review(
                review, ReviewState.DECIDED, list(review.disagreeing_dimensions or []), labels.round_id
            )
        refresh_progress([item.pk])
    return decision


def claim(item: Item, user: User) -> bool:
    """Mark that `user` has the item open for adjudication (other leads see it for `CLAIM_TTL`), unless
    another lead's claim still counts (`queries.claimed_recently`). One conditional UPDATE, so of two
    leads opening the item at once only one claims it. Returns whether `user` holds the claim now (False
    too for an item without a Review: nothing to adjudicate)."""
    return claim_review(item, user, timezone.now(), CLAIM_TTL)
