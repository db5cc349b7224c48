"""The differences between two codebook specs, as the changes loading a file applies (`loading.py`):
categories matched by key, renames, moves, edits, reorders and retirements. No Django."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .codebook_spec import (
    CategorySpec,
    ChangeKind,
    CodebookSpec,
    DimensionSpec,
    WalkedCategory,
    walk_categories,
)


@dataclass(frozen=True)
class Change:
    """One difference between two codebooks. `before` / `after` hold the fields that differ
    (everything for add and retire), JSON-ready: examples as lists, applies_when as a one-pair dict."""

    kind: ChangeKind
    dimension: str
    category: str | None
    before: dict[str, Any]
    after: dict[str, Any]

    def describe(self) -> str:
        """One line for people, e.g. ``rename symptom/hang: name 'Hang' → 'Hang and timeout'``."""
        target = self.dimension if self.category is None else f"{self.dimension}/{self.category}"
        fields = sorted(set(self.before) | set(self.after))
        if self.kind in ("add", "add_dimension"):
            return f"{self.kind} {target}: {self.after.get('name')!r}"
        if self.kind in ("retire", "retire_dimension"):
            return f"{self.kind} {target}: {self.before.get('name')!r}"
        parts = [f"{f} {self.before.get(f)!r} → {self.after.get(f)!r}" for f in fields]
        return f"{self.kind} {target}: " + "; ".join(parts)


def _lcs_keys(old: Sequence[str], new: Sequence[str]) -> set[str]:
    """Keys of a longest common subsequence: the ones that keep their relative order."""
    table = [[0] * (len(new) + 1) for _ in range(len(old) + 1)]
    for i in range(len(old) - 1, -1, -1):
        for j in range(len(new) - 1, -1, -1):
            if old[i] == new[j]:
                table[i][j] = table[i + 1][j + 1] + 1
            else:
                table[i][j] = max(table[i + 1][j], table[i][j + 1])
    kept: set[str] = set()
    i = j = 0
    while i < len(old) and j < len(new):
        if old[i] == new[j]:
            kept.add(old[i])
            i += 1
            j += 1
        elif table[i + 1][j] >= table[i][j + 1]:
            i += 1
        else:
            j += 1
    return kept


def _moved_in_order(old: Sequence[str], new: Sequence[str]) -> set[str]:
    """Keys present in both sequences whose relative order changed (the fewest such keys)."""
    common = set(old) & set(new)
    old_common = [k for k in old if k in common]
    new_common = [k for k in new if k in common]
    if old_common == new_common:
        return set()
    return common - _lcs_keys(old_common, new_common)


def _category_fields(entry: WalkedCategory) -> dict[str, Any]:
    c = entry.category
    return {
        "name": c.name,
        "parent": entry.parent,
        "position": entry.position,
        "definition": c.definition,
        "include": c.include,
        "exclude": c.exclude,
        "examples": list(c.examples),
    }


def _dimension_fields(dimension: DimensionSpec, position: int) -> dict[str, Any]:
    return {
        "name": dimension.name,
        "multiple": dimension.multiple,
        "applies_when": None if dimension.applies_when is None else dict([dimension.applies_when]),
        "description": dimension.description,
        "position": position,
    }


def _changed(
    before: Mapping[str, Any], after: Mapping[str, Any], names: Sequence[str]
) -> tuple[dict[str, Any], dict[str, Any]]:
    differing = [n for n in names if before[n] != after[n]]
    return {n: before[n] for n in differing}, {n: after[n] for n in differing}


def _dimension_order(spec: CodebookSpec) -> list[DimensionSpec]:
    """File order, except that a dimension comes after the one its applies_when names (so an applier
    creating dimensions in this order always finds the category it depends on)."""
    remaining = list(spec.dimensions)
    keys = {d.key for d in remaining}
    done: set[str] = set()
    ordered: list[DimensionSpec] = []
    while remaining:
        ready = [
            i
            for i, d in enumerate(remaining)
            if d.applies_when is None or d.applies_when[0] in done or d.applies_when[0] not in keys
        ]
        # No dimension ready means a cycle, refused by validation: keep file order rather than loop.
        dimension = remaining.pop(ready[0] if ready else 0)
        done.add(dimension.key)
        ordered.append(dimension)
    return ordered


def diff_codebooks(old: CodebookSpec, new: CodebookSpec) -> list[Change]:
    """The changes that turn `old` into `new`; [] when they are equal.

    Categories are matched by key within their dimension, dimensions by key. Kinds:

    * ``add`` (a new key; `after` has name, parent, position, definition, include, exclude, examples),
    * ``move`` (another parent; parent and position), ``reorder`` (same parent, the category changed its
      order relative to its siblings; parent and position; only the fewest categories that explain the new
      order are reported), ``rename`` (name), ``edit`` (definition, include, exclude, examples),
    * ``retire`` (a key gone: never a deletion; `before` has every field),
    * ``add_dimension``, ``edit_dimension`` (name, multiple, applies_when, description, or position when
      its order among the dimensions changed), ``retire_dimension`` (its categories go with it and get no
      change of their own).

    A changed key is a retire plus an add: keys are identities. Positions count from 0 among siblings
    (among dimensions for a dimension) in `new`. A category or dimension no change names may still sit at
    another index (a sibling was added or retired before it), so an applier sets every position from
    `new`'s order rather than from the changes alone.
    Order: dimensions in `new` file order (a dimension after the one its applies_when names), each as
    add_dimension / edit_dimension, then its categories depth-first (a parent before its children) with
    per category move or reorder, rename, edit; then the dimension's retired categories children first;
    retired dimensions last, in `old` order. Applying the changes in this order never puts a category
    under its own descendant or references a category not yet added.
    """
    changes: list[Change] = []
    old_dimensions = {d.key: (i, d) for i, d in enumerate(old.dimensions)}
    new_positions = {d.key: i for i, d in enumerate(new.dimensions)}
    reordered = _moved_in_order([d.key for d in old.dimensions], [d.key for d in new.dimensions])
    for dimension in _dimension_order(new):
        after = _dimension_fields(dimension, new_positions[dimension.key])
        if dimension.key not in old_dimensions:
            changes.append(Change("add_dimension", dimension.key, None, {}, after))
            changes.extend(_diff_categories(dimension.key, (), dimension.categories))
            continue
        old_position, old_dimension = old_dimensions[dimension.key]
        before = _dimension_fields(old_dimension, old_position)
        b, a = _changed(before, after, ["name", "multiple", "applies_when", "description"])
        if dimension.key in reordered:  # the position is where it goes, even when the number is the same
            b["position"], a["position"] = before["position"], after["position"]
        if b:
            changes.append(Change("edit_dimension", dimension.key, None, b, a))
        changes.extend(_diff_categories(dimension.key, old_dimension.categories, dimension.categories))
    for position, dimension in enumerate(old.dimensions):
        if dimension.key not in new_positions:
            before = _dimension_fields(dimension, position)
            changes.append(Change("retire_dimension", dimension.key, None, before, {}))
    return changes


def _diff_categories(
    dimension: str, old: Sequence[CategorySpec], new: Sequence[CategorySpec]
) -> list[Change]:
    old_walk = list(walk_categories(old))
    new_walk = list(walk_categories(new))
    old_by_key = {e.category.key: e for e in old_walk}
    new_by_key = {e.category.key: e for e in new_walk}

    def siblings(walk: list[WalkedCategory]) -> dict[str | None, list[str]]:
        groups: dict[str | None, list[str]] = {}
        for e in walk:
            groups.setdefault(e.parent, []).append(e.category.key)
        return groups

    old_siblings, new_siblings = siblings(old_walk), siblings(new_walk)
    reordered: set[str] = set()
    for parent, keys in new_siblings.items():
        if parent is None or parent in old_by_key:
            stayed = [k for k in keys if k in old_by_key and old_by_key[k].parent == parent]
            previous = [k for k in old_siblings.get(parent, []) if k in stayed]
            reordered |= _moved_in_order(previous, stayed)

    changes: list[Change] = []
    for entry in new_walk:
        key = entry.category.key
        after = _category_fields(entry)
        if key not in old_by_key:
            changes.append(Change("add", dimension, key, {}, after))
            continue
        before = _category_fields(old_by_key[key])
        if before["parent"] != after["parent"] or key in reordered:
            # Both fields always: the position is where the category goes, even when the number is the same.
            kind: ChangeKind = "move" if before["parent"] != after["parent"] else "reorder"
            where = ("parent", "position")
            changes.append(
                Change(kind, dimension, key, {n: before[n] for n in where}, {n: after[n] for n in where})
            )
        b, a = _changed(before, after, ["name"])
        if b:
            changes.append(Change("rename", dimension, key, b, a))
        b, a = _changed(before, after, ["definition", "include", "exclude", "examples"])
        if b:
            changes.append(Change("edit", dimension, key, b, a))
    for entry in reversed(old_walk):  # reversed pre-order: every child before its parent
        if entry.category.key not in new_by_key:
            changes.append(Change("retire", dimension, entry.category.key, _category_fields(entry), {}))
    return changes
