"""Taxonomy count tables: how many consolidated findings fall in each category, per source. No Django.

What a taxonomy paper prints (e.g. Liu et al., TOSEM 2023, Fig. 4: "Package Build & Import (82)"): the
category tree of one dimension, each category with the number of findings labelled with it *or with any
category below it*, and that number's share of the findings that have a value in the dimension, in one
column pair per source (GitHub, Stack Overflow, ...) and one for all sources.

Counting rules (docs/export.md):

* the unit is a finding of a current decision; a finding counts once in a category even when several of
  its values lie below it (a multi-choice dimension);
* the denominator of a share is the number of findings of that source with at least one value in the
  dimension, so in a single-choice dimension the top-level shares add up to 100 %; in a multi-choice
  dimension they may add up to more;
* every active category is listed (with 0 when unused); a retired, merged or proposed category only when
  a finding uses it.

`CountAccumulator` takes the findings one at a time (memory: one counter per category and source);
`counts_markdown` and `counts_latex` render its tables. The LaTeX needs ``\\usepackage{booktabs}``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from apps.core.tables import latex_escape

INDENT_MARKDOWN = "\u00a0" * 4
"""One level of tree indentation in Markdown: no-break spaces, which Markdown renderers keep."""

INDENT_LATEX = r"\quad "


@dataclass(frozen=True, slots=True)
class CountNode:
    """One category of a dimension's tree. `parent` is the parent's key (None at the top)."""

    key: str
    name: str
    parent: str | None
    active: bool = True


@dataclass(frozen=True, slots=True)
class DimensionTree:
    """A dimension and its categories in tree order (parents before children, siblings in order)."""

    key: str
    name: str
    multiple: bool
    nodes: tuple[CountNode, ...]


@dataclass(frozen=True, slots=True)
class CountRow:
    depth: int
    key: str
    name: str
    counts: tuple[int, ...]
    """One count per source, in `CountTable.sources` order."""
    total: int


@dataclass(frozen=True, slots=True)
class CountTable:
    """One dimension's table. `sources` are (key, label) pairs; `findings` the denominators per source."""

    dimension: str
    name: str
    multiple: bool
    sources: tuple[tuple[str, str], ...]
    rows: tuple[CountRow, ...]
    findings: tuple[int, ...]
    total_findings: int


def share(count: int, total: int) -> float | None:
    """`count` as a percentage of `total` (None when `total` is 0)."""
    return 100.0 * count / total if total else None


NO_SHARE = "\u2013"
"""The share of a source without findings (an en dash)."""


def percent_text(value: float | None, *, none: str = NO_SHARE) -> str:
    """A share as text with one decimal (`none` when undefined)."""
    return none if value is None else f"{value:.1f}"


class CountAccumulator:
    """Counts findings per (dimension, source, category subtree). Build with the dimensions' trees."""

    def __init__(self, trees: Sequence[DimensionTree]) -> None:
        self.trees = tuple(trees)
        self._lineage: dict[str, dict[str, tuple[str, ...]]] = {}
        for tree in self.trees:
            parents = {node.key: node.parent for node in tree.nodes}
            lineage: dict[str, tuple[str, ...]] = {}
            for node in tree.nodes:
                chain = [node.key]
                seen = {node.key}
                parent = node.parent
                while parent is not None:
                    if parent in seen or parent not in parents:
                        raise ValueError(
                            f"dimension {tree.key!r}: category {node.key!r} has a broken parent chain "
                            f"at {parent!r}"
                        )
                    chain.append(parent)
                    seen.add(parent)
                    parent = parents[parent]
                lineage[node.key] = tuple(chain)
            self._lineage[tree.key] = lineage
        self._counts: Counter[tuple[str, str, str]] = Counter()
        self._findings: Counter[tuple[str, str]] = Counter()
        self._sources: dict[str, None] = {}

    def add(self, source: str, dimension: str, keys: Iterable[str]) -> None:
        """Count one finding of an item from `source` whose values in `dimension` are `keys` (category
        keys; an empty list counts nothing). Raises ValueError for an unknown dimension or category."""
        lineage = self._lineage.get(dimension)
        if lineage is None:
            raise ValueError(f"unknown dimension {dimension!r} (known: {', '.join(self._lineage)})")
        reached: set[str] = set()
        for key in keys:
            chain = lineage.get(key)
            if chain is None:
                raise ValueError(f"dimension {dimension!r} has no category {key!r}")
            reached.update(chain)
        self._sources.setdefault(source, None)
        if not reached:
            return
        self._findings[(dimension, source)] += 1
        for key in reached:
            self._counts[(dimension, source, key)] += 1

    def tables(self, source_labels: Mapping[str, str] | None = None) -> list[CountTable]:
        """One table per dimension, in the trees' order. Sources are ordered by `source_labels`' order
        (sources it does not name follow, alphabetically) and shown with its labels."""
        labels = dict(source_labels or {})
        order = {key: position for position, key in enumerate(labels)}
        sources = sorted(self._sources, key=lambda s: (order.get(s, len(order)), s))
        pairs = tuple((s, labels.get(s, s)) for s in sources)
        out = []
        for tree in self.trees:
            lineage = self._lineage[tree.key]
            counts = {
                node.key: tuple(self._counts[(tree.key, s, node.key)] for s in sources) for node in tree.nodes
            }
            shown: set[str] = set()
            for node in tree.nodes:
                if node.active or any(counts[node.key]):
                    shown.update(lineage[node.key])
            rows = tuple(
                CountRow(
                    depth=len(lineage[node.key]),
                    key=node.key,
                    name=node.name,
                    counts=counts[node.key],
                    total=sum(counts[node.key]),
                )
                for node in tree.nodes
                if node.key in shown
            )
            findings = tuple(self._findings[(tree.key, s)] for s in sources)
            out.append(CountTable(tree.key, tree.name, tree.multiple, pairs, rows, findings, sum(findings)))
        return out


# --- Markdown -----------------------------------------------------------------------------------------


def _md(text: str) -> str:
    """A table cell's text: pipes and backslashes escaped, line breaks flattened."""
    return " ".join(text.replace("\\", "\\\\").replace("|", "\\|").split())


def table_markdown(table: CountTable) -> str:
    """One dimension's table as GitHub-flavoured Markdown (heading, note, table)."""
    labels = [label for _, label in table.sources] + ["Total"]
    lines = [f"## {_md(table.name)} (`{table.dimension}`)", ""]
    per_source = ", ".join(
        f"{label} {n}" for (_, label), n in zip(table.sources, table.findings, strict=True)
    )
    note = f"{table.total_findings} findings have a value in this dimension"
    note += f" ({per_source})." if per_source else "."
    if table.multiple:
        note += " Several values may be chosen per finding, so shares may add up to more than 100 %."
    lines += [note, ""]
    header = ["Category"] + [f"{label} {unit}" for label in labels for unit in ("n", "%")]
    lines.append("| " + " | ".join(_md(h) for h in header) + " |")
    lines.append("|:---|" + "---:|" * (2 * len(labels)))
    denominators = (*table.findings, table.total_findings)
    for row in table.rows:
        cells = [INDENT_MARKDOWN * (row.depth - 1) + _md(row.name)]
        for count, total in zip((*row.counts, row.total), denominators, strict=True):
            cells += [str(count), percent_text(share(count, total))]
        lines.append("| " + " | ".join(cells) + " |")
    cells = ["**All findings**"]
    for total in denominators:
        cells += [str(total), percent_text(share(total, total))]
    lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def counts_markdown(tables: Sequence[CountTable], *, title: str = "Taxonomy counts", intro: str = "") -> str:
    """Every table under one title; `intro` (a paragraph) follows the title."""
    parts = [f"# {_md(title)}\n"]
    if intro:
        parts.append(intro.strip() + "\n")
    parts.append(
        "Counts are findings of the current decisions. A category counts the findings labelled with it or "
        "with any category below it; a share is the count divided by the findings of that source that "
        "have a value in the dimension.\n"
    )
    if not tables:
        parts.append("The codebook has no dimensions.\n")
    parts.extend(table_markdown(table) for table in tables)
    return "\n".join(parts)


# --- LaTeX --------------------------------------------------------------------------------------------


def _label(key: str) -> str:
    # Keys are slugs ([a-z0-9][a-z0-9_-]*), all of which \label accepts.
    return "tab:taxonomy-" + key


def table_latex(table: CountTable) -> str:
    """One dimension's table as a LaTeX ``table`` float with a booktabs ``tabular``: a header row of
    sources (each spanning count and share), tree-indented category rows (``\\quad`` per level), and a
    closing row of all findings."""
    labels = [label for _, label in table.sources] + ["Total"]
    columns = "l" + " rr" * len(labels)
    caption = f"{latex_escape(table.name)}: findings per category and source (count $n$ and share in \\%)."
    if table.multiple:
        caption += " Several values may be chosen per finding."
    lines = [
        r"\begin{table}[htbp]",
        r"  \centering",
        r"  \small",
        f"  \\caption{{{caption}}}",
        f"  \\label{{{_label(table.dimension)}}}",
        f"  \\begin{{tabular}}{{{columns}}}",
        r"    \toprule",
        "    & "
        + " & ".join(f"\\multicolumn{{2}}{{c}}{{{latex_escape(label)}}}" for label in labels)
        + r" \\",
        "    " + " ".join(f"\\cmidrule(lr){{{2 + 2 * i}-{3 + 2 * i}}}" for i in range(len(labels))),
        "    Category & " + " & ".join(r"$n$ & \%" for _ in labels) + r" \\",
        r"    \midrule",
    ]
    denominators = (*table.findings, table.total_findings)
    for row in table.rows:
        cells = [INDENT_LATEX * (row.depth - 1) + latex_escape(row.name)]
        for count, total in zip((*row.counts, row.total), denominators, strict=True):
            cells += [str(count), percent_text(share(count, total), none="--")]
        lines.append("    " + " & ".join(cells) + r" \\")
    lines.append(r"    \midrule")
    cells = ["All findings"]
    for total in denominators:
        cells += [str(total), percent_text(share(total, total), none="--")]
    lines.append("    " + " & ".join(cells) + r" \\")
    lines += [r"    \bottomrule", r"  \end{tabular}", r"\end{table}"]
    return "\n".join(lines) + "\n"


def counts_latex(tables: Sequence[CountTable], *, title: str = "Taxonomy counts") -> str:
    """Every table as LaTeX, to ``\\input`` in a document whose preamble has ``\\usepackage{booktabs}``."""
    head = [
        f"% {' '.join(title.split())}",
        "% Counts are findings of the current decisions; a category counts its whole subtree.",
        r"% Needs \usepackage{booktabs} in the preamble.",
        "",
    ]
    return "\n".join(head) + "\n".join(table_latex(table) for table in tables)
