"""The annotators' labels as the codebook sees them: annotation's `LabelStore` (`taxonomy/label_stores.py`),
registered in `AnnotationConfig.ready()`. Reads here; the one write, `move`, is `writes.move_label_values`."""

from __future__ import annotations

from typing import Any

from django.db import models
from django.db.models import F, Q

from apps.taxonomy.label_stores import LabelStore
from apps.taxonomy.models import Category

from .models import LabelValue
from .writes import move_label_values

_ON = "finding__annotation__assignment__"


def rows() -> models.QuerySet[LabelValue]:
    return LabelValue.objects.all()


def listing(category: Category, *, annotator: str = "", q: str = "") -> models.QuerySet[Any, Any]:
    """Annotator labels on the category, one dict per label with its item, annotator, round and finding,
    in item order. For leads only: it shows every annotator's labels."""
    on = _ON
    found = LabelValue.objects.filter(category=category)
    if annotator:
        found = found.filter(**{f"{on}annotator__username": annotator})
    if q:
        found = found.filter(Q(**{f"{on}item__title__icontains": q}) | Q(**{f"{on}item__url__icontains": q}))
    return found.order_by(f"{on}item_id", f"{on}annotator__username", "finding__number").values(
        "id",
        finding_number=F("finding__number"),
        item_id=F(f"{on}item_id"),
        item_url=F(f"{on}item__url"),
        item_title=F(f"{on}item__title"),
        annotator=F(f"{on}annotator__username"),
        round=F(f"{on}round__number"),
        original=F("original_category__key"),
    )


def annotators(category: Category) -> list[str]:
    """Usernames of the annotators with a label on the category."""
    name = f"{_ON}annotator__username"
    return sorted(set(LabelValue.objects.filter(category=category).values_list(name, flat=True).distinct()))


STORE = LabelStore(rows=rows, counted=rows, listing=listing, move=move_label_values, annotators=annotators)
