"""The package's ``models/`` folder (docs/export.md): the raters and their raw answers
(`raters/package.py`), and ``models/agreement.json``, how each model agrees with the people and with the
gold decisions.

``models/agreement.json`` is ``{"people": [usernames], "raters": {name: {dimension key: {...}}}}`` where
each dimension holds:

* ``with_people``: `agreement.services.dimension_report` on the table of every annotator and the model
  (its sample 0), all rounds, full depth: the same report as ``agreement --raters``, pairs included;
* ``alt_test``: the alternative-annotator test of the model against those people (epsilon 0.2, q 0.05),
  or ``{"error": why}`` when it cannot run (fewer than two annotators, too few items);
* ``gold``: `raters.gold_metrics.gold_report` of the model's labels against the current decisions (the
  items with both), or null when there are none.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from apps.accounts.models import Study
from apps.agreement.ratings import RatingsError, load_study_ratings
from apps.agreement.services import alt_test_report, dimension_report
from apps.raters import alt_test
from apps.raters.gold import gold_labels
from apps.raters.gold_metrics import gold_report
from apps.raters.models import ModelRater
from apps.raters.package import ANSWERS_FILE, MODELS_DIR, RATERS_FILE, answer_lines, has_models, raters_data
from apps.raters.ratings import item_labels
from apps.taxonomy.index import CodebookIndex

from .. import tables

AGREEMENT_FILE = f"{MODELS_DIR}/agreement.json"


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


def write_models(study: Study, directory: Path, index: CodebookIndex, dump_json: Any) -> list[str]:
    """Write the ``models/`` files when the study has a model rater; their names (none otherwise)."""
    if not has_models(study):
        return []
    folder = directory / MODELS_DIR
    folder.mkdir(parents=True, exist_ok=True)
    (directory / RATERS_FILE).write_text(dump_json(raters_data(study)), encoding="utf-8")
    with (directory / ANSWERS_FILE).open("w", encoding="utf-8", newline="") as handle:
        for line in answer_lines(study):
            handle.write(tables.json_line(line) + "\n")
    (directory / AGREEMENT_FILE).write_text(dump_json(models_agreement(study, index)), encoding="utf-8")
    return [RATERS_FILE, ANSWERS_FILE, AGREEMENT_FILE]
