"""The agreement report (`metrics.agreement_report`'s JSON, as a snapshot stores it) as typed rows for
the dashboard. Pure: no Django.

The report keeps each undefined figure's reason in ``undefined`` under a key built from the figure's
place (``per_category[<category>].<metric>``, ``pairwise[<a>, <b>].<metric>``); :func:`present` pairs
every figure with its reason in one place, using the key builders of `metrics`, so no reader spells
those keys again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .metrics import category_key, pair_key

# The report's overall coefficients, in the report's order; the two set-valued alphas only on
# multi-valued dimensions.
OVERALL_METRICS = (
    "percent_agreement",
    "cohen_kappa",
    "fleiss_kappa",
    "krippendorff_alpha",
    "gwet_ac1",
    "krippendorff_alpha_masi",
    "krippendorff_alpha_jaccard",
)
CI_KEY = "krippendorff_alpha_ci"


@dataclass(frozen=True)
class Coefficient:
    """One figure: its value, or ``None`` with the reason (``None`` too in a report that gives none)."""

    value: float | None
    reason: str | None = None


@dataclass(frozen=True)
class CategoryRow:
    """One category as present / absent, with how many ratings chose it."""

    key: str
    count: int
    cohen_kappa: Coefficient
    fleiss_kappa: Coefficient
    krippendorff_alpha: Coefficient


@dataclass(frozen=True)
class PairRow:
    """One annotator pair on the ``n`` items both rated."""

    a: str
    b: str
    n: int
    percent_agreement: Coefficient
    cohen_kappa: Coefficient


@dataclass(frozen=True)
class ReportRows:
    """A report's figures: overall (only the coefficients the report has, in its order), the alpha
    interval, per category (the report's order) and per pair."""

    overall: dict[str, Coefficient]
    alpha_ci: tuple[float, float] | None
    alpha_ci_reason: str | None
    categories: tuple[CategoryRow, ...]
    pairs: tuple[PairRow, ...]

    @property
    def annotators(self) -> list[str]:
        """Everyone in a pair, sorted."""
        return sorted({name for pair in self.pairs for name in (pair.a, pair.b)})


def overall(report: Mapping[str, Any], metric: str) -> Coefficient:
    """One overall coefficient of a report, with its reason when undefined."""
    return Coefficient(report.get(metric), report.get("undefined", {}).get(metric))


def present(report: Mapping[str, Any]) -> ReportRows:
    """The rows of one report (one dimension, one round or all rounds)."""
    undefined: Mapping[str, str] = report.get("undefined", {})
    counts: Mapping[str, int] = report.get("category_counts", {})

    def category(name: str, values: Mapping[str, Any]) -> CategoryRow:
        def figure(metric: str) -> Coefficient:
            return Coefficient(values[metric], undefined.get(category_key(name, metric)))

        return CategoryRow(
            key=name,
            count=counts.get(name, 0),
            cohen_kappa=figure("cohen_kappa"),
            fleiss_kappa=figure("fleiss_kappa"),
            krippendorff_alpha=figure("krippendorff_alpha"),
        )

    def pair(values: Mapping[str, Any]) -> PairRow:
        a, b = values["a"], values["b"]

        def figure(metric: str) -> Coefficient:
            return Coefficient(values[metric], undefined.get(pair_key(a, b, metric)))

        return PairRow(
            a=a,
            b=b,
            n=values["n"],
            percent_agreement=figure("percent_agreement"),
            cohen_kappa=figure("cohen_kappa"),
        )

    categories = tuple(category(name, values) for name, values in report.get("per_category", {}).items())
    pairs = tuple(pair(values) for values in report.get("pairwise", []))
    interval = report.get(CI_KEY)
    return ReportRows(
        overall={metric: overall(report, metric) for metric in OVERALL_METRICS if metric in report},
        alpha_ci=(float(interval[0]), float(interval[1])) if interval else None,
        alpha_ci_reason=undefined.get(CI_KEY),
        categories=categories,
        pairs=pairs,
    )
