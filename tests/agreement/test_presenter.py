"""The dashboard's rows from an agreement report: every figure with its reason (no database)."""

from __future__ import annotations

from typing import Any

import numpy as np

from apps.agreement.metrics import RatingTable, agreement_report
from apps.agreement.presenter import CategoryRow, Coefficient, PairRow, overall, present

# A report as a snapshot stores it (the JSON of metrics.agreement_report), with known values.
REPORT: dict[str, Any] = {
    "n_items": 4,
    "n_annotators": 2,
    "n_ratings": 8,
    "percent_agreement": 0.75,
    "cohen_kappa": 0.5,
    "fleiss_kappa": 0.4667,
    "krippendorff_alpha": None,
    "gwet_ac1": 0.5556,
    "category_counts": {"crash": 5, "hang": 3},
    "per_category": {
        "crash": {"cohen_kappa": 0.5, "fleiss_kappa": None, "krippendorff_alpha": 0.53},
        "hang": {"cohen_kappa": None, "fleiss_kappa": 0.47, "krippendorff_alpha": None},
    },
    "pairwise": [
        {"a": "bob", "b": "alice", "n": 4, "percent_agreement": 0.75, "cohen_kappa": None},
    ],
    "krippendorff_alpha_ci": [0.1, 0.9],
    "undefined": {
        "krippendorff_alpha": "no variation",
        "per_category[crash].fleiss_kappa": "one rating per item",
        "per_category[hang].cohen_kappa": "hang is never absent",
        "per_category[hang].krippendorff_alpha": "hang is never absent",
        "pairwise[bob, alice].cohen_kappa": "one category only",
    },
}


def test_overall_figures_come_in_the_reports_order_with_their_reasons() -> None:
    rows = present(REPORT)

    assert list(rows.overall) == [
        "percent_agreement",
        "cohen_kappa",
        "fleiss_kappa",
        "krippendorff_alpha",
        "gwet_ac1",
    ]
    assert rows.overall["cohen_kappa"] == Coefficient(0.5)
    assert rows.overall["krippendorff_alpha"] == Coefficient(None, "no variation")
    assert overall(REPORT, "krippendorff_alpha") == Coefficient(None, "no variation")
    assert (rows.alpha_ci, rows.alpha_ci_reason) == ((0.1, 0.9), None)


def test_each_category_row_pairs_its_figures_with_their_reasons() -> None:
    assert present(REPORT).categories == (
        CategoryRow(
            key="crash",
            count=5,
            cohen_kappa=Coefficient(0.5),
            fleiss_kappa=Coefficient(None, "one rating per item"),
            krippendorff_alpha=Coefficient(0.53),
        ),
        CategoryRow(
            key="hang",
            count=3,
            cohen_kappa=Coefficient(None, "hang is never absent"),
            fleiss_kappa=Coefficient(0.47),
            krippendorff_alpha=Coefficient(None, "hang is never absent"),
        ),
    )


def test_each_pair_row_pairs_its_figures_with_their_reasons() -> None:
    rows = present(REPORT)

    assert rows.pairs == (
        PairRow(
            a="bob",
            b="alice",
            n=4,
            percent_agreement=Coefficient(0.75),
            cohen_kappa=Coefficient(None, "one category only"),
        ),
    )
    assert rows.annotators == ["alice", "bob"]


def test_set_valued_alphas_and_a_missing_interval_are_shown_only_when_the_report_has_them() -> None:
    report = {**REPORT, "krippendorff_alpha_masi": 0.6, "krippendorff_alpha_ci": None}
    report["undefined"] = {**REPORT["undefined"], "krippendorff_alpha_ci": "too few items"}

    rows = present(report)

    assert list(rows.overall)[-1] == "krippendorff_alpha_masi"
    assert "krippendorff_alpha_jaccard" not in rows.overall
    assert (rows.alpha_ci, rows.alpha_ci_reason) == (None, "too few items")


def test_every_undefined_figure_of_a_computed_report_finds_its_reason() -> None:
    # Three annotators who all chose "crash": kappa and alpha are undefined overall, per category and
    # per pair; the presenter must find each reason under the key metrics.py wrote it.
    table = RatingTable(
        np.zeros((3, 3), dtype=np.int64), ("crash", "hang"), ("i1", "i2", "i3"), ("alice", "bob", "carol")
    )
    report = agreement_report(table)

    rows = present(report)

    figures = [
        *rows.overall.values(),
        *(f for c in rows.categories for f in (c.cohen_kappa, c.fleiss_kappa, c.krippendorff_alpha)),
        *(f for p in rows.pairs for f in (p.percent_agreement, p.cohen_kappa)),
    ]
    undefined = [f for f in figures if f.value is None]
    assert undefined and all(f.reason for f in undefined)
    assert len(undefined) == len(report["undefined"])
    assert [(p.a, p.b) for p in rows.pairs] == [("alice", "bob"), ("alice", "carol"), ("bob", "carol")]
