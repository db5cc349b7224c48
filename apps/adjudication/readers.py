"""What adjudication provides to the apps below it, which may not import it (docs/decisions/0006):

* to annotation, whether an item is decided (`DECIDED`, an `annotation.decided.DecidedReader`): its
  Review says ``decided``, or it has a current decision. The SQL fragments are what the hand-written
  statements of `annotation/services/submit_sql.py` embed; the `Q`s what its ORM reads filter on;
* to the codebook, the gold labels on its categories (`GOLD_STORE`, a `taxonomy.label_stores.LabelStore`):
  reads here, the one write, `move`, is `services.writes.move_gold_values`;
* to the model raters, the gold labels a baseline learns from (`gold_by_item`, a `raters.gold.Reader`);
* to annotation, the answers of gold checks (`gold_answers`, an `annotation.gold_answers.Reader`): the
  current decision's values and rationale, for training feedback, scores and the pass mark.

All are registered in `AdjudicationConfig.ready()`.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from django.db import models
from django.db.models import F, Q

from apps.annotation.decided import DecidedReader
from apps.annotation.gold_answers import GoldAnswer
from apps.taxonomy.label_stores import LabelStore
from apps.taxonomy.models import Category

from .models import Decision, DecisionValue, Review, ReviewState
from .services.writes import move_gold_values


def _review_decided_sql(item: str, unless: str = "") -> str:
    also = f" AND NOT ({unless})" if unless else ""
    return (
        f'EXISTS (SELECT 1 FROM "{Review._meta.db_table}" v '
        f"WHERE v.item_id = {item} AND v.state = '{ReviewState.DECIDED.value}'{also})"
    )


def _current_decision_sql(item: str) -> str:
    return f'EXISTS (SELECT 1 FROM "{Decision._meta.db_table}" d WHERE d.item_id = {item} AND d.is_current)'


def _review_decided(path: str) -> Q:
    return Q(**{f"{path}review__state": ReviewState.DECIDED})


def _current_decision(path: str) -> Q:
    return Q(**{f"{path}decisions__is_current": True})


DECIDED = DecidedReader(
    review_decided_sql=_review_decided_sql,
    current_decision_sql=_current_decision_sql,
    review_decided=_review_decided,
    current_decision=_current_decision,
)


def gold_by_item(study_id: int) -> dict[int, dict[str, tuple[str, ...]]]:
    """Each decided item's first-finding category keys per dimension key, from its current decision:
    one query (`raters/gold.py`)."""
    rows = (
        DecisionValue.objects.filter(
            finding__decision__study_id=study_id, finding__decision__is_current=True, finding__number=1
        )
        .order_by("finding__decision__item_id", "dimension_id", "category__key")
        .values_list("finding__decision__item_id", "dimension__key", "category__key")
    )
    out: dict[int, dict[str, tuple[str, ...]]] = {}
    for item_id, dimension, category in rows:
        chosen = out.setdefault(item_id, {})
        chosen[dimension] = (*chosen.get(dimension, ()), category)
    return out


def gold_answers(item_ids: Collection[int]) -> dict[int, GoldAnswer]:
    """Each item's current decision as a gold answer (per finding, dimension key → category ids, and the
    rationale): one query."""
    rows = (
        DecisionValue.objects.filter(
            finding__decision__item_id__in=list(item_ids), finding__decision__is_current=True
        )
        .order_by("finding__decision__item_id", "finding__number", "dimension_id", "category_id")
        .values_list(
            "finding__decision__item_id",
            "finding__decision__rationale",
            "finding__number",
            "dimension__key",
            "category_id",
        )
    )
    findings: dict[int, dict[int, dict[str, tuple[int, ...]]]] = {}
    rationale: dict[int, str] = {}
    for item_id, why, number, dimension, category in rows:
        rationale[item_id] = why
        finding = findings.setdefault(item_id, {}).setdefault(number, {})
        finding[dimension] = (*finding.get(dimension, ()), category)
    return {
        item_id: GoldAnswer(tuple(by_number[n] for n in sorted(by_number)), rationale[item_id])
        for item_id, by_number in findings.items()
    }


def gold_rows() -> models.QuerySet[DecisionValue]:
    return DecisionValue.objects.all()


def current_gold() -> models.QuerySet[DecisionValue]:
    """Gold labels of current decisions: what a codebook export counts."""
    return DecisionValue.objects.filter(finding__decision__is_current=True)


def gold_listing(category: Category, *, annotator: str = "", q: str = "") -> models.QuerySet[Any, Any]:
    """Gold labels (decision values) on the category, with their item and decision (`annotator` does not
    apply: a gold label is nobody's)."""
    on = "finding__decision__"
    rows = DecisionValue.objects.filter(category=category)
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


GOLD_STORE = LabelStore(rows=gold_rows, counted=current_gold, listing=gold_listing, move=move_gold_values)
