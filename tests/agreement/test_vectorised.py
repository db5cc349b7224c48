"""The vectorised agreement code gives the values the code before issue 10 gave, to the last bit.

`tests/agreement/old` holds that code verbatim. Random tables of every shape the coefficients branch on
(two annotators or more, complete or missing ratings, one value everywhere, unused categories, sets with
the empty set, many distinct sets) go through both, and every report, value and reason, must be equal.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

from apps.agreement import metrics
from apps.agreement.ratings import RoundInfo, StudyRatings, build_table
from apps.taxonomy.index import CategoryInfo, CodebookIndex, DimensionInfo
from tests.agreement.old import metrics as old
from tests.agreement.old.build_table import build_table as old_build_table

SEEDS = range(40)


def _single_codes(rng: np.random.Generator, n: int, raters: int, k: int, missing: float) -> Any:
    truth = rng.integers(0, k, n)
    codes = np.where(rng.random((n, raters)) < rng.random(), truth[:, None], rng.integers(0, k, (n, raters)))
    codes[rng.random((n, raters)) < missing] = -1
    return codes


def _sets(rng: np.random.Generator, n: int, raters: int, k: int, missing: float) -> tuple[Any, Any]:
    truth = rng.random((n, k)) < rng.random() * 0.6
    noise = rng.random((n, raters, k)) < rng.random() * 0.3
    present = truth[:, None, :] ^ noise
    rated = rng.random((n, raters)) >= missing
    return present & rated[:, :, None], rated


def _shape(seed: int) -> tuple[np.random.Generator, int, int, int, float]:
    rng = np.random.default_rng(seed)
    n = int(rng.choice([0, 1, 3, 12, 80, 400]))
    raters = int(rng.choice([1, 2, 2, 3, 5, 10]))
    k = int(rng.choice([1, 2, 3, 7, 20]))
    missing = float(rng.choice([0.0, 0.0, 0.2, 0.6, 1.0]))
    return rng, n, raters, k, missing


def _plain(value: Any) -> Any:
    """Results of either module as plain tuples (their classes differ)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return dataclasses.astuple(value)


NEW_INTERVALS = ("cohen_kappa_ci", "fleiss_kappa_ci", "gwet_ac1_ci")
"""Intervals the old implementation did not have (tests/agreement/test_bootstrap_intervals.py checks them)."""


def _without_new_intervals(report: dict[str, Any]) -> dict[str, Any]:
    kept = {key: value for key, value in report.items() if key not in NEW_INTERVALS}
    kept["undefined"] = {key: why for key, why in report["undefined"].items() if key not in NEW_INTERVALS}
    return kept


def _names(prefix: str, count: int) -> tuple[str, ...]:
    return tuple(f"{prefix}{i}" for i in range(count))


@pytest.mark.parametrize("seed", SEEDS)
def test_a_random_single_label_table_gives_the_old_report(seed: int) -> None:
    rng, n, raters, k, missing = _shape(seed)
    codes = _single_codes(rng, n, raters, k, missing)
    if seed % 5 == 0 and n:
        codes[codes >= 0] = 0  # one value everywhere: zero expected disagreement
    args = (codes, _names("c", k), _names("item", n), _names("rater", raters))
    new_table, old_table = metrics.RatingTable(*args), old.RatingTable(*args)
    assert _without_new_intervals(metrics.agreement_report(new_table, bootstrap=25, seed=seed)) == (
        old.agreement_report(old_table, bootstrap=25, seed=seed)
    )
    assert _plain(metrics.per_category(new_table)) == _plain(old.per_category(old_table))
    assert _plain(metrics.pairwise(new_table)) == _plain(old.pairwise(old_table))


@pytest.mark.parametrize("seed", SEEDS)
def test_a_random_set_table_gives_the_old_report(seed: int) -> None:
    rng, n, raters, k, missing = _shape(seed)
    present, rated = _sets(rng, n, raters, k, missing)
    if seed % 5 == 0:
        present[:] = False  # every rating the empty set
    args = (present, rated, _names("c", k), _names("item", n), _names("rater", raters))
    new_table, old_table = metrics.MultiRatingTable(*args), old.MultiRatingTable(*args)
    assert _without_new_intervals(metrics.agreement_report(new_table, bootstrap=25, seed=seed)) == (
        old.agreement_report(old_table, bootstrap=25, seed=seed)
    )
    for distance in ("masi", "jaccard"):
        assert _plain(metrics.krippendorff_alpha_set(new_table, distance)) == _plain(
            old.krippendorff_alpha_set(old_table, distance)
        )
    new_nominal, old_nominal = new_table.as_nominal(), old_table.as_nominal()
    assert new_nominal.categories == old_nominal.categories
    assert np.array_equal(new_nominal.codes, old_nominal.codes)


def test_a_large_table_with_many_distinct_sets_gives_the_old_report() -> None:
    rng = np.random.default_rng(10)
    present, rated = _sets(rng, 3000, 10, 70, 0.7)  # > 64 categories: the byte-string keys
    args = (present, rated, _names("c", 70), _names("item", 3000), _names("rater", 10))
    new_table, old_table = metrics.MultiRatingTable(*args), old.MultiRatingTable(*args)
    assert metrics.agreement_report(new_table) == old.agreement_report(old_table)
    codes = _single_codes(rng, 5000, 10, 45, 0.8)
    args = (codes, _names("c", 45), _names("item", 5000), _names("rater", 10))
    assert metrics.agreement_report(metrics.RatingTable(*args)) == old.agreement_report(
        old.RatingTable(*args)
    )


def test_complete_two_annotator_tables_define_every_per_category_coefficient_as_before() -> None:
    rng = np.random.default_rng(3)
    codes = _single_codes(rng, 200, 2, 5, 0.0)
    args = (codes, _names("c", 6), _names("item", 200), ("a", "b"))  # c5 never used
    new = metrics.per_category(metrics.RatingTable(*args))
    assert _plain(new) == _plain(old.per_category(old.RatingTable(*args)))
    assert all(v.value is not None for c in ("c0", "c1") for v in (new[c].cohen_kappa, new[c].fleiss_kappa))
    assert new["c5"].cohen_kappa.reason is not None and "not c5" in new["c5"].cohen_kappa.reason


def _index(k: int) -> CodebookIndex:
    def category(pk: int, dimension: int, parent: int | None, key: str) -> CategoryInfo:
        return CategoryInfo(pk, dimension, parent, key, key, "", "", "", (), pk, "active", None, None)

    dimensions = [
        DimensionInfo(1, "kind", "Kind", "", False, 0, None, None, False),
        DimensionInfo(2, "symptom", "Symptom", "", False, 1, None, None, False),
        DimensionInfo(3, "fix", "Fix", "", True, 2, None, None, False),
    ]
    categories = [category(100 + i, 1, None, f"kind-{i}") for i in range(k)]
    for stage in range(3):
        categories.append(category(200 + stage, 2, None, f"stage-{stage}"))
        categories += [
            category(300 + 10 * stage + leaf, 2, 200 + stage, f"leaf-{stage}-{leaf}") for leaf in range(3)
        ]
    categories += [category(400 + i, 3, None, f"fix-{i}") for i in range(k)]
    return CodebookIndex(codebook_id=1, name="t", version=1, dimensions=dimensions, categories=categories)


def _study_ratings(seed: int) -> StudyRatings:
    rng = np.random.default_rng(seed)
    k, n = 4, int(rng.choice([0, 5, 60]))
    rows = []
    for dimension, ids in (
        (1, [100 + i for i in range(k)]),
        (2, [300 + 10 * s + leaf for s in range(3) for leaf in range(3)]),
        (3, [400 + i for i in range(k)]),
    ):
        for item in range(n):
            for annotator in rng.choice([2, 3, 4, 5], size=int(rng.integers(1, 4)), replace=False).tolist():
                for finding in range(1, int(rng.choice([1, 1, 2])) + 1):
                    chosen = rng.choice([*ids, -1], size=int(rng.choice([1, 1, 2])), replace=False).tolist()
                    rows += [(1 + item % 3, 1000 + item, annotator, finding, dimension, c) for c in chosen]
    dtype = np.dtype(
        [(c, np.int64) for c in ("round", "item", "annotator", "finding", "dimension", "category")]
    )
    array = np.array(rows, dtype=np.int64).reshape(-1, 6)
    rng.shuffle(array)
    structured = np.zeros(len(array), dtype=dtype)
    for j, name in enumerate(dtype.names or ()):
        structured[name] = array[:, j]
    rounds = tuple(RoundInfo(r, r, "") for r in (1, 2, 3))
    return StudyRatings(1, _index(k), rounds, {2: "bo", 3: "al", 4: "cy", 5: "di"}, structured)


@pytest.mark.parametrize("seed", range(12))
def test_a_random_study_builds_the_old_tables(seed: int) -> None:
    ratings = _study_ratings(seed)
    for dimension in ("kind", "symptom", "fix"):
        for options in ({}, {"round_number": 2}, {"level": 1}):
            new, before = (
                build_table(ratings, dimension, **options),
                old_build_table(ratings, dimension, **options),
            )  # type: ignore[arg-type]
            assert (new.units, new.labels, new.counts) == (before.units, before.labels, before.counts)
            assert new.several_findings == before.several_findings and new.is_multi == before.is_multi
            assert (new.table.items, new.table.annotators, new.table.categories) == (
                before.table.items,
                before.table.annotators,
                before.table.categories,
            )
            if isinstance(new.table, metrics.RatingTable):
                assert isinstance(before.table, metrics.RatingTable)
                assert np.array_equal(new.table.codes, before.table.codes)
            else:
                assert isinstance(before.table, metrics.MultiRatingTable)
                assert np.array_equal(new.table.present, before.table.present)
                assert np.array_equal(new.table.rated, before.table.rated)
