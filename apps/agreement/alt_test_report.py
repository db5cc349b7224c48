"""The alternative-annotator test of ``agreement --alt-test`` (and the API's ``alt_test``, the Models
comparison screen): a study's ratings as `apps.raters.alt_test` takes them. Reads only."""

from __future__ import annotations

from typing import Any

import numpy as np

from apps.accounts.models import Study
from apps.raters import alt_test

from .metrics import MultiRatingTable, RatingTable
from .ratings import RatingsError, StudyRatings, build_table, load_study_ratings


def alt_test_ratings(
    study: Study, ratings: StudyRatings, dimension: str | None, rater: str, include_assisted: bool = False
) -> StudyRatings:
    """The ratings the alternative-annotator test compares: the people of ``ratings`` and the model."""
    people = [name for pk, name in sorted(ratings.annotators.items(), key=lambda kv: kv[1]) if pk >= 0]
    if rater in people:
        raise RatingsError(f"--alt-test takes a model rater's name; {rater!r} is an annotator")
    if len(people) < 2:
        raise RatingsError("the alternative-annotator test needs at least two annotators")
    return load_study_ratings(
        study, dimension=dimension, raters=[*people, rater], include_assisted=include_assisted
    )


def alt_test_report(
    ratings: StudyRatings,
    dimension_key: str,
    rater: str,
    *,
    round_number: int | None,
    level: int | None,
    epsilon: float,
    q: float,
) -> dict[str, Any]:
    """The ``alt_test`` object of ``agreement --alt-test`` for one dimension: `apps.raters.alt_test` on
    the table of the people and the model (a multi-choice dimension's values compared as sets, by their
    Jaccard similarity), each unit (round, item) an instance."""
    table = build_table(ratings, dimension_key, round_number=round_number, level=level).table
    columns = _labels_by_column(table)
    model = columns.pop(rater, {})
    people = {name: columns[name] for name in sorted(columns)}
    return alt_test.alt_test(model, people, epsilon=epsilon, q=q).to_json(rater)


def _labels_by_column(table: RatingTable | MultiRatingTable) -> dict[str, dict[str, alt_test.Label]]:
    out: dict[str, dict[str, alt_test.Label]] = {name: {} for name in table.annotators}
    if isinstance(table, RatingTable):
        items, columns = np.nonzero(table.codes >= 0)
        for i, a in zip(items.tolist(), columns.tolist(), strict=True):
            out[table.annotators[a]][table.items[i]] = table.categories[int(table.codes[i, a])]
        return out
    items, columns = np.nonzero(table.rated)
    for i, a in zip(items.tolist(), columns.tolist(), strict=True):
        chosen = np.nonzero(table.present[i, a])[0].tolist()
        out[table.annotators[a]][table.items[i]] = frozenset(table.categories[k] for k in chosen)
    return out
