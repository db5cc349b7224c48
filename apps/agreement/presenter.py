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

from .metrics import INTERVAL_METRICS, category_key, pair_key

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


def interval_key(metric: str) -> str:
    """The report's key of a coefficient's bootstrap interval (`metrics.INTERVAL_METRICS`)."""
    return f"{metric}_ci"


@dataclass(frozen=True)
class Interval:
    """A 95 % bootstrap interval, or ``None`` with the reason (``None`` too in a report without one)."""

    bounds: tuple[float, float] | None
    reason: str | None = None


def intervals(report: Mapping[str, Any]) -> dict[str, Interval]:
    """Every interval a report has, by coefficient (``krippendorff_alpha``, ``cohen_kappa``, ...)."""
    undefined: Mapping[str, str] = report.get("undefined", {})
    found = {}
    for metric in INTERVAL_METRICS:
        key = interval_key(metric)
        if key in report or key in undefined:
            bounds = report.get(key)
            found[metric] = Interval(
                (float(bounds[0]), float(bounds[1])) if bounds else None, undefined.get(key)
            )
    return found


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
    intervals: dict[str, Interval]
    categories: tuple[CategoryRow, ...]
    pairs: tuple[PairRow, ...]

    @property
    def alpha_ci(self) -> tuple[float, float] | None:
        return _bounds(self.intervals, "krippendorff_alpha")

    @property
    def alpha_ci_reason(self) -> str | None:
        return _reason(self.intervals, "krippendorff_alpha")

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
    return ReportRows(
        overall={metric: overall(report, metric) for metric in OVERALL_METRICS if metric in report},
        intervals=intervals(report),
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
    intervals: dict[str, Interval]

    @property
    def alpha_ci(self) -> tuple[float, float] | None:
        return _bounds(self.intervals, "krippendorff_alpha")

    def interval(self, metric: str) -> tuple[float, float] | None:
        return _bounds(self.intervals, metric)

    @property
    def reasons(self) -> dict[str, str]:
        """Metric → why it is undefined, for the undefined ones."""
        return {k: c.reason for k, c in self.coefficients.items() if c.value is None and c.reason}


def scope_figures(report: Mapping[str, Any]) -> ScopeFigures:
    """The figures of one report (``{"error": reason}`` gives an error and zeros)."""
    if "error" in report:
        return ScopeFigures(str(report["error"]), 0, 0, 0, 0, {}, {})
    return ScopeFigures(
        error=None,
        n=int(report.get("n_pairable", 0)),
        rated=int(report.get("n_items", 0)),
        annotators=int(report.get("n_annotators", 0)),
        ratings=int(report.get("n_ratings", 0)),
        coefficients={metric: overall(report, metric) for metric in OVERALL_METRICS if metric in report},
        intervals=intervals(report),
    )


def _bounds(found: Mapping[str, Interval], metric: str) -> tuple[float, float] | None:
    interval = found.get(metric)
    return interval.bounds if interval else None


def _reason(found: Mapping[str, Interval], metric: str) -> str | None:
    interval = found.get(metric)
    return interval.reason if interval else None
