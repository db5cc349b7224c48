"""Bootstrap intervals of Cohen's kappa, Fleiss' kappa and Gwet's AC1 (apps/agreement/bootstrap.py).

A replicate is computed from the number of items of each rating profile in the sample; these tests hold that
computation to the coefficients of `metrics` on the sample written out item by item, and the intervals to a
plain item-resampling bootstrap.
"""

import math
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from apps.agreement import bootstrap
from apps.agreement.metrics import (
    INTERVAL_METRICS,
    RatingTable,
    agreement_report,
    cohen_kappa,
    fleiss_kappa,
    gwet_ac1,
)

from .test_metrics_references import make_table, random_codes, random_sets

Array = npt.NDArray[Any]


def profiles_of(codes: Array, q: int) -> bootstrap.Profiles:
    rated = codes >= 0
    units = np.nonzero(rated)[0]
    keys, counts = np.unique(units * q + codes[rated], return_counts=True)
    return bootstrap.profiles(keys // q, keys % q, counts, q)


def written_out(found: bootstrap.Profiles, weights: Array) -> Array:
    """The sample with ``weights[p]`` items of profile p, one row per item, ratings in columns."""
    width = int(found.m.max())
    rows = []
    for p, times in enumerate(weights):
        cells = found.profile == p
        ratings = np.repeat(found.code[cells], found.count[cells])
        rows += [np.r_[ratings, np.full(width - ratings.size, -1)]] * int(times)
    return np.array(rows, dtype=np.int64)


def same(value: float, expected: float | None) -> bool:
    if expected is None:
        return math.isnan(value)
    return abs(value - expected) < 1e-9


@pytest.mark.parametrize("seed", range(25))
def test_a_replicate_of_fleiss_kappa_and_ac1_is_the_coefficient_of_the_sample_written_out(seed: int) -> None:
    codes, q = random_codes(seed)
    found = profiles_of(codes, q)
    if found.size.size == 0:
        return
    rng = np.random.default_rng(seed + 100)
    samples = [found.size, *rng.multinomial(int(found.size.sum()), found.size / found.size.sum(), size=5)]
    for weights in samples:
        table = make_table(written_out(found, weights), q)
        ac1 = bootstrap.gwet_ac1(found, q)
        assert not isinstance(ac1, str)
        assert same(ac1.statistic(np.array([weights], dtype=float))[0], gwet_ac1(table).value)
        fleiss = bootstrap.fleiss_kappa(found)
        if isinstance(fleiss, str):
            assert fleiss_kappa(table).value is None
        else:
            assert same(fleiss.statistic(np.array([weights], dtype=float))[0], fleiss_kappa(table).value)


@pytest.mark.parametrize("seed", range(25))
def test_a_replicate_of_cohen_kappa_is_the_coefficient_of_the_sample_written_out(seed: int) -> None:
    codes, q = random_codes(seed)
    a, b = codes[:, 0], codes[:, 1]
    resampling = bootstrap.cohen_kappa(a, b, q)
    if isinstance(resampling, str):
        assert not ((a >= 0) & (b >= 0)).any()
        return
    both = (a >= 0) & (b >= 0)
    pairs = np.unique(a[both] * q + b[both])  # the profiles, in the documented order
    rng = np.random.default_rng(seed)
    for weights in [resampling.size, *rng.multinomial(int(both.sum()), resampling.size / both.sum(), size=5)]:
        sample = np.repeat(np.stack([pairs // q, pairs % q], axis=1), weights, axis=0)
        expected = cohen_kappa(make_table(sample, q)).value
        assert same(resampling.statistic(np.array([weights], dtype=float))[0], expected)


def test_the_intervals_match_a_bootstrap_that_resamples_items_one_by_one() -> None:
    rng = np.random.default_rng(7)
    truth = rng.integers(0, 4, 400)
    codes = np.stack([np.where(rng.random(400) < 0.75, truth, rng.integers(0, 4, 400)) for _ in range(2)], 1)
    table = make_table(codes, 4)
    report = agreement_report(table, bootstrap=4000, seed=11)

    plain: dict[str, list[float]] = {"cohen_kappa": [], "fleiss_kappa": [], "gwet_ac1": []}
    for _ in range(4000):
        sample = make_table(codes[rng.integers(0, 400, 400)], 4)
        for name, metric in (
            ("cohen_kappa", cohen_kappa),
            ("fleiss_kappa", fleiss_kappa),
            ("gwet_ac1", gwet_ac1),
        ):
            value = metric(sample).value
            assert value is not None
            plain[name].append(value)

    for name, values in plain.items():
        low, high = np.percentile(values, [2.5, 97.5])
        ci = report[f"{name}_ci"]
        assert ci[0] < report[name] < ci[1]
        # Two independent bootstraps of 4,000 replicates: their bounds differ by sampling noise only.
        assert abs(ci[0] - low) < 0.015 and abs(ci[1] - high) < 0.015, (name, ci, (low, high))


def test_a_report_with_bootstrap_gives_every_interval_and_is_reproducible_with_a_seed() -> None:
    codes, q = random_codes(3, missing=False)
    table = make_table(codes[:, :2], q)

    first = agreement_report(table, bootstrap=200, seed=5)
    again = agreement_report(table, bootstrap=200, seed=5)

    for metric in INTERVAL_METRICS:
        assert first[f"{metric}_ci"] == again[f"{metric}_ci"]
        assert first[f"{metric}_ci"][0] <= first[metric] <= first[f"{metric}_ci"][1]
    assert "cohen_kappa_ci" not in agreement_report(table)


def test_an_interval_is_null_with_the_coefficients_reason_when_the_coefficient_is_undefined() -> None:
    three = RatingTable(
        np.array([[0, 0, 1], [1, 1, 1], [0, 1, -1], [1, 1, 0]]),
        ("yes", "no"),
        ("i1", "i2", "i3", "i4"),
        ("a", "b", "c"),
    )

    report = agreement_report(three, bootstrap=100, seed=1)

    assert report["cohen_kappa_ci"] is None
    assert report["undefined"]["cohen_kappa_ci"].startswith(
        "undefined: Cohen's kappa needs exactly two annotators"
    )
    assert report["fleiss_kappa_ci"] is None
    assert "same number" in report["undefined"]["fleiss_kappa_ci"]
    assert report["gwet_ac1_ci"] is not None and report["krippendorff_alpha_ci"] is not None


def test_replicates_where_a_kappa_is_undefined_are_dropped() -> None:
    # Three items agree on "yes", one on "no": a sample without the "no" item has no expected disagreement.
    table = RatingTable(
        np.array([[0, 0], [0, 0], [0, 0], [1, 1]]), ("yes", "no"), ("a", "b", "c", "d"), ("x", "y")
    )

    interval = bootstrap.interval(bootstrap.cohen_kappa(table.codes[:, 0], table.codes[:, 1], 2), 500, seed=2)

    assert interval.value == (1.0, 1.0)
    assert interval.replicates is not None and 0 < interval.replicates < 500  # (3/4)^4 of them dropped


def test_multi_choice_tables_get_intervals_over_their_sets() -> None:
    table = random_sets(4)

    report = agreement_report(table, bootstrap=300, seed=3)

    for metric in ("gwet_ac1", "krippendorff_alpha"):
        if report[metric] is not None:
            assert report[f"{metric}_ci"][0] <= report[metric] + 1e-9
            assert report[metric] - 1e-9 <= report[f"{metric}_ci"][1]
