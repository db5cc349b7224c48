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


@dataclass(frozen=True)
class ScopeFigures:
    """One report (a dimension in one round, or all rounds) as every table shows it: the dashboard's
    summary cell and detail line, its downloads, and the package's ``agreement.md``.

    ``n`` is always the number of items *compared* (rated by two or more annotators: the units the
    coefficients use, ``n_pairable``); ``rated`` the items anyone rated (``n_items``). The dashboard once
    printed ``n_pairable`` as "n" while ``agreement.md`` printed ``n_items`` as "items", so one cell read
    "n 55" on the page and "items 62" in the package; both now read these fields."""

    error: str | None
    n: int
    rated: int
    annotators: int
    ratings: int
    coefficients: dict[str, Coefficient]
    alpha_ci: tuple[float, float] | None
    alpha_ci_reason: str | None

    @property
    def reasons(self) -> dict[str, str]:
        """Metric → why it is undefined, for the undefined ones."""
        return {k: c.reason for k, c in self.coefficients.items() if c.value is None and c.reason}


def scope_figures(report: Mapping[str, Any]) -> ScopeFigures:
    """The figures of one report (``{"error": reason}`` gives an error and zeros)."""
    if "error" in report:
        return ScopeFigures(str(report["error"]), 0, 0, 0, 0, {}, None, None)
    interval = report.get(CI_KEY)
    return ScopeFigures(
        error=None,
        n=int(report.get("n_pairable", 0)),
        rated=int(report.get("n_items", 0)),
        annotators=int(report.get("n_annotators", 0)),
        ratings=int(report.get("n_ratings", 0)),
        coefficients={metric: overall(report, metric) for metric in OVERALL_METRICS if metric in report},
        alpha_ci=(float(interval[0]), float(interval[1])) if interval else None,
        alpha_ci_reason=report.get("undefined", {}).get(CI_KEY),
    )
