"""What a revealed round shows its annotators: the others' labels and memos beside their own.

A read module (nothing here writes). Everything is scoped to the asking annotator: only items of the round
they labelled (their own assignment submitted), only once the round is not blind (`phases.is_blind`),
and only annotations of that round. Before the reveal every function returns nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from apps.accounts.models import Study, User
from apps.corpus.models import Item

from . import payload as pl
from .models import (
    Annotation,
    Assignment,
    AssignmentStatus,
    BlindRecord,
    LabelValue,
    Revision,
    Round,
    RoundPhase,
)
from .phases import is_blind
from .services.common import LoadedCodebook, stored_labels

MAX_ITEMS = 500


@dataclass(frozen=True)
class Labels:
    """One annotator's labels of an item in a round, as the reveal shows them."""

    annotator: str  # a username, or "Annotator B" when the study hides names
    own: bool
    findings: list[dict[str, pl.Value]]
    memo: str
    revised: bool  # changed since the reveal (the blind record holds what they were)
    blind: list[dict[str, Any]] | None  # the frozen blind labels, when revised


@dataclass(frozen=True)
class RevealedItem:
    assignment: Assignment
    item: Item
    labels: list[Labels]  # own first

    @property
    def disagree(self) -> bool:
        forms = {repr(pl.normal_form(label.findings, "")["findings"]) for label in self.labels}
        return len(forms) > 1

    @property
    def others(self) -> list[Labels]:
        return [label for label in self.labels if not label.own]


def _names(study: Study, annotations: list[Annotation], user: User) -> dict[int, str]:
    """Each annotator's name as the reveal shows it: their username, or a letter when the study hides
    names (`Study.show_annotator_names`); the asking annotator is always "you"."""
    others = sorted({a.assignment.annotator_id for a in annotations} - {user.pk})
    if study.show_annotator_names:
        named = {a.assignment.annotator_id: a.assignment.annotator.username for a in annotations}
    else:
        named = {pk: f"Annotator {chr(ord('A') + i % 26)}" for i, pk in enumerate(others)}
    named[user.pk] = "you"
    return named


def revealed_items(
    round_: Round, user: User, book: LoadedCodebook, *, assignment: Assignment | None = None
) -> list[RevealedItem]:
    """The items of `round_` that `user` labelled (or the one of `assignment`, theirs), each with every
    submitted annotation of the item in the round, disagreements first, then in queue order. Empty while
    the round is blind. At most `MAX_ITEMS` items; a query per annotation for its labels."""
    if is_blind(round_) or not user.is_authenticated:
        return []
    mine = Assignment.objects.reliability().filter(
        round=round_, annotator=user, status=AssignmentStatus.SUBMITTED
    )
    if assignment is not None:
        mine = mine.filter(pk=assignment.pk)
    own = {a.item_id: a for a in mine.select_related("item").order_by("position", "id")[:MAX_ITEMS]}
    annotations = list(
        Annotation.objects.submitted()
        .filter(assignment__round=round_, assignment__item_id__in=list(own))
        .select_related("assignment__annotator")
        .prefetch_related("findings__values")
    )
    revised = set(
        Revision.objects.filter(annotation__in=annotations).values_list("annotation_id", flat=True).distinct()
    )
    blind = dict(
        BlindRecord.objects.filter(
            assignment_id__in=[a.assignment_id for a in annotations if a.pk in revised]
        ).values_list("assignment_id", "labels")
    )
    names = _names(round_.study, annotations, user)
    by_item: dict[int, list[Labels]] = {}
    for annotation in annotations:
        a = annotation.assignment
        by_item.setdefault(a.item_id, []).append(
            Labels(
                annotator=names[a.annotator_id],
                own=a.annotator_id == user.pk,
                findings=stored_labels(annotation, book),
                memo=annotation.memo,
                revised=annotation.pk in revised,
                blind=blind.get(a.pk),
            )
        )
    rows = [
        RevealedItem(own[item_id], own[item_id].item, sorted(labels, key=lambda x: (not x.own, x.annotator)))
        for item_id, labels in by_item.items()
    ]
    position = {item_id: i for i, item_id in enumerate(own)}
    return sorted(rows, key=lambda r: (not r.disagree, position[r.item.pk]))


# --- Closing the loop: decisions of revealed rounds, shown to their annotators --------------------------


@dataclass(frozen=True)
class DecidedItem:
    """An item the annotator labelled in a revealed round, and its current decision."""

    assignment: Assignment
    provenance: str
    rationale: str
    gold: frozenset[tuple[int, int]]  # (dimension id, category id) of the decision
    mine: frozenset[tuple[int, int]]  # the annotator's own labels, the same way

    @property
    def matched(self) -> bool:
        return self.gold == self.mine


def decided_items(study: Study, user: User, *, assignment: Assignment | None = None) -> list[DecidedItem]:
    """The user's submitted items of the study's revealed rounds that are decided, newest round first,
    each with the decision (read through `Item`'s reverse relations: annotation never imports
    adjudication) and whether the user's labels match it (the same categories in every dimension).
    Nothing of a blind round: there, a decision would tell whether the others agreed. Three queries."""
    if not user.is_authenticated:
        return []
    mine = (
        Assignment.objects.filter(study=study, annotator=user, status=AssignmentStatus.SUBMITTED)
        .exclude(round__phase=RoundPhase.BLIND)
        .filter(item__decisions__is_current=True)
        .select_related("item", "round")
        .order_by("-round__number", "position", "id")
    )
    if assignment is not None:
        mine = mine.filter(pk=assignment.pk)
    assignments = list(mine[:MAX_ITEMS])
    if not assignments:
        return []
    decisions: dict[int, tuple[str, str]] = {}
    gold: dict[int, set[tuple[int, int]]] = {}
    for item_id, provenance, rationale, dimension_id, category_id in Item.objects.filter(
        pk__in=[a.item_id for a in assignments], decisions__is_current=True
    ).values_list(
        "pk",
        "decisions__provenance",
        "decisions__rationale",
        "decisions__findings__values__dimension_id",
        "decisions__findings__values__category_id",
    ):
        decisions[item_id] = (provenance, rationale)
        if dimension_id is not None:
            gold.setdefault(item_id, set()).add((dimension_id, category_id))
    own: dict[int, set[tuple[int, int]]] = {}
    for assignment_id, dimension_id, category_id in LabelValue.objects.filter(
        finding__annotation__assignment__in=assignments, category__isnull=False
    ).values_list("finding__annotation__assignment_id", "dimension_id", "category_id"):
        own.setdefault(assignment_id, set()).add((dimension_id, category_id))
    return [
        DecidedItem(
            a,
            decisions[a.item_id][0],
            decisions[a.item_id][1],
            frozenset(gold.get(a.item_id, ())),
            frozenset(own.get(a.pk, ())),
        )
        for a in assignments
        if a.item_id in decisions
    ]


def own_agreement(rows: list[DecidedItem]) -> list[dict[str, Any]]:
    """Per round, the share of the annotator's decided items whose labels matched the decision: their own
    figure only (nothing here reads another annotator's)."""
    per_round: dict[int, list[DecidedItem]] = {}
    for row in rows:
        per_round.setdefault(row.assignment.round.number, []).append(row)
    return [
        {
            "round": items[0].assignment.round,
            "decided": len(items),
            "matched": sum(1 for r in items if r.matched),
            "percent": round(100 * sum(1 for r in items if r.matched) / len(items)),
        }
        for _, items in sorted(per_round.items())
    ]
