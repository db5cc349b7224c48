"""Tables for people and papers: one plain `Table`, rendered as CSV, Markdown or LaTeX (booktabs).
Pure: no Django.

Every downloadable table of the product (the agreement dashboard's, the paper's cross-tabs) is built as a
`Table` and rendered here, so that a figure reads the same in every format. Numbers: floats to three
decimals (`digits`), integers as they are; an undefined value (None) is empty in CSV and "—" in Markdown
and LaTeX, with its reason in `notes` when there is one. Text cells of the CSV that a spreadsheet could
run as a formula (starting with ``= + - @``, a tab or a carriage return) get a leading single quote.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from dataclasses import dataclass, field

Cell = str | int | float | None

_LATEX_SPECIALS = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "<": r"\textless{}",
    ">": r"\textgreater{}",
    "|": r"\textbar{}",
}
# What pdflatex with the T1 font encoding and utf8 input cannot set by itself.
_LATEX_UNICODE = {
    "α": r"$\alpha$",  # noqa: RUF001
    "κ": r"$\kappa$",
    "—": "---",
    "\u2013": "--",
    "\u00d7": r"$\times$",
    "≥": r"$\geq$",
    "≤": r"$\leq$",
    "\u00a0": "~",
}


def latex_escape(text: str) -> str:
    """`text` safe in LaTeX body text: every special character replaced by its command, whitespace
    (line breaks included) collapsed to single spaces."""
    return "".join(_LATEX_SPECIALS.get(ch) or _LATEX_UNICODE.get(ch, ch) for ch in " ".join(text.split()))


@dataclass(frozen=True)
class Table:
    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[Cell, ...], ...]
    notes: tuple[str, ...] = field(default_factory=tuple)
    digits: int = 3

    def text(self, value: Cell, *, missing: str = "—") -> str:
        if value is None:
            return missing
        if isinstance(value, float):
            return f"{value:.{self.digits}f}"
        return str(value)


def _guard(text: str) -> str:
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def to_csv(table: Table) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(table.columns)
    for row in table.rows:
        writer.writerow([_guard(v) if isinstance(v, str) else table.text(v, missing="") for v in row])
    return out.getvalue()


def _md(text: str) -> str:
    return " ".join(text.replace("|", "\\|").split())


def to_markdown(table: Table, *, heading: bool = True, align: Sequence[str] = ()) -> str:
    """A pipe table: first column left-aligned, the others right-aligned unless `align` says otherwise
    (one of ``l``/``r`` per column)."""
    marks = list(align) or ["l", *["r"] * (len(table.columns) - 1)]
    lines = [f"## {_md(table.title)}", ""] if heading and table.title else []
    lines.append("| " + " | ".join(_md(c) for c in table.columns) + " |")
    lines.append("|" + "|".join(":---" if m == "l" else "---:" for m in marks) + "|")
    lines += ["| " + " | ".join(_md(table.text(v)) for v in row) + " |" for row in table.rows]
    lines.append("")
    if table.notes:
        lines += [*(f"- {note}" for note in table.notes), ""]
    return "\n".join(lines)


def to_latex(
    table: Table, *, label: str = "", caption: str | None = None, size: str = r"\footnotesize"
) -> str:
    """A floating booktabs table (``\\usepackage{booktabs}``), first column left-aligned."""
    spec = "l" + "r" * (len(table.columns) - 1)
    text = caption if caption is not None else table.title
    lines = [
        r"\begin{table}[htbp]",
        r"\centering",
        size,
        *([rf"\caption{{{latex_escape(text)}}}"] if text else []),
        *([rf"\label{{{label}}}"] if label else []),
        rf"\begin{{tabular}}{{{spec}}}",
        r"\toprule",
        " & ".join(latex_escape(c) for c in table.columns) + r" \\",
        r"\midrule",
        *(" & ".join(latex_escape(table.text(v, missing="—")) for v in row) + r" \\" for row in table.rows),
        r"\bottomrule",
        r"\end{tabular}",
    ]
    if table.notes:
        lines.append(
            r"\par\smallskip\parbox{\linewidth}{\scriptsize "
            + "; ".join(latex_escape(n) for n in table.notes)
            + "}"
        )
    lines += [r"\end{table}", ""]
    return "\n".join(lines)


RENDERERS = {"csv": to_csv, "md": to_markdown, "tex": to_latex}
CONTENT_TYPES = {
    "csv": "text/csv; charset=utf-8",
    "md": "text/markdown; charset=utf-8",
    "tex": "application/x-tex; charset=utf-8",
}


def render(table: Table, fmt: str) -> str:
    """`table` in ``csv``, ``md`` or ``tex``; ValueError for another format."""
    try:
        return RENDERERS[fmt](table)
    except KeyError:
        raise ValueError(f"unknown table format {fmt!r}: use csv, md or tex") from None
