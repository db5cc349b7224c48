"""The paper's figures, drawn offline with matplotlib (Agg) as SVG or PDF. Pure: no Django.

Publication-ready: vector output, one paper column wide (3.5 in, `COLUMN_WIDTH`), 8 pt text, fonts
embedded (PDF: TrueType, ``pdf.fonttype`` 42; SVG: glyphs as paths, ``svg.fonttype`` ``"path"``, so
the file renders the same without the font installed), and the same bytes for the same data (no dates in
the metadata, a fixed SVG hash salt). Every function takes plain data and returns the file's bytes.
"""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

import matplotlib

matplotlib.use("Agg")
logging.getLogger("fontTools").setLevel(logging.WARNING)  # it logs every font subset at INFO

import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)

if TYPE_CHECKING:
    from matplotlib.figure import Figure

COLUMN_WIDTH = 3.5
"""Inches: one column of a two-column paper (ACM, IEEE)."""
FORMATS = ("svg", "pdf")
FIGURES = ("agreement", "saturation", "distribution", "crosstab", "confusion")
"""Every figure, by the name in its URL and file name."""

STYLE = {
    "font.family": "DejaVu Sans",
    "font.size": 8,
    "axes.titlesize": 8,
    "axes.labelsize": 8,
    "xtick.labelsize": 7,
    "ytick.labelsize": 7,
    "legend.fontsize": 7,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "pdf.fonttype": 42,
    "ps.fonttype": 42,
    "svg.fonttype": "path",
    "svg.hashsalt": "taxonomist",
    "figure.dpi": 100,
}
METADATA = {
    "svg": {"Date": None, "Creator": "Taxonomist"},
    "pdf": {"CreationDate": None, "ModDate": None, "Creator": "Taxonomist", "Producer": "Taxonomist"},
}
COLORS = ("#2f5d50", "#b4582a", "#1f4f8f", "#8a3f94", "#6b7d2a", "#7a8580")


class FigureError(ValueError):
    """Bad input to a figure, named."""


@contextmanager
def _styled() -> Iterator[None]:
    with plt.rc_context(STYLE):
        yield


def _save(fig: Figure, fmt: str) -> bytes:
    if fmt not in FORMATS:
        raise FigureError(f"unknown figure format {fmt!r}: use svg or pdf")
    out = io.BytesIO()
    fig.savefig(out, format=fmt, metadata=METADATA[fmt])  # the size given: exactly a column wide
    plt.close(fig)
    return out.getvalue()


def _height(rows: int, *, minimum: float = 1.6, per_row: float = 0.16) -> float:
    return max(minimum, 0.6 + per_row * rows)


def _short(text: str, limit: int = 34) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


@dataclass(frozen=True)
class Line:
    """One coefficient over the rounds: a value per round (None: undefined), and optionally its interval."""

    label: str
    values: Sequence[float | None]
    intervals: Sequence[tuple[float, float] | None] = ()


DODGE = 0.08
"""How far apart (in rounds) the coefficients of one round are drawn."""


def agreement_over_rounds(rounds: Sequence[str], lines: Sequence[Line], *, title: str, fmt: str) -> bytes:
    """Coefficients per round with error bars for their 95 % intervals, side by side; the 0.667 and 0.8
    alpha thresholds (Krippendorff 2004) dashed."""
    with _styled():
        fig, ax = plt.subplots(figsize=(COLUMN_WIDTH, 2.3), layout="constrained")
        for n, line in enumerate(lines):
            color = COLORS[n % len(COLORS)]
            # Each line a little to the side, so that the intervals of one round do not hide each other.
            xs = [x + DODGE * (n - (len(lines) - 1) / 2) for x in range(len(rounds))]
            points = [(x, v) for x, v in zip(xs, line.values, strict=True) if v is not None]
            if points:
                ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", ms=3, lw=1, color=color,
                        label=line.label)  # fmt: skip
            for x, value, interval in zip(xs, line.values, line.intervals or [None] * len(xs), strict=True):
                if value is not None and interval is not None:
                    below, above = value - interval[0], interval[1] - value
                    ax.errorbar([x], [value], yerr=[[below], [above]], color=color, capsize=2, lw=0.8)
        for threshold in (0.667, 0.8):
            ax.axhline(threshold, color="#999999", lw=0.6, ls="--")
        ax.set_xticks(list(range(len(rounds))), [_short(r, 14) for r in rounds])
        ax.set_xlabel("round")
        ax.set_ylim(min(-0.1, *(v for line in lines for v in line.values if v is not None)), 1.05)
        ax.set_ylabel("coefficient")
        ax.set_title(title)
        if lines:
            ax.legend(frameon=False, loc="lower right")
        return _save(fig, fmt)


def saturation_curve(
    cumulative: Sequence[int],
    *,
    per_annotator: Mapping[str, Sequence[int]],
    saturation_item: int | None,
    base: int,
    events: Sequence[tuple[int, str]] = (),
    title: str,
    fmt: str,
) -> bytes:
    """Distinct codes after each item (overall thick, each annotator thin), the end of the base, the
    saturation point, and ticks where categories were created by proposals or codebook changes."""
    with _styled():
        fig, ax = plt.subplots(figsize=(COLUMN_WIDTH, 2.3), layout="constrained")
        xs = list(range(1, len(cumulative) + 1))
        ax.step(xs, cumulative, where="post", color=COLORS[0], lw=1.4, label="all annotators")
        for n, (name, own) in enumerate(per_annotator.items()):
            ax.step(range(1, len(own) + 1), own, where="post", lw=0.7, color=COLORS[(n + 1) % len(COLORS)],
                    label=_short(name, 16))  # fmt: skip
        if base <= len(cumulative):
            ax.axvline(base, color="#999999", lw=0.6, ls=":", label=f"base ({base} items)")
        if saturation_item is not None:
            ax.axvline(
                saturation_item,
                color=COLORS[1],
                lw=0.8,
                ls="--",
                label=f"saturation (item {saturation_item})",
            )
        for position, how in events:
            ax.plot(
                [max(position, 1)], [0], marker="|", ms=6, color="#555555" if how == "proposal" else "#aa3333"
            )
        ax.set_xlabel("items, in order of first submission")
        ax.set_ylabel("distinct categories")
        ax.set_title(title)
        ax.set_xlim(left=0)
        ax.set_ylim(bottom=0)
        ax.legend(frameon=False, loc="lower right")
        return _save(fig, fmt)


def distribution(rows: Sequence[tuple[int, str, int]], *, title: str, fmt: str) -> bytes:
    """Counts per category along the tree: one horizontal bar per (depth, name, count) in tree order,
    top-level categories in bold with a darker bar."""
    if not rows:
        raise FigureError("the dimension has no categories to draw")
    with _styled():
        fig, ax = plt.subplots(figsize=(COLUMN_WIDTH, _height(len(rows), per_row=0.13)), layout="constrained")
        ys = list(range(len(rows)))[::-1]
        top = min(depth for depth, _, _ in rows)
        colors = [COLORS[0] if depth == top else COLORS[2] for depth, _, _ in rows]
        ax.barh(ys, [count for _, _, count in rows], color=colors, height=0.7)
        ax.set_yticks(ys, [_short(name, 30) for _, name, _ in rows])
        for label, (depth, _, _) in zip(ax.get_yticklabels(), rows, strict=True):
            if depth == top:
                label.set_fontweight("bold")  # right-aligned labels cannot show indentation
        for y, (_, _, count) in zip(ys, rows, strict=True):
            ax.text(count, y, f" {count}", va="center", fontsize=6)
        ax.set_xlabel("findings")
        ax.set_title(title)
        ax.tick_params(axis="y", length=0)
        return _save(fig, fmt)


def heatmap(
    rows: Sequence[str],
    cols: Sequence[str],
    counts: Sequence[Sequence[int]],
    *,
    title: str,
    xlabel: str,
    ylabel: str,
    fmt: str,
) -> bytes:
    """A count matrix as a heatmap, counts written in the cells (a cross-tab, a confusion matrix)."""
    if not rows or not cols:
        raise FigureError("nothing to draw: the table has no rows or no columns")
    with _styled():
        width = COLUMN_WIDTH if len(cols) <= 12 else 2 * COLUMN_WIDTH + 0.33  # a full-width figure*
        fig, ax = plt.subplots(
            figsize=(width, _height(len(rows), minimum=1.8, per_row=0.2) + 0.8), layout="constrained"
        )
        image = ax.imshow(counts, cmap="Greens", aspect="auto")
        ax.set_xticks(range(len(cols)), [_short(c, 24) for c in cols], rotation=60, ha="right")
        ax.set_yticks(range(len(rows)), [_short(r, 28) for r in rows])
        top = max((max(row) for row in counts if row), default=0)
        for i, row in enumerate(counts):
            for j, count in enumerate(row):
                if count:
                    ax.text(j, i, str(count), ha="center", va="center", fontsize=5,
                            color="white" if count > top / 2 else "black")  # fmt: skip
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        ax.spines[:].set_visible(False)
        fig.colorbar(image, ax=ax, shrink=0.8, pad=0.02)
        return _save(fig, fmt)
