"""The JSON line of an export item, written without building its object first. No Django.

`tables.item_object` defines the object and `tables.json_line` its text; `ItemJson` gives the same text
for much less work, which matters for the replication package's dataset.json and the JSON exports.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from json.encoder import encode_basestring

from .tables import ExportItem, FindingRecord, Value, json_line, values_object


def _json(value: object) -> str:
    """`value` as `json.dumps(value, ensure_ascii=False)` writes it, the common cases without its setup."""
    if isinstance(value, str):
        return encode_basestring(value)  # what json.dumps calls for a text with ensure_ascii=False
    if value is None:
        return "null"
    if type(value) is int:
        return int.__repr__(value)
    return json.dumps(value, ensure_ascii=False)


class ItemJson:
    """The JSON line of an item: ``ItemJson(raw=raw).line(item) == json_line(item_object(item, raw=raw))``.

    Faster than building the object: the keys are written in their sorted order, and the text of each
    distinct labels mapping of a finding is made once (the readers share one mapping per distinct
    finding, `findings.ValueCache`). The cache holds the mappings it has seen, so their ids stay valid; it is
    emptied when it reaches `max_cached` of them.
    """

    def __init__(self, *, raw: bool = False, max_cached: int = 50_000) -> None:
        self.raw = raw
        self.max_cached = max_cached
        self._labels: dict[int, tuple[Mapping[str, tuple[Value, ...]], str]] = {}

    def _labels_text(self, values: Mapping[str, tuple[Value, ...]]) -> str:
        cached = self._labels.get(id(values))
        if cached is not None and cached[0] is values:
            return cached[1]
        if len(self._labels) >= self.max_cached:
            self._labels.clear()
        text = json_line({key: values_object(chosen) for key, chosen in values.items()})
        self._labels[id(values)] = (values, text)
        return text

    def findings(self, findings: Iterable[FindingRecord]) -> str:
        """The JSON list of `finding_object` of each finding."""
        return (
            "["
            + ", ".join(
                f'{{"finding": {_json(f.number)}, "labels": {self._labels_text(f.values)}}}' for f in findings
            )
            + "]"
        )

    def line(self, item: ExportItem) -> str:
        decision = item.decision
        parts = []
        if self.raw:
            annotations = ", ".join(
                f'{{"annotator": {_json(a.annotator)}, "findings": {self.findings(a.findings)}, '
                f'"memo": {_json(a.memo)}, "round": {_json(a.round)}, '
                f'"submitted_at": {_json(a.submitted_at)}}}'
                for a in item.annotations
                if a.submitted
            )
            parts.append(f'"annotations": [{annotations}]')
        if decision is None:
            parts.append(
                '"codebook_version": null, "decided_at": null, "decided_by": null, "findings": null, '
                '"provenance": null, "rationale": null, "round": null'
            )
        else:
            parts.append(
                f'"codebook_version": {_json(decision.codebook_version)}, '
                f'"decided_at": {_json(decision.decided_at)}, "decided_by": {_json(decision.decided_by)}, '
                f'"findings": {self.findings(decision.findings)}, '
                f'"provenance": {_json(decision.provenance)}, "rationale": {_json(decision.rationale)}, '
                f'"round": {_json(decision.round)}'
            )
        parts.append(
            f'"source": {_json(item.source)}, "title": {_json(item.title)}, "url": {_json(item.url)}'
        )
        return "{" + ", ".join(parts) + "}"
