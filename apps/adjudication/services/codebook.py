"""Following codebook changes: after a merge or a split, consolidate again the items whose open
disagreement or automatic decision the change touches (the labels remapped as if the change were done)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db.models import Q

from apps.annotation.models import LabelValue
from apps.taxonomy.models import Category

from ..models import DecisionValue, Review, ReviewState
from ..progress import refresh_progress
from .consolidate import consolidate_items
from .record import AUTOMATIC


def follow_merge(source: Category, target: Category) -> int:
    """After `source` was merged into `target`, consolidate again the items with an open disagreement or
    an automatic decision whose labels touch `source` (A chose the source and B the target: they now
    agree; a majority may become unanimous). The taxonomy's merge has already moved annotation and gold
    labels (`original_category` keeps the source); `remap` makes the rerun correct even if it had not.
    Runs inside the merge's transaction. Returns how many items were consolidated again."""
    touches = Q(category=source) | Q(original_category=source) | Q(original_category__merged_into=source)
    touched = set(
        LabelValue.objects.filter(touches).values_list("finding__annotation__assignment__item_id", flat=True)
    )
    touched |= set(
        DecisionValue.objects.filter(touches, finding__decision__is_current=True).values_list(
            "finding__decision__item_id", flat=True
        )
    )
    return _rerun(touched, remap={source.pk: target.pk})


def follow_split(mapping: Mapping[int, int]) -> int:
    """Annotation labels were reassigned (`mapping`: LabelValue id → new category id): consolidate again
    the items concerned that have an open disagreement or an automatic decision."""
    touched = set(
        LabelValue.objects.filter(pk__in=list(mapping)).values_list(
            "finding__annotation__assignment__item_id", flat=True
        )
    )
    return _rerun(touched, label_remap=mapping)


def _rerun(item_ids: set[int], **options: Any) -> int:
    if not item_ids:
        return 0
    rerun = Review.objects.filter(item_id__in=item_ids).filter(
        Q(state=ReviewState.DISAGREEMENT)
        | Q(item__decisions__is_current=True, item__decisions__provenance__in=list(AUTOMATIC))
    )
    ids = sorted(set(rerun.values_list("item_id", flat=True)))
    n = consolidate_items(ids, **options)
    refresh_progress(ids)
    return n
