"""How each model rater agrees with the people, with the other models and with the gold decisions: the
Models comparison screen (`views.models_comparison`) and the replication package's
``models/agreement.json``.

`models_agreement` is ``{"people": [usernames], "round": N or null, "level": D or null, "bootstrap": B,
"raters": {name: {dimension key: {...}}}, "models": {dimension key: {...}}}``. Each rater's dimension
holds:

* ``with_people``: `services.dimension_report` on the table of every annotator and the model (its
  sample 0), on the round (all rounds when null) and level asked, with Krippendorff's alpha's bootstrap
  interval (B replicates, seed 0): the same report as ``agreement --raters``, pairs included. People's
  labels made with a model's suggestion shown are left out (`ratings.load_study_ratings`);
* ``alt_test``: the alternative-annotator test of the model against those people (epsilon 0.2, q 0.05),
  or ``{"error": why}`` when it cannot run;
* ``gold``: `model_gold.compare_with_gold` of the model's labels against the current decisions (the
  items with both, of the round when one is asked), or null when there are none.

``models`` holds, per dimension, the report of every model's columns together (each rater's sample 0
and its other samples, ``NAME#k``): model-model pairs and each model's self-consistency (its samples'
pairs), or ``{"error": why}`` with fewer than two columns.

`comparison_rows` and `model_pair_rows` turn it into the screen's rows. Reads only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

from apps.accounts.models import Study
from apps.raters import alt_test
from apps.raters.gold import gold_labels
from apps.raters.models import ModelRater
from apps.raters.ratings import SAMPLE_SEPARATOR, item_labels
from apps.taxonomy.index import CodebookIndex

from .alt_test_report import alt_test_report
from .model_gold import compare_with_gold, round_item_ids
from .ratings import RatingsError, load_study_ratings
from .services import DASHBOARD_BOOTSTRAP, DASHBOARD_SEED, dimension_report


def models_agreement(
    study: Study,
    index: CodebookIndex,
    *,
    round_number: int | None = None,
    level: int | None = None,
    bootstrap: int = DASHBOARD_BOOTSTRAP,
) -> dict[str, Any]:
    people_ratings = load_study_ratings(study)
    if round_number is not None:
        people_ratings.check_round(round_number)
    people = sorted(name for pk, name in people_ratings.annotators.items() if pk >= 0)
    gold = gold_labels(study.pk)
    raters = list(ModelRater.objects.of_study(study))
    items = round_item_ids(study.pk, round_number)
    scope = {"round_number": round_number, "level": level}
    out: dict[str, Any] = {}
    for rater in raters:
        try:
            ratings = load_study_ratings(study, raters=[*people, rater.name])
        except RatingsError as exc:
            out[rater.name] = {"error": str(exc)}
            continue
        labels = item_labels(rater)
        per_dimension: dict[str, Any] = {}
        for dimension in index.dimensions:
            per_dimension[dimension.key] = {
                "with_people": _or_error(
                    partial(
                        dimension_report,
                        ratings,
                        dimension.key,
                        bootstrap=bootstrap,
                        seed=DASHBOARD_SEED,
                        **scope,
                    )
                ),
                "alt_test": _or_error(
                    partial(
                        alt_test_report,
                        ratings,
                        dimension.key,
                        rater.name,
                        epsilon=alt_test.DEFAULT_EPSILON,
                        q=alt_test.DEFAULT_Q,
                        **scope,
                    )
                ),
                "gold": compare_with_gold(index, dimension.key, gold, labels, items=items, level=level),
            }
        out[rater.name] = per_dimension
    return {
        "people": people,
        "round": round_number,
        "level": level,
        "bootstrap": bootstrap,
        "raters": out,
        "models": _models_together(study, index, raters, round_number, level),
    }


def _models_together(
    study: Study,
    index: CodebookIndex,
    raters: list[ModelRater],
    round_number: int | None,
    level: int | None,
) -> dict[str, Any]:
    columns = [
        rater.name if sample == 0 else f"{rater.name}{SAMPLE_SEPARATOR}{sample}"
        for rater in raters
        for sample in range(rater.samples)
    ]
    if len(columns) < 2:
        return {}
    try:
        ratings = load_study_ratings(study, raters=columns)
    except RatingsError as exc:
        return {d.key: {"error": str(exc)} for d in index.dimensions}
    return {
        d.key: _or_error(partial(dimension_report, ratings, d.key, round_number=round_number, level=level))
        for d in index.dimensions
    }


def _or_error(compute: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    try:
        return dict(compute())
    except (RatingsError, ValueError) as exc:
        return {"error": str(exc)}


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
    alpha: float | None = None
    """Krippendorff's alpha of the people and the model together."""
    alpha_ci: tuple[float, float] | None = None
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
            alpha_ci = people.get("krippendorff_alpha_ci")
            rows.append(
                ComparisonRow(
                    rater=rater,
                    dimension=key,
                    dimension_name=names.get(key, key),
                    n_items=people.get("n_items"),
                    kappa_with_people=_mean(with_model),
                    kappa_people=_mean(between),
                    alpha=people.get("krippendorff_alpha"),
                    alpha_ci=(alpha_ci[0], alpha_ci[1]) if alpha_ci and None not in alpha_ci else None,
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


@dataclass(frozen=True)
class ModelPairRow:
    """Two model columns on one dimension: two models (their first samples), or two samples of one model
    (its self-consistency)."""

    dimension: str
    dimension_name: str
    a: str
    b: str
    self_consistency: bool
    n: int | None
    kappa: float | None
    percent_agreement: float | None


def model_pair_rows(report: dict[str, Any], names: Mapping[str, str]) -> list[ModelPairRow]:
    """One row per pair of model columns and dimension (``report["models"]``), models' pairs first."""
    rows = []
    for key, part in report.get("models", {}).items():
        for pair in part.get("pairwise", []):
            a, b = pair["a"], pair["b"]
            same = a.partition(SAMPLE_SEPARATOR)[0] == b.partition(SAMPLE_SEPARATOR)[0]
            if not same and (SAMPLE_SEPARATOR in a or SAMPLE_SEPARATOR in b):
                continue  # another model's later samples: its first sample speaks for it
            rows.append(
                ModelPairRow(
                    key,
                    names.get(key, key),
                    a,
                    b,
                    same,
                    pair.get("n"),
                    pair.get("cohen_kappa"),
                    pair.get("percent_agreement"),
                )
            )
    return sorted(rows, key=lambda r: (r.self_consistency, r.dimension, r.a, r.b))
