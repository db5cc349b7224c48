"""Issue 10's reference: ``ratings.build_table`` as it was before it was made faster, verbatim but for
its imports. Kept only for ``tests/agreement/test_vectorised.py``; do not edit it."""

from __future__ import annotations

import numpy as np

from apps.agreement.metrics import MultiRatingTable, RatingTable
from apps.agreement.ratings import (
    _NO_CATEGORY,
    PENDING,
    DimensionTable,
    RatingsError,
    StudyRatings,
    _any_repeated,
    _check_level,
    declared_categories,
)


def build_table(
    ratings: StudyRatings, dimension_key: str, *, round_number: int | None = None, level: int | None = None
) -> DimensionTable:
    """The rating table of one dimension, for one round (or all rounds), at one level of the tree.

    Raises RatingsError for an unknown dimension or round, a level below 1, or a category keyed
    ``pending`` (it would be confused with the *pending* value).
    """
    dimension = ratings.dimension(dimension_key)
    _check_level(level)
    rounds = ratings.round_numbers if round_number is None else (ratings.check_round(round_number).number,)
    rows = ratings.rows
    rows = rows[(rows["dimension"] == dimension.id) & np.isin(rows["round"], rounds)]
    index = ratings.index

    # Each category id of the rows → the category it counts as at this level.
    category_ids = np.unique(rows["category"])
    mapped = {
        raw: raw if level is None else index.ancestor_at_depth(raw, level)
        for raw in category_ids.tolist()
        if raw != _NO_CATEGORY
    }
    declared_ids = declared_categories(index, dimension, level, sorted(set(mapped.values())))
    names = [index.category(c).key for c in declared_ids]
    if PENDING in names:
        raise RatingsError(
            f"dimension {dimension.key!r} has a category keyed {PENDING!r}, which agreement cannot tell "
            "from the pending value; rename its key"
        )
    labels: dict[str, int | None] = {**dict(zip(names, declared_ids, strict=True)), PENDING: None}
    code_of_id = {c: k for k, c in enumerate(declared_ids)}
    lookup = np.array(
        [
            len(declared_ids) if raw == _NO_CATEGORY else code_of_id[mapped[raw]]
            for raw in category_ids.tolist()
        ],
        dtype=np.int64,
    )
    codes = lookup[np.searchsorted(category_ids, rows["category"])]
    n_values = len(declared_ids) + 1

    # Units (round, item) in round then item order; annotators by username.
    width = int(rows["item"].max()) + 1 if rows.size else 1
    unit_keys, unit = np.unique(rows["round"] * width + rows["item"], return_inverse=True)
    unit = unit.reshape(-1).astype(np.int64)
    annotator_ids = sorted(set(rows["annotator"].tolist()), key=lambda a: (ratings.annotators.get(a, ""), a))
    annotator_names = tuple(ratings.annotators.get(a, f"user-{a}") for a in annotator_ids)
    by_id = np.array(sorted(annotator_ids), dtype=np.int64)
    column_of_sorted = np.array([annotator_ids.index(a) for a in by_id.tolist()], dtype=np.int64)
    annotator = column_of_sorted[np.searchsorted(by_id, rows["annotator"])] if rows.size else unit.copy()
    n_units, n_annotators = len(unit_keys), len(annotator_ids)

    # Several findings of one annotator with a value here, or several values in one rating → sets.
    cell = unit * max(n_annotators, 1) + annotator
    n_findings = int(rows["finding"].max()) + 1 if rows.size else 1
    several_findings = _any_repeated(np.unique(cell * n_findings + rows["finding"]) // n_findings)
    several_values = _any_repeated(np.unique(cell * n_values + codes) // n_values)

    units = tuple((int(k // width), int(k % width)) for k in unit_keys.tolist())
    items = tuple(f"{r}:{i}" for r, i in units)
    table: RatingTable | MultiRatingTable
    if dimension.multiple or several_findings or several_values:
        present = np.zeros((n_units, n_annotators, n_values), dtype=np.bool_)
        rated = np.zeros((n_units, n_annotators), dtype=np.bool_)
        present[unit, annotator, codes] = True
        rated[unit, annotator] = True
        table = MultiRatingTable(present, rated, (*names, PENDING), items, annotator_names)
        chosen = present.sum(axis=(0, 1))
    else:
        matrix = np.full((n_units, n_annotators), -1, dtype=np.int64)
        matrix[unit, annotator] = codes
        table = RatingTable(matrix, (*names, PENDING), items, annotator_names)
        chosen = np.bincount(codes, minlength=n_values)
    counts = {name: int(n) for name, n in zip((*names, PENDING), chosen.tolist(), strict=True)}
    return DimensionTable(
        dimension=dimension,
        rounds=rounds,
        level=level,
        table=table,
        units=units,
        labels=labels,
        counts=counts,
        several_findings=several_findings,
    )
