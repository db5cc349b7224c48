"""Server-side SVG charts for the agreement dashboard. Pure: the standard library only, no Django.

The page's Content-Security-Policy forbids inline ``style`` attributes and scripts, so a chart is plain
SVG markup with presentation attributes (``stroke=``, ``fill=``), every text escaped, and an accessible
name: ``role="img"`` with a ``<title>`` and a ``<desc>`` that reads the values out. Every point carries its
own ``<title>`` (a tooltip in browsers).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

__all__ = ["Series", "Threshold", "line_chart"]


@dataclass(frozen=True, slots=True)
class Series:
    """One line: a value per x position, ``None`` where it is undefined (the line breaks there)."""

    name: str
    values: Sequence[float | None]
    color: str
    dashed: bool = False


@dataclass(frozen=True, slots=True)
class Threshold:
    """A horizontal reference line, e.g. Krippendorff's 0.667 and 0.800."""

    value: float
    label: str


def _fmt(number: float) -> str:
    return f"{number:.1f}".rstrip("0").rstrip(".")


def line_chart(
    x_labels: Sequence[str],
    series: Sequence[Series],
    *,
    title: str,
    chart_id: str,
    thresholds: Sequence[Threshold] = (),
    width: int = 640,
    height: int = 280,
) -> str:
    """An SVG line chart of coefficients (y from min(0, lowest value) to 1) over ``x_labels``.

    ``chart_id`` prefixes the ids of the title and description (unique on the page). Raises ValueError
    when a series does not have one value per x label, or a value is not finite.
    """
    for line in series:
        if len(line.values) != len(x_labels):
            raise ValueError(
                f"series {line.name!r} has {len(line.values)} values for {len(x_labels)} x labels"
            )
        for value in line.values:
            if value is not None and not math.isfinite(value):
                raise ValueError(f"series {line.name!r} has a non-finite value {value!r}")
    defined = [v for line in series for v in line.values if v is not None]
    low = min(0.0, math.floor(min(defined, default=0.0) * 5) / 5)
    high = 1.0
    # Threshold labels sit in a right margin of their own, clear of the lines.
    left, right, top, bottom = 48, 124 if thresholds else 16, 16 + 18 * math.ceil(len(series) / 3), 40
    plot_w, plot_h = width - left - right, height - top - bottom

    # Keep the first and last x labels (centred on their points) inside the picture.
    inset = min(plot_w / 4, max(16.0, 3.4 * max((len(label) for label in x_labels), default=0)))

    def x_at(i: int) -> float:
        if len(x_labels) == 1:
            return left + plot_w / 2
        return left + inset + (plot_w - 2 * inset) * i / (len(x_labels) - 1)

    def y_at(value: float) -> float:
        return top + plot_h * (high - value) / (high - low)

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 {width} {height}" '
        f'width="100%" role="img" aria-labelledby="{chart_id}-title {chart_id}-desc">',
        f'<title id="{chart_id}-title">{escape(title)}</title>',
        f'<desc id="{chart_id}-desc">{escape(_describe(x_labels, series))}</desc>',
    ]
    # Grid every 0.2, labelled; the zero line darker.
    steps = round((high - low) / 0.2)
    for k in range(steps + 1):
        value = low + 0.2 * k
        y = y_at(value)
        stroke = "#9aa59f" if abs(value) < 1e-9 else "#e3e8e5"
        out.append(f'<line x1="{left}" x2="{width - right}" y1="{y:.1f}" y2="{y:.1f}" stroke="{stroke}"/>')
        out.append(
            f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end" font-size="11" fill="#5b6661">'
            f"{_fmt(value)}</text>"
        )
    for threshold in thresholds:
        if low <= threshold.value <= high:
            y = y_at(threshold.value)
            out.append(
                f'<line x1="{left}" x2="{width - right}" y1="{y:.1f}" y2="{y:.1f}" stroke="#b4582a" '
                'stroke-dasharray="2 4" stroke-width="1"/>'
            )
            out.append(
                f'<text x="{width - right + 6}" y="{y + 4:.1f}" font-size="11" '
                f'fill="#8a3f14">{escape(threshold.label)}</text>'
            )
    for i, label in enumerate(x_labels):
        out.append(
            f'<text x="{x_at(i):.1f}" y="{height - bottom + 18}" text-anchor="middle" font-size="12" '
            f'fill="#1d2521">{escape(label)}</text>'
        )
    for line in series:
        dash = ' stroke-dasharray="6 4"' if line.dashed else ""
        for segment in _segments(line.values):
            if len(segment) > 1:
                points = " ".join(f"{x_at(i):.1f},{y_at(v):.1f}" for i, v in segment)
                out.append(
                    f'<polyline points="{points}" fill="none" stroke="{escape(line.color)}" '
                    f'stroke-width="2"{dash}/>'
                )
        for i, value in enumerate(line.values):
            if value is not None:
                out.append(
                    f'<circle cx="{x_at(i):.1f}" cy="{y_at(value):.1f}" r="4" fill="{escape(line.color)}">'
                    f"<title>{escape(line.name)}, {escape(x_labels[i])}: {value:.3f}</title></circle>"
                )
    # Legend: three entries a row above the plot.
    for n, line in enumerate(series):
        x, y = left + (n % 3) * 190, 14 + 18 * (n // 3)
        dash = ' stroke-dasharray="6 4"' if line.dashed else ""
        out.append(
            f'<line x1="{x}" x2="{x + 22}" y1="{y - 4}" y2="{y - 4}" stroke="{escape(line.color)}" '
            f'stroke-width="2"{dash}/>'
        )
        missing = " (n/a)" if all(v is None for v in line.values) else ""
        out.append(
            f'<text x="{x + 28}" y="{y}" font-size="12" fill="#1d2521">{escape(line.name)}{missing}</text>'
        )
    out.append("</svg>")
    return "".join(out)


def _segments(values: Sequence[float | None]) -> list[list[tuple[int, float]]]:
    """Runs of consecutive defined values, with their positions."""
    runs: list[list[tuple[int, float]]] = [[]]
    for i, value in enumerate(values):
        if value is None:
            if runs[-1]:
                runs.append([])
        else:
            runs[-1].append((i, value))
    return [run for run in runs if run]


def _describe(x_labels: Sequence[str], series: Sequence[Series]) -> str:
    parts = []
    for line in series:
        values = ", ".join(
            f"{label} {'n/a' if v is None else f'{v:.3f}'}"
            for label, v in zip(x_labels, line.values, strict=True)
        )
        parts.append(f"{line.name}: {values}")
    return "; ".join(parts) if parts else "No data."
