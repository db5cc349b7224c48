"""A codebook spec as Markdown (the `export_codebook --format md` file): dimensions, categories with their
definitions, criteria and examples, and label counts per category. No Django."""

from __future__ import annotations

import re
from collections.abc import Mapping

from .codebook_spec import PATH_SEPARATOR, CategorySpec, CodebookSpec, walk_categories

_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]<#|])")


def _md(text: str) -> str:
    """Escape a name for inline Markdown (definitions are left as written: they may use Markdown)."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", text)


def _subtree_total(
    category: CategorySpec, dimension: str, counts: Mapping[tuple[str, str], int], totals: dict[str, int]
) -> int:
    total = counts.get((dimension, category.key), 0)
    for child in category.children:
        total += _subtree_total(child, dimension, counts, totals)
    totals[category.key] = total
    return total


def _condition_text(spec: CodebookSpec, on_dimension: str, on_category: str) -> str:
    for dimension in spec.dimensions:
        if dimension.key == on_dimension:
            for entry in walk_categories(dimension.categories):
                if entry.category.key == on_category:
                    names = _md(PATH_SEPARATOR.join(entry.names))
                    return f"*{_md(dimension.name)}* is *{names}* (`{on_dimension}` = `{on_category}`)"
    return f"`{on_dimension}` = `{on_category}`"


def codebook_markdown(spec: CodebookSpec, counts: Mapping[tuple[str, str], int] | None = None) -> str:
    """A readable Markdown document: per dimension an overview tree, then every category with its
    definition, include / exclude criteria and examples.

    `counts` maps (dimension key, category key) to the number of labels of that category itself. A category
    with children shows the total of its subtree (its own labels plus its descendants'), as taxonomy
    papers do, and its own count when it has any. Counts naming no category of the spec are listed at the
    end rather than dropped; a negative count raises ValueError.
    """
    counts = dict(counts or {})
    for (dimension_key, category_key), count in counts.items():
        if count < 0:
            raise ValueError(f"negative count {count} for {dimension_key}/{category_key}")
    show_counts = bool(counts)
    known: set[tuple[str, str]] = set()
    lines = [f"# {_md(spec.name)}", ""]
    for dimension in spec.dimensions:
        totals: dict[str, int] = {}
        for category in dimension.categories:
            _subtree_total(category, dimension.key, counts, totals)
        lines += [f"## {_md(dimension.name)} (`{dimension.key}`)", ""]
        facts = ["Several categories may be chosen." if dimension.multiple else "One category per finding."]
        if dimension.applies_when is not None:
            facts.append(f"Applies only when {_condition_text(spec, *dimension.applies_when)}.")
        lines += [" ".join(facts), ""]
        if dimension.description:
            lines += [dimension.description, ""]
        if not dimension.categories:
            lines += ["No categories yet.", ""]
            continue
        walked = list(walk_categories(dimension.categories))
        for entry in walked:
            known.add((dimension.key, entry.category.key))
            shown = f" — {totals[entry.category.key]}" if show_counts else ""
            lines.append(f"{'  ' * (entry.depth - 1)}- {_md(entry.category.name)}{shown}")
        if show_counts:
            lines += ["", f"Total: {sum(totals[c.key] for c in dimension.categories)}"]
        lines.append("")
        for entry in walked:
            category = entry.category
            level = min(entry.depth + 2, 6)
            lines += [f"{'#' * level} {_md(PATH_SEPARATOR.join(entry.names))} (`{category.key}`)", ""]
            if show_counts:
                own = counts.get((dimension.key, category.key), 0)
                if category.children:
                    detail = f" ({own} on the category itself)" if own else ""
                    lines += [f"**Count:** {totals[category.key]} with its subcategories{detail}", ""]
                else:
                    lines += [f"**Count:** {own}", ""]
            for label, text in (
                ("Definition", category.definition),
                ("Include", category.include),
                ("Exclude", category.exclude),
            ):
                if text:
                    lines += [f"**{label}.** {text}", ""]
            if category.examples:
                lines += ["**Examples.**", ""] + [f"- {example}" for example in category.examples] + [""]
    unknown = sorted(key for key in counts if key not in known)
    if unknown:
        lines += ["## Counts for categories not in this codebook", ""]
        lines += [f"- `{d}` / `{c}`: {counts[(d, c)]}" for d, c in unknown] + [""]
    return "\n".join(lines).rstrip("\n") + "\n"
