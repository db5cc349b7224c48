"""A rater against the gold decisions (apps/raters/gold_metrics.py, pure): figures checked by hand."""

from __future__ import annotations

import pytest

from apps.raters.gold_metrics import gold_report, wilson_interval


def test_single_choice_accuracy_per_category_figures_and_the_confusion_matrix() -> None:
    a, b = frozenset({"a"}), frozenset({"b"})
    # gold a,a,a,b; rater a,a,b,b: tp a=2 (predicted 2, support 3), tp b=1 (predicted 2, support 1)
    report = gold_report([(a, a), (a, a), (a, b), (b, b)], ["a", "b", "c"], multiple=False)
    assert report["n"] == 4 and report["accuracy"] == 0.75
    assert report["accuracy_ci"] == pytest.approx(list(wilson_interval(3, 4) or ()))
    assert report["per_category"]["a"] == {
        "support": 3, "predicted": 2, "true_positives": 2, "precision": 1.0, "recall": pytest.approx(2 / 3),
        "f1": pytest.approx(0.8),
    }  # fmt: skip
    assert report["per_category"]["b"]["precision"] == 0.5 and report["per_category"]["b"]["recall"] == 1.0
    # c was never decided nor chosen: undefined, and left out of the macro average
    assert report["per_category"]["c"]["precision"] is None and report["per_category"]["c"]["f1"] is None
    assert report["macro_f1"] == pytest.approx((0.8 + 2 / 3) / 2)
    assert report["micro_f1"] == pytest.approx(0.75)  # 3 hits of 4 predicted and 4 decided
    assert report["confusion"] == {"categories": ["a", "b", "c"], "counts": [[2, 1, 0], [0, 1, 0], [0, 0, 0]]}


def test_multiple_choice_counts_each_category_and_has_no_confusion_matrix() -> None:
    report = gold_report(
        [(frozenset({"x", "y"}), frozenset({"x"})), (frozenset({"y"}), frozenset({"y", "z"}))],
        ["x", "y"],
        multiple=True,
    )
    assert report["accuracy"] == 0.0 and "confusion" not in report
    assert list(report["per_category"]) == ["x", "y", "z"]  # a key outside the codebook's comes after
    assert report["per_category"]["y"] == {
        "support": 2, "predicted": 1, "true_positives": 1, "precision": 1.0, "recall": 0.5,
        "f1": pytest.approx(2 / 3),
    }  # fmt: skip
    assert report["per_category"]["z"]["precision"] == 0.0 and report["per_category"]["z"]["recall"] is None


def test_no_items_give_no_figures() -> None:
    report = gold_report([], ["a"], multiple=False)
    assert (report["n"], report["accuracy"], report["accuracy_ci"], report["macro_f1"]) == (
        0,
        None,
        None,
        None,
    )
