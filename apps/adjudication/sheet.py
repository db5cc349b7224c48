"""The side-by-side sheet of one item: annotators' findings aligned row by row next to the decision being
composed, and the edits the lead makes to that decision before saving it. No Django.

A decision being composed is a list of findings, each mapping a dimension key to the chosen category keys
(the form's shape). Row ``i`` of the sheet shows every annotator's finding aligned to row ``i`` (see
`consolidation.align_rows`) and the decision's finding ``i``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .consolidation import PENDING, Findings, align_rows, canonical_value, ordered

Composed = list[dict[str, list[str]]]


@dataclass(frozen=True)
class DimensionInfo:
    key: str
    name: str
    multiple: bool


@dataclass(frozen=True)
class Cell:
    """One annotator's value for one dimension of one row: category keys with their display paths,
    *pending*, or nothing (`empty`: no finding in this row, or the dimension left unanswered)."""

    keys: tuple[str, ...] = ()
    labels: tuple[str, ...] = ()
    pending: bool = False
    has_finding: bool = True

    @property
    def empty(self) -> bool:
        return not self.keys and not self.pending


@dataclass(frozen=True)
class Row:
    """One dimension of one finding row. `differs`: the annotators' values are not all equal, or one is
    pending. `chosen`: the decision's category keys here, None when the decision has no finding here."""

    dimension: DimensionInfo
    cells: tuple[Cell, ...]
    differs: bool
    chosen: tuple[str, ...] | None


@dataclass(frozen=True)
class Block:
    """Finding row `number` (1-based): one `Row` per dimension."""

    number: int
    rows: tuple[Row, ...]
    in_decision: bool


class Sheet:
    """Annotators' findings (category ids, `consolidation` form) aligned for display."""

    def __init__(
        self,
        annotations: Sequence[Findings],
        dimensions: Sequence[DimensionInfo],
        key_of: Mapping[int, str],
        label_of: Mapping[int, str],
    ) -> None:
        self.dimensions = list(dimensions)
        self.key_of = key_of
        self.label_of = label_of
        self._ordered = [ordered(a) for a in annotations]
        self._rows = align_rows(annotations)
        shown = {d.key for d in self.dimensions}
        for findings in self._ordered:  # a dimension retired since labelling still shows its values
            for finding in findings:
                for key in finding:
                    if key not in shown:
                        shown.add(key)
                        self.dimensions.append(DimensionInfo(key, key, True))

    @property
    def n_rows(self) -> int:
        return len(self._rows)

    def cell(self, annotator: int, row: int, dimension: str) -> Cell:
        if row >= len(self._rows) or self._rows[row][annotator] is None:
            return Cell(has_finding=False)
        index = self._rows[row][annotator]
        assert index is not None
        value = self._ordered[annotator][index].get(dimension)
        if value is None:
            return Cell()
        if value == PENDING:
            return Cell(pending=True)
        ids = sorted(value, key=lambda i: self.label_of.get(i, str(i)))
        return Cell(
            keys=tuple(self.key_of.get(i, str(i)) for i in ids),
            labels=tuple(self.label_of.get(i, str(i)) for i in ids),
        )

    def differs(self, row: int, dimension: str) -> bool:
        values = set()
        for a in range(len(self._ordered)):
            index = self._rows[row][a] if row < len(self._rows) else None
            value = self._ordered[a][index].get(dimension) if index is not None else None
            if value == PENDING:
                return True
            values.add(canonical_value(value) if value is not None else None)
        return len(values) > 1

    def blocks(self, decision: Composed) -> list[Block]:
        """Rows for every finding row of the annotators or of the decision, whichever has more."""
        n = max(self.n_rows, len(decision))
        out = []
        for i in range(n):
            rows = []
            for d in self.dimensions:
                cells = tuple(self.cell(a, i, d.key) for a in range(len(self._ordered)))
                chosen = tuple(decision[i].get(d.key, ())) if i < len(decision) else None
                rows.append(Row(d, cells, self.differs(i, d.key), chosen))
            out.append(Block(i + 1, tuple(rows), i < len(decision)))
        return out

    def conflicting_ids(self) -> list[int]:
        """The categories the annotators chose where they differ, for the codebook definitions panel."""
        seen: dict[int, None] = {}
        for i in range(self.n_rows):
            for d in self.dimensions:
                if not self.differs(i, d.key):
                    continue
                for a in range(len(self._ordered)):
                    index = self._rows[i][a]
                    value = self._ordered[a][index].get(d.key) if index is not None else None
                    if isinstance(value, frozenset):
                        seen.update(dict.fromkeys(sorted(value)))
        return list(seen)

    # --- Composing -------------------------------------------------------------------------------------

    def agreed(self) -> Composed:
        """A starting decision: per row, the values every annotator shares (pending never counts)."""
        out: Composed = []
        for i in range(self.n_rows):
            finding: dict[str, list[str]] = {}
            for d in self.dimensions:
                if not self.differs(i, d.key):
                    cell = self.cell(0, i, d.key)
                    if cell.keys:
                        finding[d.key] = list(cell.keys)
            out.append(finding)
        return out or [{}]

    def take_all(self, annotator: int) -> Composed:
        """The annotator's labels as the decision (pending values left blank), one finding per row."""
        out: Composed = []
        for i in range(self.n_rows):
            if self._rows[i][annotator] is None:
                continue
            finding = {
                d.key: list(c.keys) for d in self.dimensions if (c := self.cell(annotator, i, d.key)).keys
            }
            out.append(finding)
        return out or [{}]

    def take(self, decision: Composed, annotator: int, row: int, dimension: str) -> Composed:
        """The decision with finding `row`'s `dimension` replaced by the annotator's value there."""
        out = [dict(f) for f in decision]
        while len(out) <= row:
            out.append({})
        cell = self.cell(annotator, row, dimension)
        if cell.keys:
            out[row][dimension] = list(cell.keys)
        else:
            out[row].pop(dimension, None)
        return out


def apply_action(sheet: Sheet, decision: Composed, action: str, n_annotators: int) -> Composed:
    """Apply one form button to the decision being composed. Actions: ``add`` (a blank finding),
    ``remove:<row>``, ``take:<annotator>`` (all of their labels), ``take:<annotator>:<row>:<dimension>``.
    Indexes are 0-based; anything malformed leaves the decision unchanged."""
    parts = action.split(":")
    try:
        if parts == ["add"]:
            return [*decision, {}]
        if parts[0] == "remove" and len(parts) == 2:
            row = int(parts[1])
            rest = [f for i, f in enumerate(decision) if i != row]
            return rest or [{}]
        if parts[0] == "take" and len(parts) in (2, 4):
            annotator = int(parts[1])
            if not 0 <= annotator < n_annotators:
                return decision
            if len(parts) == 2:
                return sheet.take_all(annotator)
            row = int(parts[2])
            if not 0 <= row < max(sheet.n_rows, len(decision)) or parts[3] not in {
                d.key for d in sheet.dimensions
            }:
                return decision
            return sheet.take(decision, annotator, row, parts[3])
    except ValueError:
        return decision
    return decision
