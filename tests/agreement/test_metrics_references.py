"""Seeded random comparisons with the reference libraries of docs/design.md §6, to 1e-9.

statsmodels (fleiss_kappa, cohens_kappa), scikit-learn (cohen_kappa_score), krippendorff (alpha,
nominal), irrCAC (Gwet's AC1 with the declared categories) and nltk (AnnotationTask.alpha with the
MASI and Jaccard distances). 2-5 annotators, 2-30 categories, missing ratings, multi-choice.
"""

import itertools
import json
import math
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import krippendorff
import numpy as np
import numpy.typing as npt
import pandas as pd
import pytest
from irrCAC.raw import CAC
from nltk.metrics.agreement import AnnotationTask
from nltk.metrics.distance import binary_distance
from nltk.metrics.distance import jaccard_distance as nltk_jaccard_distance
from nltk.metrics.distance import masi_distance as nltk_masi_distance
from sklearn.metrics import cohen_kappa_score
from sklearn.metrics import confusion_matrix as sklearn_confusion_matrix
from statsmodels.stats.inter_rater import cohens_kappa as statsmodels_cohens_kappa
from statsmodels.stats.inter_rater import fleiss_kappa as statsmodels_fleiss_kappa

from apps.agreement.metrics import (
    MultiRatingTable,
    RatingTable,
    Result,
    bootstrap_alpha_ci,
    cohen_kappa,
    confusion_matrix,
    fleiss_kappa,
    gwet_ac1,
    krippendorff_alpha_nominal,
    krippendorff_alpha_set,
    masi_distance,
    pairwise,
    per_category,
    percent_agreement,
)

TOLERANCE = 1e-9
Array = npt.NDArray[Any]
SEEDS = range(40)


def random_codes(seed: int, *, missing: bool = True) -> tuple[Array, int]:
    """items x annotators codes (-1 = missing), annotators agreeing more often than chance."""
    rng = np.random.default_rng(seed)
    n_items, n_annotators, n_categories = (
        int(rng.integers(5, 120)),
        int(rng.integers(2, 6)),
        int(rng.integers(2, 31)),
    )
    truth = rng.integers(0, n_categories, n_items)
    agree = rng.random((n_items, n_annotators)) < rng.uniform(0.3, 0.9)
    codes = np.where(agree, truth[:, None], rng.integers(0, n_categories, (n_items, n_annotators)))
    if missing:
        codes[rng.random(codes.shape) < rng.uniform(0.0, 0.4)] = -1
    return codes.astype(np.int64), n_categories


def make_table(codes: Array, n_categories: int) -> RatingTable:
    return RatingTable(
        codes,
        tuple(f"c{k}" for k in range(n_categories)),
        tuple(f"item{i}" for i in range(codes.shape[0])),
        tuple(f"ann{a}" for a in range(codes.shape[1])),
    )


def close(result: Result, expected: float) -> bool:
    return result.value is not None and abs(result.value - expected) <= TOLERANCE


def reliability_data(codes: Array) -> Array:
    """krippendorff's layout: annotators x items, NaN for missing."""
    return np.where(codes >= 0, codes, np.nan).T.astype(float)


def irrcac(codes: Array, categories: list[Any]) -> dict[str, Any]:
    frame = pd.DataFrame(np.where(codes >= 0, codes, np.nan).astype(float))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return CAC(frame, categories=categories, digits=15).gwet()["est"]  # type: ignore[no-any-return]


# ---------------------------------------------------------------------------------- single label
@pytest.mark.parametrize("seed", SEEDS)
def test_nominal_alpha_matches_the_krippendorff_package(seed: int) -> None:
    codes, q = random_codes(seed)
    ours = krippendorff_alpha_nominal(make_table(codes, q))
    pairable = (codes >= 0).sum(axis=1) >= 2
    if not pairable.any():
        assert ours.value is None
        return
    with np.errstate(divide="ignore", invalid="ignore"):
        expected = krippendorff.alpha(
            reliability_data(codes), value_domain=list(range(q)), level_of_measurement="nominal"
        )
    if math.isnan(expected):
        assert ours.value is None and "expected disagreement is zero" in str(ours.reason)
    else:
        assert close(ours, expected), (ours, expected)


@pytest.mark.parametrize("seed", SEEDS)
def test_gwet_ac1_and_percent_agreement_match_irrcac_with_the_declared_categories(seed: int) -> None:
    codes, q = random_codes(seed)
    table = make_table(codes, q)
    if not ((codes >= 0).sum(axis=1) >= 2).any():
        assert gwet_ac1(table).value is None
        return

    expected = irrcac(codes, list(range(q)))

    assert close(gwet_ac1(table), expected["coefficient_value"])
    assert close(percent_agreement(table), expected["pa"])


@pytest.mark.parametrize("seed", SEEDS)
def test_fleiss_kappa_matches_statsmodels_on_complete_tables(seed: int) -> None:
    codes, q = random_codes(seed, missing=False)
    counts = np.stack([(codes == k).sum(axis=1) for k in range(q)], axis=1)

    ours = fleiss_kappa(make_table(codes, q))

    if len(np.unique(codes)) == 1:
        assert ours.value is None
    else:
        assert close(ours, statsmodels_fleiss_kappa(counts, method="fleiss"))


@pytest.mark.parametrize("seed", SEEDS)
def test_fleiss_kappa_with_missing_raters_matches_statsmodels_on_equal_counts(seed: int) -> None:
    # Different raters per item, each item rated by the same number: the design Fleiss (1971) allows.
    rng = np.random.default_rng(seed)
    codes, q = random_codes(seed, missing=False)
    if codes.shape[1] < 3:
        codes = np.hstack([codes, codes[:, :1]])
    for row in codes:
        row[rng.choice(codes.shape[1], size=1, replace=False)] = -1
    counts = np.stack([(codes == k).sum(axis=1) for k in range(q)], axis=1)

    assert close(fleiss_kappa(make_table(codes, q)), statsmodels_fleiss_kappa(counts, method="fleiss"))


@pytest.mark.parametrize("seed", SEEDS)
def test_cohen_kappa_matches_scikit_learn_and_statsmodels_listwise(seed: int) -> None:
    codes, q = random_codes(seed)
    codes = codes[:, :2]
    both = (codes >= 0).all(axis=1)
    ours = cohen_kappa(make_table(codes, q))
    a, b = codes[both, 0], codes[both, 1]
    if both.sum() == 0 or (len(set(a)) == 1 and set(a) == set(b)):
        assert ours.value is None
        return

    contingency = sklearn_confusion_matrix(a, b, labels=list(range(q)))

    assert close(ours, cohen_kappa_score(a, b, labels=list(range(q))))
    assert close(ours, statsmodels_cohens_kappa(contingency, return_results=False))


@pytest.mark.parametrize("seed", SEEDS)
def test_every_pair_matches_scikit_learn(seed: int) -> None:
    codes, q = random_codes(seed)
    for pair, (j, k) in zip(
        pairwise(make_table(codes, q)), itertools.combinations(range(codes.shape[1]), 2), strict=True
    ):
        both = (codes[:, j] >= 0) & (codes[:, k] >= 0)
        assert pair.n == both.sum()
        if pair.cohen_kappa.value is not None:
            assert close(pair.cohen_kappa, cohen_kappa_score(codes[both, j], codes[both, k]))
            assert close(pair.percent_agreement, float(np.mean(codes[both, j] == codes[both, k])))


@pytest.mark.parametrize("seed", SEEDS)
def test_per_category_binary_coefficients_match_the_references(seed: int) -> None:
    codes, q = random_codes(seed)
    table = make_table(codes, q)
    result = per_category(table)
    for k, name in enumerate(table.categories):
        binary = np.where(codes >= 0, (codes == k).astype(np.int64), -1)
        pairable = (binary >= 0).sum(axis=1) >= 2
        if pairable.any():
            with np.errstate(divide="ignore", invalid="ignore"):
                expected = krippendorff.alpha(
                    reliability_data(binary), value_domain=[0, 1], level_of_measurement="nominal"
                )
            if math.isnan(expected):
                assert result[name].krippendorff_alpha.value is None
            else:
                assert close(result[name].krippendorff_alpha, expected)
        if codes.shape[1] == 2:
            both = (binary >= 0).all(axis=1)
            a, b = binary[both, 0], binary[both, 1]
            if both.any() and not (len(set(a)) == 1 and set(a) == set(b)):
                assert close(result[name].cohen_kappa, cohen_kappa_score(a, b))


@pytest.mark.parametrize("seed", SEEDS)
def test_per_category_fleiss_kappa_matches_statsmodels_on_complete_tables(seed: int) -> None:
    codes, q = random_codes(seed, missing=False)
    result = per_category(make_table(codes, q))
    for k in range(q):
        present = (codes == k).sum(axis=1)
        counts = np.stack([codes.shape[1] - present, present], axis=1)
        if 0 < present.sum() < codes.size:
            assert close(result[f"c{k}"].fleiss_kappa, statsmodels_fleiss_kappa(counts))
        else:
            assert result[f"c{k}"].fleiss_kappa.value is None


@pytest.mark.parametrize("seed", range(10))
def test_confusion_matrix_matches_scikit_learn(seed: int) -> None:
    codes, q = random_codes(seed)
    table = make_table(codes, q)
    both = (codes[:, 0] >= 0) & (codes[:, 1] >= 0)

    matrix = confusion_matrix(table, "ann0", "ann1")

    assert (
        matrix.counts.tolist()
        == sklearn_confusion_matrix(codes[both, 0], codes[both, 1], labels=list(range(q))).tolist()
    )
    assert sum(len(cell) for row in matrix.items for cell in row) == both.sum()


@pytest.mark.parametrize("seed", range(10))
def test_bootstrap_replicates_are_krippendorff_alpha_of_resampled_units(seed: int) -> None:
    codes, q = random_codes(seed)
    pairable = np.flatnonzero((codes >= 0).sum(axis=1) >= 2)
    if pairable.size == 0:
        return
    # The documented draw: replicate r takes rng.integers(0, U, U) of the U pairable units in table order.
    rng = np.random.default_rng(seed)
    replicates = []
    for _ in range(60):
        sample = codes[pairable[rng.integers(0, pairable.size, pairable.size)]]
        with np.errstate(divide="ignore", invalid="ignore"):
            alpha = krippendorff.alpha(
                reliability_data(sample), value_domain=list(range(q)), level_of_measurement="nominal"
            )
        if not math.isnan(alpha):
            replicates.append(alpha)

    result = bootstrap_alpha_ci(make_table(codes, q), 60, seed=seed)

    if not replicates:
        assert result.value is None
        return
    assert result.value is not None
    assert result.replicates == len(replicates)
    assert np.allclose(result.value, np.percentile(replicates, [2.5, 97.5]), rtol=0, atol=TOLERANCE)


# ---------------------------------------------------------------------------------- multi-choice
def random_sets(seed: int, max_categories: int = 6) -> MultiRatingTable:
    rng = np.random.default_rng(seed)
    n_items, n_annotators = int(rng.integers(4, 40)), int(rng.integers(2, 6))
    n_categories = int(rng.integers(2, max_categories + 1))
    truth = rng.random((n_items, n_categories)) < 0.35
    noise = rng.random((n_items, n_annotators, n_categories)) < rng.uniform(0.05, 0.4)
    present = truth[:, None, :] ^ noise
    rated = rng.random((n_items, n_annotators)) >= rng.uniform(0.0, 0.35)
    present &= rated[:, :, None]
    return MultiRatingTable(
        present,
        rated,
        tuple(f"c{k}" for k in range(n_categories)),
        tuple(f"item{i}" for i in range(n_items)),
        tuple(f"ann{a}" for a in range(n_annotators)),
    )


def nltk_triples(table: MultiRatingTable) -> Iterator[tuple[str, str, frozenset[str]]]:
    for i, item in enumerate(table.items):
        for a, annotator in enumerate(table.annotators):
            if table.rated[i, a]:
                chosen = frozenset(c for k, c in enumerate(table.categories) if table.present[i, a, k])
                yield annotator, item, chosen


def empty_sets_equal(distance: Callable[[frozenset[str], frozenset[str]], float]) -> Callable[..., float]:
    """nltk's MASI and Jaccard divide by zero on two empty sets; §6 sets that distance to 0."""
    return lambda a, b: 0.0 if not a and not b else distance(a, b)


def all_one_value(table: MultiRatingTable) -> bool:
    pairable = table.rated.sum(axis=1) >= 2
    values = {s for _, item, s in nltk_triples(table) if pairable[table.items.index(item)]}
    return len(values) <= 1


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize(
    ("distance", "nltk_distance"),
    [("masi", nltk_masi_distance), ("jaccard", nltk_jaccard_distance)],
)
def test_set_alpha_matches_nltk_annotation_task(seed: int, distance: str, nltk_distance: Any) -> None:
    table = random_sets(seed)
    ours = krippendorff_alpha_set(table, distance)  # type: ignore[arg-type]
    if not (table.rated.sum(axis=1) >= 2).any() or all_one_value(table):
        assert ours.value is None  # nltk would say 1.0 for a single value: §6 says undefined
        return

    expected = AnnotationTask(
        data=list(nltk_triples(table)), distance=empty_sets_equal(nltk_distance)
    ).alpha()

    assert close(ours, expected), (ours, expected)


@pytest.mark.parametrize("seed", SEEDS)
def test_nominal_coefficients_of_sets_match_nltk_and_krippendorff_on_set_codes(seed: int) -> None:
    table = random_sets(seed)
    nominal = table.as_nominal()
    if not (table.rated.sum(axis=1) >= 2).any() or all_one_value(table):
        assert krippendorff_alpha_nominal(table).value is None
        return

    by_nltk = AnnotationTask(data=list(nltk_triples(table)), distance=binary_distance).alpha()
    by_krippendorff = krippendorff.alpha(
        reliability_data(nominal.codes),
        value_domain=list(range(len(nominal.categories))),
        level_of_measurement="nominal",
    )

    assert close(krippendorff_alpha_nominal(table), by_nltk)
    assert close(krippendorff_alpha_nominal(table), by_krippendorff)


@pytest.mark.parametrize("seed", SEEDS)
def test_set_gwet_ac1_matches_irrcac_over_the_power_set_of_categories(seed: int) -> None:
    table = random_sets(seed, max_categories=4)
    nominal = table.as_nominal()
    if not (table.rated.sum(axis=1) >= 2).any():
        return
    # Every subset of the declared categories is a category for irrCAC, named like as_nominal names it.
    subsets = [
        json.dumps(list(chosen))
        for size in range(len(table.categories) + 1)
        for chosen in itertools.combinations(table.categories, size)
    ]
    ratings = np.array(
        [[nominal.categories[c] if c >= 0 else None for c in row] for row in nominal.codes.tolist()],
        dtype=object,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = CAC(pd.DataFrame(ratings), categories=subsets, digits=15).gwet()["est"][
            "coefficient_value"
        ]

    assert close(gwet_ac1(table), expected)


@pytest.mark.parametrize("seed", range(200))
def test_masi_distance_matches_nltk_except_for_two_empty_sets(seed: int) -> None:
    rng = np.random.default_rng(seed)
    a = frozenset(rng.choice(list("abcdef"), size=rng.integers(0, 5), replace=False).tolist())
    b = frozenset(rng.choice(list("abcdef"), size=rng.integers(0, 5), replace=False).tolist())
    if not a and not b:
        assert masi_distance(a, b) == 0.0
        return

    assert abs(masi_distance(a, b) - nltk_masi_distance(a, b)) <= 1e-15
