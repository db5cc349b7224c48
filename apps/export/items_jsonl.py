"""Every item of a study with its labels, as JSON lines, streamed (`GET .../export/items.jsonl`).

One line per item, in id order, every item of the study (labelled or not):

    {"id": 7, "url": "...", "title": "...", "source": "github", "external_id": "...",
     "created_at": "2021-03-04T05:06:07+00:00" | null, "tags": [...],
     "labels": [{"annotator": "alice", "round": 1, "findings": [{"symptom": ["hang"]}, ...]}, ...],
     "decision": null | {"provenance": "unanimous", "findings": [{"symptom": ["hang"]}, ...]}}

`labels` are the submitted annotations (drafts never), `decision` the item's current gold decision.
Findings map a dimension key to its category keys in codebook order, or to ``"pending"``. Leads and
owners only, like every export: it holds every annotator's labels.

Read in chunks of `CHUNK` items by keyset on `(study, id)`, three queries per chunk (the items, their
label values, their decision values), so memory stays bounded by the chunk and the first bytes leave
before the last item is read. The whole export runs in one repeatable-read transaction on PostgreSQL
(a consistent snapshot, as a file export has), unless the caller has a transaction open already.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterator
from datetime import datetime
from typing import Any

from django.db import connection, transaction

from apps.accounts.models import Study
from apps.adjudication.models import DecisionValue
from apps.annotation.models import LabelValue
from apps.corpus.models import Item
from apps.taxonomy.index import CodebookIndex

CHUNK = 5000
PENDING = "pending"

# item id -> its annotations (annotator, round) -> finding number -> dimension key -> category keys
Labels = dict[int, dict[tuple[str, int], dict[int, dict[str, Any]]]]


def item_lines(study: Study, index: CodebookIndex | None, *, chunk: int = CHUNK) -> Iterator[str]:
    """The JSON lines of the study's items (module docstring), each ending with a newline."""
    if connection.vendor == "postgresql" and not connection.in_atomic_block:
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            yield from _lines(study, index, chunk)
    else:
        yield from _lines(study, index, chunk)


def _lines(study: Study, index: CodebookIndex | None, chunk: int) -> Iterator[str]:
    keys = _Keys(index)
    last = 0
    while True:
        items = list(
            Item.objects.filter(study=study, id__gt=last)
            .order_by("id")
            .values_list("id", "url", "title", "source", "external_id", "created_at", "tags")[:chunk]
        )
        if not items:
            return
        first, last = items[0][0], items[-1][0]
        labels = _labels(study, first, last, keys)
        decisions = _decisions(study, first, last, keys)
        dumps = json.JSONEncoder(ensure_ascii=False, separators=(", ", ": ")).encode
        yield "".join(
            dumps(
                {
                    "id": item_id,
                    "url": url,
                    "title": title,
                    "source": source,
                    "external_id": external_id,
                    "created_at": _iso(created_at),
                    "tags": tags,
                    "labels": [
                        {"annotator": annotator, "round": number, "findings": _findings(findings)}
                        for (annotator, number), findings in labels.get(item_id, {}).items()
                    ],
                    "decision": decisions.get(item_id),
                }
            )
            + "\n"
            for item_id, url, title, source, external_id, created_at, tags in items
        )


def _labels(study: Study, first: int, last: int, keys: _Keys) -> Labels:
    out: Labels = defaultdict(lambda: defaultdict(dict))
    rows = (
        LabelValue.objects.filter(
            finding__annotation__assignment__study=study,
            finding__annotation__assignment__item_id__gte=first,
            finding__annotation__assignment__item_id__lte=last,
            finding__annotation__submitted_at__isnull=False,
        )
        .order_by(
            "finding__annotation__assignment__item_id", "finding__annotation_id", "finding__number", "id"
        )
        .values_list(
            "finding__annotation__assignment__item_id",
            "finding__annotation__assignment__annotator__username",
            "finding__annotation__assignment__round__number",
            "finding__number",
            "dimension_id",
            "category_id",
            "pending",
        )
    )
    for item_id, annotator, round_number, finding, dimension_id, category_id, pending in rows.iterator(2000):
        values = out[item_id][(annotator, round_number)].setdefault(finding, {})
        keys.add(values, dimension_id, None if pending else category_id)
    return out


def _decisions(study: Study, first: int, last: int, keys: _Keys) -> dict[int, dict[str, Any]]:
    found: dict[int, tuple[str, dict[int, dict[str, Any]]]] = {}
    rows = (
        DecisionValue.objects.filter(
            finding__decision__study=study,
            finding__decision__is_current=True,
            finding__decision__item_id__gte=first,
            finding__decision__item_id__lte=last,
        )
        .order_by("finding__decision__item_id", "finding__number", "id")
        .values_list(
            "finding__decision__item_id",
            "finding__decision__provenance",
            "finding__number",
            "dimension_id",
            "category_id",
        )
    )
    for item_id, provenance, finding, dimension_id, category_id in rows.iterator(2000):
        _, findings = found.setdefault(item_id, (provenance, {}))
        keys.add(findings.setdefault(finding, {}), dimension_id, category_id)
    return {
        item_id: {"provenance": provenance, "findings": _findings(findings)}
        for item_id, (provenance, findings) in found.items()
    }


def _findings(findings: dict[int, dict[str, Any]]) -> list[dict[str, Any]]:
    """Findings in number order; each dimension's (position, key) pairs as keys in codebook order."""
    return [
        {dim: v if v == PENDING else [key for _, key in sorted(v)] for dim, v in findings[number].items()}
        for number in sorted(findings)
    ]


class _Keys:
    """Dimension and category keys by id from the codebook index (codebook order for a dimension's
    categories); ids the index does not know (a category merged away since) by their id."""

    def __init__(self, index: CodebookIndex | None) -> None:
        self.index = index
        self.dimensions: dict[int, str] = {}
        self.categories: dict[int, tuple[int, str]] = {}

    def add(self, values: dict[str, Any], dimension_id: int, category_id: int | None) -> None:
        dimension = self.dimensions.get(dimension_id) or self._dimension(dimension_id)
        if category_id is None:
            values[dimension] = PENDING
            return
        chosen = values.get(dimension)
        if not isinstance(chosen, list):
            chosen = values[dimension] = []
        chosen.append(self.categories.get(category_id) or self._category(category_id))

    def _dimension(self, dimension_id: int) -> str:
        try:
            key = self.index.dimension(dimension_id).key if self.index is not None else str(dimension_id)
        except LookupError:  # UnknownDimensionError is one
            key = str(dimension_id)
        self.dimensions[dimension_id] = key
        return key

    def _category(self, category_id: int) -> tuple[int, str]:
        try:
            info = self.index.category(category_id) if self.index is not None else None
        except LookupError:
            info = None
        found = (info.position, info.key) if info is not None else (1 << 30, str(category_id))
        self.categories[category_id] = found
        return found


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None
