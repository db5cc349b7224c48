"""The side-by-side table of `make bench-peers`: plain data in, lines of text out (no Django, no HTTP).

`results` maps a column title to what a tool's `run` returned, or to {"error": "why"} when the tool
could not be installed, started or driven: its column then reads `n/a` and the reason is printed below.
"""

from __future__ import annotations

from typing import Any

WIDTH = 22
RATES = ("import", "export", "package")  # items/s rows; the others are request times


def _cell(result: dict[str, Any], metric: str) -> str:
    figure = result.get(metric)
    if figure is None:
        return "n/a"
    if metric in RATES:
        return f"{figure['rate']:,.0f}/s ({figure['seconds']:.1f} s)"
    return f"{figure['median_ms']:.1f} / {figure['p95_ms']:.1f}"


def ratio(base: dict[str, Any], peer: dict[str, Any], metric: str) -> float | None:
    """How many times faster the first tool is than the peer on `metric` (> 1: the first is faster):
    items/s divided for import and export, the peer's median over the first's for requests."""
    a, b = base.get(metric), peer.get(metric)
    if not a or not b:
        return None
    if metric in RATES:
        return float(a["rate"] / b["rate"]) if b["rate"] else None
    return float(b["median_ms"] / a["median_ms"]) if a["median_ms"] else None


def table(results: dict[str, dict[str, Any]], *, size: int, annotations: int, requests: int) -> list[str]:
    """The figures (first block), the first tool's speed against each other one (second), then notes."""
    titles = list(results)
    rows = [
        ("import", f"import {size:,} items, items/s", "import"),
        ("submit", f"submit {annotations} annotations, median / p95 ms", "submit (median)"),
        ("list", f"list a random page of 50 ({requests}x), median / p95 ms", "list (median)"),
        ("export", "export all items with labels (JSON lines), items/s", "export"),
        ("package", "export the replication package, items/s", "package"),
    ]
    label = max(len(long) for _, long, _ in rows) + 2
    lines = ["".ljust(label) + "".join(t.rjust(WIDTH) for t in titles)]
    for metric, long, _ in rows:
        lines.append(long.ljust(label) + "".join(_cell(results[t], metric).rjust(WIDTH) for t in titles))
    first, peers = titles[0], titles[1:]
    if peers:
        lines += ["", f"{first} against each (x times as fast; below 1: slower)"]
        lines.append("".ljust(label) + "".join(t.rjust(WIDTH) for t in peers))
        for metric, _, short in rows:
            values = [ratio(results[first], results[title], metric) for title in peers]
            cells = ["n/a" if v is None else f"{v:.2f}x" for v in values]
            lines.append(short.ljust(label) + "".join(c.rjust(WIDTH) for c in cells))
    return [*lines, "", *notes(results)]


def notes(results: dict[str, dict[str, Any]]) -> list[str]:
    """How each tool did each step, the sizes of what came back, and why a column is missing."""
    out = []
    for metric in RATES:
        parts = []
        for title, result in results.items():
            figure = result.get(metric)
            if figure:
                size = f", {figure['bytes'] / 1e6:.1f} MB" if "bytes" in figure else ""
                parts.append(f"{title} {figure.get('how', '')}{size}")
        if parts:
            out.append(f"{metric}: " + "; ".join(parts))
    pages = [f"{title} {r['list']['bytes'] / 1024:.0f} KB" for title, r in results.items() if r.get("list")]
    if pages:
        out.append("list: a page's median size: " + ", ".join(pages))
    out += [
        f"{title}: {metric}: {note}"
        for title, r in results.items()
        for metric, note in r.get("notes", {}).items()
    ]
    out += [f"{title}: not measured: {r['error']}" for title, r in results.items() if r.get("error")]
    return out
