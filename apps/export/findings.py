"""Findings as read for an export: a label text per finding from the database (`labels_text`), turned
into a shared, immutable record once per distinct text (`ValueCache`).

Category ids become keys and paths of the requested tree level through the export's `CodebookIndex`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from django.db.models import Case, CharField, StringAgg, When
from django.db.models import Value as SQLValue
from django.db.models.functions import Cast, Coalesce, Concat

from apps.taxonomy.index import CodebookIndex

from .tables import PENDING_VALUE, FindingRecord, Value

Label = tuple[int, int | None, int | None, bool]
"""A label value as read: (dimension id, category id or None, original category id, pending)."""


class ValueCache:
    """Category id → `tables.Value` at one level of the tree, and the codebook's display order."""

    def __init__(self, index: CodebookIndex, level: int | None = None, *, max_cached: int = 50_000) -> None:
        self.index = index
        self.level = level
        self.max_cached = max_cached
        self.dimension_keys = {d.id: d.key for d in index.all_dimensions}
        self.dimension_order = {d.key: position for position, d in enumerate(index.all_dimensions)}
        self.category_order: dict[int, int] = {}
        for dimension in index.all_dimensions:
            for position, category_id in enumerate(index.tree(dimension.key, active_only=False)):
                self.category_order[category_id] = position
        self._values: dict[tuple[int, int | None], Value] = {}
        self._findings: dict[tuple[Label, ...], dict[str, tuple[Value, ...]]] = {}
        self._dimension_values: dict[tuple[str, tuple[Value, ...]], tuple[Value, ...]] = {}
        self._records: dict[tuple[int, str], FindingRecord] = {}

    def value(self, category_id: int, original_id: int | None = None) -> Value:
        cached = self._values.get((category_id, original_id))
        if cached is None:
            shown = category_id
            if self.level is not None:
                shown = self.index.ancestor_at_depth(category_id, self.level)
            original = ""
            if original_id is not None and original_id != category_id:
                original = self.index.category(original_id).key
            cached = Value(self.index.category(shown).key, self.index.path(shown), original)
            self._values[(category_id, original_id)] = cached
        return cached

    def finding(self, number: int, values: Sequence[Label]) -> FindingRecord:
        """A finding from its label values: dimensions in codebook order, each one's values in tree order
        (duplicates, which a level creates, dropped). Findings with the same values share one mapping."""
        key = tuple(sorted(values, key=_label_key))
        ordered = self._findings.get(key)
        if ordered is None:
            per_dimension: dict[str, list[tuple[int, Value]]] = defaultdict(list)
            for dimension_id, category_id, original_id, pending in key:
                name = self.dimension_keys[dimension_id]
                if pending or category_id is None:
                    per_dimension[name].append((-1, PENDING_VALUE))
                else:
                    value = self.value(category_id, original_id)
                    per_dimension[name].append((self.category_order[category_id], value))
            ordered = {}
            for name in sorted(per_dimension, key=lambda k: self.dimension_order[k]):
                chosen = tuple(dict.fromkeys(value for _, value in sorted(per_dimension[name], key=_first)))
                # One tuple object per distinct value list, so writers can cache what they make of it.
                ordered[name] = self._dimension_values.setdefault((name, chosen), chosen)
            self._findings[key] = ordered
        return FindingRecord(number, ordered)

    def finding_from_text(self, number: int, text: str) -> FindingRecord:
        """`finding` from the finding's labels as `labels_text` gives them. Records are immutable: one
        is made per distinct (number, text) and shared.

        The caches grow with the distinct findings, not the items; past `max_cached` records they are
        emptied (mappings made afterwards are new objects, which the writers' caches, keyed by
        identity, simply miss)."""
        record = self._records.get((number, text))
        if record is None:
            if len(self._records) >= self.max_cached:
                self._records.clear()
                self._findings.clear()
            record = self._records[(number, text)] = self.finding(number, parse_labels(text))
        return record


LABEL_SEPARATOR = ","


def labels_text(relation: str, *, pending: bool) -> StringAgg:
    """An aggregate of a finding's label values (its relation `relation`) as one text: a
    ``dimension:category:original:pending`` token per value (ids; "" for a missing one; ``p`` when
    pending), joined with `LABEL_SEPARATOR`. `parse_labels` reads it back.

    One row per finding instead of one per value, and a text that is a ready cache key
    (`ValueCache.finding_from_text`): building records stays per distinct finding, not per value.
    """

    def text(field: str) -> Coalesce:
        return Coalesce(Cast(f"{relation}__{field}", CharField()), SQLValue(""))

    parts: list[Any] = [
        text("dimension_id"),
        SQLValue(":"),
        text("category_id"),
        SQLValue(":"),
        text("original_category_id"),
        SQLValue(":"),
    ]
    if pending:
        parts.append(Case(When(**{f"{relation}__pending": True}, then=SQLValue("p")), default=SQLValue("")))
    return StringAgg(
        Concat(*parts, output_field=CharField()), delimiter=SQLValue(LABEL_SEPARATOR), default=SQLValue("")
    )


def parse_labels(text: str) -> list[Label]:
    """The labels of a `labels_text` text. A finding without values has one token without a dimension
    (its row of the outer join), or none."""
    labels = []
    for token in text.split(LABEL_SEPARATOR) if text else ():
        dimension, category, original, pending = token.split(":")
        if dimension:
            labels.append(
                (
                    int(dimension),
                    int(category) if category else None,
                    int(original) if original else None,
                    pending == "p",
                )
            )
    return labels


def _first(pair: tuple[int, Value]) -> int:
    return pair[0]


def _label_key(label: Label) -> tuple[int, int, int, bool]:
    dimension_id, category_id, original_id, pending = label
    return (dimension_id, category_id or 0, original_id or 0, pending)
