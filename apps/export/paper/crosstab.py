"""Cross-tabulation of two variables over units (findings). Pure: no Django.

A unit is one finding (of a gold decision, or of one annotator's labels) with its values on the row
variable and on the column variable: category paths at a level of the tree, or an item field such as the
source. A unit with several values on one side counts once in each of its cells (docs/paper.md):

* ``counts[i][j]``: units with row value i and column value j;
* ``row_totals[i]``: units with row value i (and any column value), each once, so that in a
  multi-choice column the row's cells may add up to more than its total; ``col_totals`` likewise;
* ``total``: units with a value on both sides.

Row share = count / row total; column share = count / column total.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from apps.core.tables import latex_escape


@dataclass(frozen=True)
class Unit:
    rows: tuple[str, ...]
    cols: tuple[str, ...]


@dataclass(frozen=True)
class CrossTab:
    row_label: str
    col_label: str
    rows: tuple[str, ...]
    cols: tuple[str, ...]
    counts: tuple[tuple[int, ...], ...]
    row_totals: tuple[int, ...]
    col_totals: tuple[int, ...]
    total: int

    def row_share(self, i: int, j: int) -> float | None:
        return self.counts[i][j] / self.row_totals[i] if self.row_totals[i] else None

    def col_share(self, i: int, j: int) -> float | None:
        return self.counts[i][j] / self.col_totals[j] if self.col_totals[j] else None

    def as_json(self) -> dict[str, Any]:
        """The `crosstab --format json` object of the command-line contract."""
        return {
            "rows": list(self.rows),
            "cols": list(self.cols),
            "counts": [list(row) for row in self.counts],
            "row_totals": list(self.row_totals),
            "col_totals": list(self.col_totals),
            "total": self.total,
        }


def crosstab(
    units: Iterable[Unit],
    *,
    row_label: str,
    col_label: str,
    row_order: Sequence[str] = (),
    col_order: Sequence[str] = (),
) -> CrossTab:
    """Count `units` (module docstring). Rows and columns follow `row_order` / `col_order` (e.g. the
    tree order), then any other value in sorted order; a listed value no unit has stays, with zeros."""
    cells: dict[tuple[str, str], int] = {}
    row_units: dict[str, int] = {}
    col_units: dict[str, int] = {}
    total = 0
    for unit in units:
        row_values, col_values = set(unit.rows), set(unit.cols)
        if not row_values or not col_values:
            continue
        total += 1
        for r in row_values:
            row_units[r] = row_units.get(r, 0) + 1
            for c in col_values:
                cells[r, c] = cells.get((r, c), 0) + 1
        for c in col_values:
            col_units[c] = col_units.get(c, 0) + 1

    def order(listed: Sequence[str], seen: Iterable[str]) -> tuple[str, ...]:
        known = set(listed)
        return (*dict.fromkeys(listed), *sorted(set(seen) - known))

    rows, cols = order(row_order, row_units), order(col_order, col_units)
    return CrossTab(
        row_label=row_label,
        col_label=col_label,
        rows=rows,
        cols=cols,
        counts=tuple(tuple(cells.get((r, c), 0) for c in cols) for r in rows),
        row_totals=tuple(row_units.get(r, 0) for r in rows),
        col_totals=tuple(col_units.get(c, 0) for c in cols),
        total=total,
    )


def _percent(value: float | None) -> str:
    return "" if value is None else f"{100 * value:.1f}"


def to_csv(table: CrossTab) -> str:
    """Long form, one row per cell: row, column, count, row share %, column share %; then the totals
    (column ``Total`` for row totals, row ``Total`` for column totals)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([table.row_label, table.col_label, "count", "row_share_percent", "col_share_percent"])
    for i, r in enumerate(table.rows):
        for j, c in enumerate(table.cols):
            writer.writerow(
                [r, c, table.counts[i][j], _percent(table.row_share(i, j)), _percent(table.col_share(i, j))]
            )
    for i, r in enumerate(table.rows):
        writer.writerow([r, "Total", table.row_totals[i], "", ""])
    for j, c in enumerate(table.cols):
        writer.writerow(["Total", c, table.col_totals[j], "", ""])
    writer.writerow(["Total", "Total", table.total, "", ""])
    return out.getvalue()


def _md(text: str) -> str:
    return " ".join(text.replace("|", "\\|").split())


def _cell(table: CrossTab, i: int, j: int, percent: str) -> str:
    """A cell as ``count (row share, column share)``; an empty cell as 0."""
    n = table.counts[i][j]
    if not n:
        return "0"
    return f"{n} ({_percent(table.row_share(i, j))}{percent}, {_percent(table.col_share(i, j))}{percent})"


def to_markdown(table: CrossTab, *, title: str = "") -> str:
    """Counts with the row and column shares in brackets, the totals in the last row and column."""
    lines = [f"## {_md(title)}", ""] if title else []
    header = [f"{_md(table.row_label)} \\ {_md(table.col_label)}", *(_md(c) for c in table.cols), "Total"]
    lines.append("| " + " | ".join(header) + " |")
    lines.append("|:---|" + "---:|" * (len(header) - 1))
    for i, r in enumerate(table.rows):
        cells = [_cell(table, i, j, " %") for j in range(len(table.cols))]
        lines.append("| " + " | ".join([_md(r), *cells, str(table.row_totals[i])]) + " |")
    lines.append("| **Total** | " + " | ".join([*map(str, table.col_totals), str(table.total)]) + " |")
    lines += [
        "",
        "Cells: count (share of the row's total, share of the column's total). A finding with several "
        "values counts once in each.",
        "",
    ]
    return "\n".join(lines)


def to_latex(table: CrossTab, *, caption: str = "", label: str = "") -> str:
    """A booktabs table (``\\usepackage{booktabs}``): counts with their row and column shares, totals in
    the last row and column."""
    spec = "l" + "r" * (len(table.cols) + 1)
    head = " & ".join([latex_escape(table.row_label), *(latex_escape(c) for c in table.cols), "Total"])
    lines = [
        r"\begin{table}[htbp]",
        r"\centering",
        r"\scriptsize",
        *([rf"\caption{{{latex_escape(caption)}}}"] if caption else []),
        *([rf"\label{{{label}}}"] if label else []),
        rf"\begin{{tabular}}{{{spec}}}",
        r"\toprule",
        head + r" \\",
        r"\midrule",
    ]
    for i, r in enumerate(table.rows):
        cells = [_cell(table, i, j, r"\%") for j in range(len(table.cols))]
        lines.append(" & ".join([latex_escape(r), *cells, str(table.row_totals[i])]) + r" \\")
    lines += [
        r"\midrule",
        " & ".join(["Total", *map(str, table.col_totals), str(table.total)]) + r" \\",
        r"\bottomrule",
        r"\end{tabular}",
        r"\par\smallskip Cells: count (share of the row's total, share of the column's total).",
        r"\end{table}",
        "",
    ]
    return "\n".join(lines)


def dump_json(table: CrossTab) -> str:
    import json

    return json.dumps(table.as_json(), ensure_ascii=False, indent=1) + "\n"
