"""Labels on categories: moving them (merge, split, rejection) and reading them (counts, the reassign
page). Annotation and adjudication models are reached through `apps.get_model`, never imported."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.apps import apps
from django.db import models
from django.db.models import Count, F, Q

from ..models import Category, Codebook


def label_models() -> tuple[type[models.Model], type[models.Model]]:
    return apps.get_model("annotation", "LabelValue"), apps.get_model("adjudication", "DecisionValue")


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
    model: type[models.Model], source: Category, target: Category, ids: Sequence[int] | None
) -> tuple[int, tuple[int, ...]]:
    """Point `model` rows on `source` (all, or only `ids`) to `target`; `original_category` keeps the
    source unless an earlier merge already set it. The same semantics as `tree.remap_for_merge`, done with
    set-based updates so a merge of a category with 100,000 labels is three queries."""
    rows = model._default_manager.filter(category=source)
    if ids is not None:
        rows = rows.filter(pk__in=list(ids))
    holding_target = model._default_manager.filter(category=target).values("finding_id")
    clash = rows.filter(finding_id__in=holding_target)
    dropped = tuple(sorted(clash.values_list("pk", flat=True)))
    if dropped:
        model._default_manager.filter(pk__in=dropped).delete()
    moved = rows.filter(original_category__isnull=True).update(category=target, original_category=source)
    moved += rows.filter(original_category__isnull=False).update(category=target)
    return moved, dropped


def move_all_labels(source: Category, target: Category) -> MovedLabels:
    label_model, decision_model = label_models()
    labels, dropped_labels = move_labels(label_model, source, target, None)
    decisions, dropped_decisions = move_labels(decision_model, source, target, None)
    return MovedLabels(labels, decisions, dropped_labels, dropped_decisions)


def label_count(category: Category) -> tuple[int, int]:
    """(annotator labels, gold labels) currently on the category."""
    label_model, decision_model = label_models()
    return (
        label_model._default_manager.filter(category=category).count(),
        decision_model._default_manager.filter(category=category).count(),
    )


def label_counts(book: Codebook) -> dict[int, tuple[int, int]]:
    """Per category id of the codebook: (annotator labels, gold labels of any decision). Two queries."""
    label_model, decision_model = label_models()
    counts: dict[int, list[int]] = {}
    for index, model in enumerate((label_model, decision_model)):
        rows = (
            model._default_manager.filter(category__dimension__codebook=book)
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
    label_model, _ = label_models()
    on = "finding__annotation__assignment__"
    rows = label_model._default_manager.filter(category=category)
    if annotator:
        rows = rows.filter(**{f"{on}annotator__username": annotator})
    if q:
        rows = rows.filter(Q(**{f"{on}item__title__icontains": q}) | Q(**{f"{on}item__url__icontains": q}))
    return rows.order_by(f"{on}item_id", f"{on}annotator__username", "finding__number").values(
        "id",
        finding_number=F("finding__number"),
        item_id=F(f"{on}item_id"),
        item_url=F(f"{on}item__url"),
        item_title=F(f"{on}item__title"),
        annotator=F(f"{on}annotator__username"),
        round=F(f"{on}round__number"),
        original=F("original_category__key"),
    )


def gold_on(category: Category, *, q: str = "") -> models.QuerySet[Any, dict[str, Any]]:
    """Gold labels (decision values) on the category, with their item and decision."""
    _, decision_model = label_models()
    on = "finding__decision__"
    rows = decision_model._default_manager.filter(category=category)
    if q:
        rows = rows.filter(Q(**{f"{on}item__title__icontains": q}) | Q(**{f"{on}item__url__icontains": q}))
    return rows.order_by(f"{on}item_id", "finding__number").values(
        "id",
        finding_number=F("finding__number"),
        item_id=F(f"{on}item_id"),
        item_url=F(f"{on}item__url"),
        item_title=F(f"{on}item__title"),
        provenance=F(f"{on}provenance"),
        is_current=F(f"{on}is_current"),
        original=F("original_category__key"),
    )


def annotators_of(category: Category) -> list[str]:
    """Usernames of the annotators with a label on the category."""
    label_model, _ = label_models()
    name = "finding__annotation__assignment__annotator__username"
    return sorted(
        set(label_model._default_manager.filter(category=category).values_list(name, flat=True).distinct())
    )
