"""The paper's figures and tables for one study: `data` and the agreement report read into `figures`
and `crosstab` (docs/paper.md). Every function raises `data.PaperError` with a message in the person's
terms when the study cannot give what is asked.

The agreement figures use `package.build.agreement_data`, the figures of ``agreement.json`` (full depth,
the dashboard's bootstrap), so that a figure, the package and the methods section show one set of values.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apps.accounts.models import Study
from apps.agreement.ratings import RatingsError
from apps.agreement.services import confusion_counts
from apps.export.counts import CountTable
from apps.export.package.build import agreement_data
from apps.export.rows import gold_count_tables
from apps.export.services import source_labels
from apps.taxonomy.index import CodebookIndex

from . import crosstab as ct
from . import data, figures
from .figures import FigureError, Line

AGREEMENT_LINES = (
    ("krippendorff_alpha", "Krippendorff's alpha"),
    ("cohen_kappa", "Cohen's kappa"),
    ("gwet_ac1", "Gwet's AC1"),
)


def agreement_lines(agreement: Mapping[str, Any], dimension: str) -> tuple[list[str], list[Line]]:
    """Round labels and one line per coefficient of `dimension`, each with its bootstrap intervals."""
    rounds = [
        r
        for r in agreement["rounds"]
        if r["dimensions"].get(dimension, {}).get("n_pairable")  # rounds with something compared
    ]
    labels = [str(r["round"]) for r in rounds]
    reports = [r["dimensions"][dimension] for r in rounds]
    lines = []
    for metric, label in AGREEMENT_LINES:
        values = [None if "error" in rep else rep.get(metric) for rep in reports]
        if all(v is None for v in values):
            continue
        intervals = [
            (float(rep[f"{metric}_ci"][0]), float(rep[f"{metric}_ci"][1]))
            if rep.get(f"{metric}_ci")
            else None
            for rep in reports
        ]
        lines.append(Line(label, values, intervals))
    return labels, lines


def agreement_figure(
    study: Study, dimension: str, fmt: str, *, agreement: Mapping[str, Any] | None = None
) -> bytes:
    index = CodebookIndex.for_study(study)
    key = data.dimension_of(index, dimension)
    agreement = agreement or agreement_data(study, index)
    labels, lines = agreement_lines(agreement, key)
    if not labels or not lines:
        raise data.PaperError(f"no round of the study has agreement on {key!r} to draw")
    return figures.agreement_over_rounds(
        labels, lines, title=f"{index.dimension(key).name}: agreement by round", fmt=fmt
    )


def saturation_figure(study: Study, result: data.Saturation, fmt: str) -> bytes:
    if not result.overall.items:
        raise data.PaperError(f"no item has a submitted label in {result.dimension!r} yet: no curve to draw")
    return figures.saturation_curve(
        result.overall.cumulative,
        per_annotator={name: a.cumulative for name, a in result.per_annotator.items()},
        saturation_item=result.overall.saturation_item,
        base=result.overall.base,
        events=[(e.position, e.how) for e in result.events],
        title=f"{result.dimension_name}: saturation",
        fmt=fmt,
    )


def count_table(study: Study, dimension: str, tables: list[CountTable] | None = None) -> CountTable:
    index = CodebookIndex.for_study(study)
    key = data.dimension_of(index, dimension)
    tables = tables if tables is not None else gold_count_tables(study, index, source_labels())
    return next(t for t in tables if t.dimension == key)


def distribution_figure(
    study: Study, dimension: str, fmt: str, *, tables: list[CountTable] | None = None
) -> bytes:
    table = count_table(study, dimension, tables)
    rows = [(row.depth, row.name, row.total) for row in table.rows]
    try:
        return figures.distribution(
            rows, title=f"{table.name} (findings, n = {table.total_findings})", fmt=fmt
        )
    except FigureError as exc:
        raise data.PaperError(str(exc)) from None


def crosstab_figure(table: ct.CrossTab, fmt: str) -> bytes:
    try:
        return figures.heatmap(
            table.rows, table.cols, table.counts, title=f"{table.row_label} by {table.col_label}",
            xlabel=table.col_label, ylabel=table.row_label, fmt=fmt,
        )  # fmt: skip
    except FigureError as exc:
        raise data.PaperError(f"no finding has values on both sides: {exc}") from None


def confusion_figure(
    study: Study, dimension: str, *, round_number: int | None, level: int | None, a: str, b: str, fmt: str
) -> bytes:
    if not a or not b or a == b:
        raise data.PaperError("the confusion matrix needs two different annotators (a and b)")
    try:
        matrix = confusion_counts(study, dimension, round_number=round_number, level=level, a=a, b=b)
    except RatingsError as exc:
        raise data.PaperError(str(exc)) from None
    try:
        return figures.heatmap(
            matrix.labels, matrix.labels, matrix.counts, title=f"{dimension}: {a} (rows) and {b} (columns)",
            xlabel=b, ylabel=a, fmt=fmt,
        )  # fmt: skip
    except FigureError as exc:
        raise data.PaperError(f"{a} and {b} rated no item of {dimension!r} in common: {exc}") from None
