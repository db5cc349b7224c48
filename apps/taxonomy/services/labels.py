"""Labels on categories: moving them (merge, split, rejection) and reading them (counts, the reassign
page), through the label stores annotation and adjudication register (`taxonomy/label_stores.py`): taxonomy
never imports those apps, names their models or writes their tables."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db import models
from django.db.models import Count

from ..label_stores import GOLD, LABELS, LabelStore, store
from ..models import Category, Codebook


def label_stores() -> tuple[LabelStore, LabelStore]:
    """(annotators' labels, gold labels)."""
    return store(LABELS), store(GOLD)


@dataclass(frozen=True)
class MovedLabels:
    """Labels moved from one category to another. `dropped_*` were deleted: their finding already held
    the target, so keeping them would store one category twice (see `tree.remap_for_merge`)."""

    labels: int = 0
    decisions: int = 0
    dropped_labels: tuple[int, ...] = ()
    dropped_decisions: tuple[int, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {
            "labels_moved": self.labels,
            "decisions_moved": self.decisions,
            "labels_dropped": list(self.dropped_labels),
            "decisions_dropped": list(self.dropped_decisions),
        }


def move_labels(
    source: Category,
    target: Category,
    label_ids: Sequence[int] | None = None,
    decision_value_ids: Sequence[int] | None = None,
) -> MovedLabels:
    """Every label and gold label on `source` (or only the given ids of each) moved to `target` by their
    owners' writes (`LabelStore.move`)."""
    labels, gold = label_stores()
    moved_labels, dropped_labels = labels.move(source, target, label_ids)
    moved_gold, dropped_gold = gold.move(source, target, decision_value_ids)
    return MovedLabels(moved_labels, moved_gold, dropped_labels, dropped_gold)


def label_count(category: Category) -> tuple[int, int]:
    """(annotator labels, gold labels) currently on the category."""
    labels, gold = label_stores()
    return labels.rows().filter(category=category).count(), gold.rows().filter(category=category).count()


def label_counts(book: Codebook) -> dict[int, tuple[int, int]]:
    """Per category id of the codebook: (annotator labels, gold labels of any decision). Two queries."""
    counts: dict[int, list[int]] = {}
    for index, kind in enumerate(label_stores()):
        rows = (
            kind.rows()
            .filter(category__dimension__codebook=book)
            .values("category_id")
            .annotate(n=Count("id"))
            .values_list("category_id", "n")
        )
        for category_id, n in rows:
            counts.setdefault(category_id, [0, 0])[index] = n
    return {k: (v[0], v[1]) for k, v in counts.items()}


def labels_on(
    category: Category, *, annotator: str = "", q: str = ""
) -> models.QuerySet[Any, dict[str, Any]]:
    """Annotator labels on the category, one dict per label with its item, annotator, round and finding,
    in item order. For leads only: it shows every annotator's labels."""
    return store(LABELS).listing(category, annotator=annotator, q=q)


def gold_on(category: Category, *, q: str = "") -> models.QuerySet[Any, dict[str, Any]]:
    """Gold labels (decision values) on the category, with their item and decision."""
    return store(GOLD).listing(category, q=q)


def annotators_of(category: Category) -> list[str]:
    """Usernames of the annotators with a label on the category."""
    return store(LABELS).annotators(category)
