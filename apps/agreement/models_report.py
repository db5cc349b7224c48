"""How each model rater agrees with the people and with the gold decisions: the Models comparison screen
(`views.models_comparison`) and the replication package's ``models/agreement.json``.

`models_agreement` is ``{"people": [usernames], "raters": {name: {dimension key: {...}}}}`` where each
dimension holds:

* ``with_people``: `services.dimension_report` on the table of every annotator and the model (its
  sample 0), all rounds, full depth: the same report as ``agreement --raters``, pairs included;
* ``alt_test``: the alternative-annotator test of the model against those people (epsilon 0.2, q 0.05),
  or ``{"error": why}`` when it cannot run;
* ``gold``: `raters.gold_metrics.gold_report` of the model's labels against the current decisions (the
  items with both), or null when there are none.

`comparison_rows` turns it into one row per (rater, dimension) for the screen. Reads only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

from apps.accounts.models import Study
from apps.raters import alt_test
from apps.raters.gold import gold_labels
from apps.raters.gold_metrics import gold_report
from apps.raters.models import ModelRater
from apps.raters.ratings import item_labels
from apps.taxonomy.index import CodebookIndex

from .ratings import RatingsError, load_study_ratings
from .services import alt_test_report, dimension_report


def models_agreement(study: Study, index: CodebookIndex) -> dict[str, Any]:
    people_ratings = load_study_ratings(study)
    people = sorted(name for pk, name in people_ratings.annotators.items() if pk >= 0)
    gold = gold_labels(study.pk)
    out: dict[str, Any] = {}
    for rater in ModelRater.objects.of_study(study):
        try:
            ratings = load_study_ratings(study, raters=[*people, rater.name])
        except RatingsError as exc:
            out[rater.name] = {"error": str(exc)}
            continue
        labels = item_labels(rater)
        per_dimension: dict[str, Any] = {}
        for dimension in index.dimensions:
            per_dimension[dimension.key] = {
                "with_people": _or_error(partial(dimension_report, ratings, dimension.key)),
                "alt_test": _or_error(
                    partial(
                        alt_test_report,
                        ratings,
                        dimension.key,
                        rater.name,
                        round_number=None,
                        level=None,
                        epsilon=alt_test.DEFAULT_EPSILON,
                        q=alt_test.DEFAULT_Q,
                    )
                ),
                "gold": _gold(dimension.key, dimension.multiple, index, gold, labels),
            }
        out[rater.name] = per_dimension
    return {"people": people, "raters": out}


def _or_error(compute: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    try:
        return dict(compute())
    except (RatingsError, ValueError) as exc:
        return {"error": str(exc)}


def _gold(
    key: str,
    multiple: bool,
    index: CodebookIndex,
    gold: dict[int, dict[str, tuple[str, ...]]],
    labels: dict[int, dict[str, frozenset[str]]],
) -> dict[str, Any] | None:
    pairs = [
        (frozenset(decided[key]), labels[item].get(key, frozenset()))
        for item, decided in sorted(gold.items())
        if key in decided and item in labels
    ]
    if not pairs:
        return None
    categories = [index.category(c).key for c in index.tree(key, active_only=False)]
    return gold_report(pairs, categories, multiple=multiple)


@dataclass(frozen=True)
class ComparisonRow:
    """One model on one dimension, as the comparison screen shows it."""

    rater: str
    dimension: str = ""
    dimension_name: str = ""
    n_items: int | None = None
    kappa_with_people: float | None = None
    """The mean of Cohen's kappa between the model and each person (pairs with a kappa)."""
    kappa_people: float | None = None
    """The mean of Cohen's kappa between the people themselves, for reference."""
    winning_rate: float | None = None
    advantage_probability: float | None = None
    passed: bool | None = None
    gold_n: int = 0
    gold_accuracy: float | None = None
    gold_accuracy_ci: tuple[float, float] | None = None
    gold_macro_f1: float | None = None
    error: str = ""


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def comparison_rows(report: dict[str, Any], names: Mapping[str, str]) -> list[ComparisonRow]:
    """One row per model and dimension (`names`: dimension key → name); a rater whose table could not be
    built is one row holding the reason."""
    rows = []
    for rater, dimensions in report["raters"].items():
        if "error" in dimensions:
            rows.append(ComparisonRow(rater, error=dimensions["error"]))
            continue
        for key, parts in dimensions.items():
            people = parts["with_people"]
            pairs = people.get("pairwise", [])
            with_model = [
                p["cohen_kappa"] for p in pairs if rater in (p["a"], p["b"]) and p["cohen_kappa"] is not None
            ]
            between = [
                p["cohen_kappa"]
                for p in pairs
                if rater not in (p["a"], p["b"]) and p["cohen_kappa"] is not None
            ]
            test, gold = parts["alt_test"], parts["gold"] or {}
            ci = gold.get("accuracy_ci")
            rows.append(
                ComparisonRow(
                    rater=rater,
                    dimension=key,
                    dimension_name=names.get(key, key),
                    n_items=people.get("n_items"),
                    kappa_with_people=_mean(with_model),
                    kappa_people=_mean(between),
                    winning_rate=test.get("winning_rate"),
                    advantage_probability=test.get("advantage_probability"),
                    passed=test.get("passed") if test.get("annotators") else None,  # none counted: untested
                    gold_n=int(gold.get("n", 0)),
                    gold_accuracy=gold.get("accuracy"),
                    gold_accuracy_ci=(ci[0], ci[1]) if ci else None,
                    gold_macro_f1=gold.get("macro_f1"),
                    error=people.get("error", "") or test.get("error", ""),
                )
            )
    return rows
