"""A model rater against the gold decisions: ``agreement --raters ...``'s ``gold`` object, the Models
comparison screen and the package's ``models/agreement.json`` (docs/models.md). Reads only.

The model's judgement of an item is its sample 0's latest valid answer (`raters.ratings.item_labels`);
the gold is the item's current decision, its first finding (`raters.gold.gold_labels`, the port
adjudication provides). Compared on the items with both, restricted to a round's items when one is
asked for, at a level of the category tree when one is asked for (each category replaced by its
ancestor at that depth), with `raters.gold_metrics.gold_report`: accuracy with its Wilson interval,
per-category precision, recall and F1, macro and micro F1, and the confusion matrix.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from apps.annotation.models import RoundItem
from apps.raters.gold import gold_labels
from apps.raters.gold_metrics import gold_report
from apps.raters.models import ModelRater
from apps.raters.ratings import item_labels
from apps.taxonomy.index import CodebookIndex

GoldLabels = Mapping[int, Mapping[str, tuple[str, ...]]]
ModelLabels = Mapping[int, Mapping[str, frozenset[str]]]


def compare_with_gold(
    index: CodebookIndex,
    dimension_key: str,
    gold: GoldLabels,
    labels: ModelLabels,
    *,
    items: Collection[int] | None = None,
    level: int | None = None,
) -> dict[str, Any] | None:
    """`gold_report` of one model on one dimension (module docstring), or None with no item to compare."""
    dimension = index.dimension(dimension_key)

    def at_level(keys: Collection[str]) -> frozenset[str]:
        if level is None:
            return frozenset(keys)
        return frozenset(
            index.category(index.ancestor_at_depth(index.category_by_key(dimension_key, key).id, level)).key
            for key in keys
        )

    pairs = [
        (at_level(decided[dimension_key]), at_level(labels[item].get(dimension_key, frozenset())))
        for item, decided in sorted(gold.items())
        if dimension_key in decided and item in labels and (items is None or item in items)
    ]
    if not pairs:
        return None
    tree = [index.category(c) for c in index.tree(dimension_key, active_only=False)]
    categories = [c.key for c in tree if level is None or index.depth(c.id) <= level]
    return gold_report(pairs, categories, multiple=dimension.multiple)


def round_item_ids(study_id: int, round_number: int | None) -> set[int] | None:
    """The ids of the round's items, or None (every item) without a round."""
    if round_number is None:
        return None
    return set(
        RoundItem.objects.filter(round__study_id=study_id, round__number=round_number).values_list(
            "item_id", flat=True
        )
    )


def models_against_gold(
    study_id: int,
    index: CodebookIndex,
    names: Collection[str],
    dimension_keys: Collection[str],
    *,
    round_number: int | None = None,
    level: int | None = None,
) -> dict[str, dict[str, dict[str, Any] | None]]:
    """Per dimension key, per model rater among ``names`` (a model's ``NAME``, its sample 0; ``NAME#k``
    and people's names are not compared), its `compare_with_gold` object."""
    raters = list(ModelRater.objects.filter(study_id=study_id, name__in=list(names)).order_by("name"))
    if not raters:
        return {}
    gold = gold_labels(study_id)
    items = round_item_ids(study_id, round_number)
    labels = {rater.name: item_labels(rater) for rater in raters}
    return {
        key: {
            name: compare_with_gold(index, key, gold, model, items=items, level=level)
            for name, model in labels.items()
        }
        for key in dimension_keys
    }
