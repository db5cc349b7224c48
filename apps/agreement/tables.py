"""The agreement dashboard's tables as `core.tables.Table`s, for download (CSV, Markdown, LaTeX) and for
the replication package's ``agreement.md``. Pure: no Django.

Every table reads a report through `presenter.scope_figures`, the one reading of n and of every value,
so the page, its downloads and the package cannot disagree (docs/agreement.md "Downloads").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from apps.core.tables import Cell, Table

from .presenter import ScopeFigures, overall, present, scope_figures

METRICS: tuple[tuple[str, str], ...] = (
    ("percent_agreement", "% agreement"),
    ("cohen_kappa", "Cohen κ"),
    ("fleiss_kappa", "Fleiss κ"),
    ("krippendorff_alpha", "Krippendorff α"),  # noqa: RUF001
    ("gwet_ac1", "Gwet AC1"),
)
SET_METRICS: tuple[tuple[str, str], ...] = (
    ("krippendorff_alpha_masi", "α (MASI)"),  # noqa: RUF001
    ("krippendorff_alpha_jaccard", "α (Jaccard)"),  # noqa: RUF001
)
COUNT_COLUMNS = ("items compared (n)", "items rated", "annotators", "ratings")
CI_METRICS: tuple[tuple[str, str], ...] = (
    ("krippendorff_alpha", "α"),  # noqa: RUF001
    ("cohen_kappa", "Cohen κ"),
    ("gwet_ac1", "AC1"),
)
"""The coefficients whose 95 % bootstrap interval the tables show (the report has Fleiss' kappa's too)."""
CI_COLUMNS = tuple(f"{name} 95% CI {end}" for _, name in CI_METRICS for end in ("low", "high"))
TABLES = ("summary", "rounds", "categories", "pairs", "confusion", "discussion")
"""The dashboard's downloadable tables, by the name in their URL."""


ALL_ROUNDS_LABEL = "all rounds"


def round_label(number: int, name: str) -> str:
    """A round as the agreement tables name it: ``1 (Pilot)``, or ``2`` for a round without a name."""
    name = " ".join(name.replace("|", "/").split())
    return f"{number} ({name})" if name else str(number)


def metrics_of(reports: Sequence[Mapping[str, Any]]) -> tuple[tuple[str, str], ...]:
    """The coefficients to show: the set-valued alphas only when a report has them."""
    multi = any("krippendorff_alpha_masi" in report for report in reports)
    return METRICS + (SET_METRICS if multi else ())


def scope_cells(figures: ScopeFigures, metrics: Sequence[tuple[str, str]]) -> list[Cell]:
    """Counts, coefficients and the intervals of one report (None where undefined)."""
    if figures.error is not None:
        return [None] * (len(COUNT_COLUMNS) + len(metrics) + len(CI_COLUMNS))
    cells: list[Cell] = [figures.n, figures.rated, figures.annotators, figures.ratings]
    cells += [figures.coefficients[m].value if m in figures.coefficients else None for m, _ in metrics]
    for metric, _ in CI_METRICS:
        bounds = figures.interval(metric)
        cells += list(bounds) if bounds else [None, None]
    return cells


def _notes(label: str, figures: ScopeFigures, metrics: Sequence[tuple[str, str]]) -> list[str]:
    if figures.error is not None:
        return [f"{label}: {figures.error}"]
    names = dict(metrics)
    return [f"{label}, {names[m]}: {reason}" for m, reason in figures.reasons.items() if m in names]


def rounds_table(title: str, periods: Sequence[tuple[str, Mapping[str, Any]]]) -> Table:
    """One dimension: a row per round (and all rounds), counts, coefficients, intervals."""
    metrics = metrics_of([report for _, report in periods])
    rows, notes = [], []
    for label, report in periods:
        figures = scope_figures(report)
        rows.append((label, *scope_cells(figures, metrics)))
        notes += _notes(label, figures, metrics)
    columns = ("Round", *COUNT_COLUMNS, *(name for _, name in metrics), *CI_COLUMNS)
    return Table(title, columns, tuple(rows), tuple(notes))


def summary_table(result: Mapping[str, Any]) -> Table:
    """Every dimension and round of a dashboard snapshot, one row each."""
    scopes = [(str(r["number"]), r["label"]) for r in result["rounds"]] + [("all", "All rounds")]
    reports = [report for d in result["dimensions"] for report in d["reports"].values()]
    metrics = metrics_of(reports)
    rows, notes = [], []
    for dimension in result["dimensions"]:
        for key, label in scopes:
            if key not in dimension["reports"]:
                continue
            figures = scope_figures(dimension["reports"][key])
            rows.append((dimension["name"], label, *scope_cells(figures, metrics)))
            notes += _notes(f"{dimension['name']}, {label}", figures, metrics)
    columns = ("Dimension", "Round", *COUNT_COLUMNS, *(name for _, name in metrics), *CI_COLUMNS)
    return Table("Agreement per dimension and round", columns, tuple(rows), tuple(notes))


def categories_table(title: str, report: Mapping[str, Any], names: Mapping[str, str]) -> Table:
    """Per category (present / absent): uses, Cohen's and Fleiss' kappa, alpha; the report's order."""
    rows = [
        (names.get(row.key, row.key), row.count, row.cohen_kappa.value, row.fleiss_kappa.value,
         row.krippendorff_alpha.value)
        for row in present(report).categories
    ]  # fmt: skip
    columns = ("Category", "uses", "Cohen κ", "Fleiss κ", "Krippendorff α")  # noqa: RUF001
    return Table(title, columns, tuple(rows))


def pairs_table(title: str, report: Mapping[str, Any]) -> Table:
    rows = [
        (f"{p.a} · {p.b}", p.n, p.percent_agreement.value, p.cohen_kappa.value) for p in present(report).pairs
    ]
    return Table(title, ("Annotators", "items", "% agreement", "Cohen κ"), tuple(rows))


def discussion_table(result: Mapping[str, Any]) -> Table:
    """Each revealed round's Cohen's kappa and Krippendorff's alpha, blind and after discussion, per
    dimension (the dashboard's "Before and after discussion")."""
    names = {d["key"]: d["name"] for d in result["dimensions"]}
    rows: list[tuple[Cell, ...]] = []
    for d in result["dimensions"]:
        for number, after in sorted(
            (result.get("discussed") or {}).get(d["key"], {}).items(), key=lambda kv: int(kv[0])
        ):
            blind = d["reports"].get(number)
            if blind is None:
                continue
            rows.append(
                (
                    names[d["key"]],
                    number,
                    overall(blind, "cohen_kappa").value,
                    overall(after, "cohen_kappa").value,
                    overall(blind, "krippendorff_alpha").value,
                    overall(after, "krippendorff_alpha").value,
                )
            )
    columns = ("Dimension", "Round", "Cohen κ blind", "Cohen κ after", "α blind", "α after")  # noqa: RUF001
    return Table("Agreement before and after discussion", columns, tuple(rows))


def confusion_table(
    title: str, labels: Sequence[str], counts: Sequence[Sequence[int]], a: str, b: str
) -> Table:
    """Rows: annotator `a`'s values; columns: `b`'s."""
    rows: list[tuple[Cell, ...]] = [(label, *row) for label, row in zip(labels, counts, strict=True)]
    return Table(title, (f"{a} \\ {b}", *labels), tuple(rows))
