"""The TOSEM 2023 workbooks' rows as findings: one sheet row is one finding, its cells resolved through the
vocabulary (`tosem_vocabulary.py`) into label rows, with every repair noted and every unresolved cell
reported (the rules: `tosem_workbook.py`'s docstring). Pure: no Django. `tosem_workbook.py` reads the
sheets and re-exports the result types."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .tosem_vocabulary import (
    DISTRIBUTED_SPECIFIC,
    FIX_PATTERN,
    HOWTO_TOPIC,
    ISSUE_TYPE,
    PENDING_LABEL,
    PENDING_SPELLINGS,
    SYMPTOM,
    UnresolvedLabel,
    Vocabulary,
    normalise_label,
)


@dataclass(frozen=True)
class LabelRow:
    """One row of a labels CSV (docs/design.md §5). ``annotator`` is "" for settled labels; ``round`` is
    None when the labels belong to no round."""

    item: str
    annotator: str
    dimension: str
    label: str
    finding: int
    round: int | None
    memo: str = ""
    raw: str = ""  # the cell text the label was read from (provenance; not a labels-CSV column)


@dataclass(frozen=True)
class CellIssue:
    """An error (value left out) or a note (value repaired) about one cell; ``row`` is the sheet row
    (1-based, as Excel shows it) and ``column`` its letter."""

    sheet: str
    row: int
    column: str
    value: str
    message: str
    item: str = ""

    def __str__(self) -> str:
        return f"{self.sheet}!{self.column}{self.row} {self.value!r}: {self.message}"


@dataclass(frozen=True)
class SheetResult:
    sheet: str
    annotator: str
    findings: int
    items: tuple[str, ...]  # every post with a link in the sheet, in order, labelled or not
    rows: tuple[LabelRow, ...]
    errors: tuple[CellIssue, ...]
    notes: tuple[CellIssue, ...]


@dataclass(frozen=True)
class WorkbookResult:
    """Everything read from one workbook, sheet by sheet, in reading order."""

    path: str
    sheets: tuple[SheetResult, ...]
    # The final workbook's ``Type`` column per post (e.g. "SO-tensorflow & SO-keras"); empty otherwise.
    sources: Mapping[str, str]

    @property
    def rows(self) -> tuple[LabelRow, ...]:
        return tuple(row for sheet in self.sheets for row in sheet.rows)

    @property
    def errors(self) -> tuple[CellIssue, ...]:
        return tuple(issue for sheet in self.sheets for issue in sheet.errors)

    @property
    def notes(self) -> tuple[CellIssue, ...]:
        return tuple(issue for sheet in self.sheets for issue in sheet.notes)

    def sheet(self, name: str) -> SheetResult:
        for sheet in self.sheets:
            if sheet.sheet == name:
                return sheet
        raise KeyError(name)


@dataclass(frozen=True)
class _Cell:
    column: str  # "" when the value is implied by the sheet (the final workbook's issue type)
    raw: object

    @property
    def text(self) -> str:
        return normalise_label(self.raw)

    @property
    def shown(self) -> str:
        return "" if self.raw is None else str(self.raw)


_EMPTY = _Cell("", None)


@dataclass(frozen=True)
class _Finding:
    """The cells of one finding, by meaning, whatever the layout."""

    issue_type: _Cell = _EMPTY
    topic: _Cell = _EMPTY
    subtopic: _Cell = _EMPTY
    distributed: _Cell = _EMPTY
    stage: _Cell = _EMPTY
    inner: _Cell = _EMPTY
    leaf: _Cell = _EMPTY
    fix: _Cell = _EMPTY

    def fault_cells(self) -> tuple[_Cell, ...]:
        return (self.distributed, self.stage, self.inner, self.leaf, self.fix)

    def howto_cells(self) -> tuple[_Cell, ...]:
        return (self.topic, self.subtopic)


class _Collector:
    def __init__(self, sheet: str, row: int, item: str) -> None:
        self.sheet = sheet
        self.row = row
        self.item = item
        self.labels: list[tuple[str, str, str]] = []
        self.errors: list[CellIssue] = []
        self.notes: list[CellIssue] = []

    def error(self, cell: _Cell, message: str) -> None:
        self.errors.append(CellIssue(self.sheet, self.row, cell.column, cell.shown, message, self.item))

    def note(self, cell: _Cell, message: str) -> None:
        self.notes.append(CellIssue(self.sheet, self.row, cell.column, cell.shown, message, self.item))

    def add(self, dimension: str, label: str, cell: _Cell) -> None:
        self.labels.append((dimension, label, cell.shown))


def _parse_finding(finding: _Finding, vocabulary: Vocabulary, out: _Collector) -> None:
    """Append the labels of one finding to ``out`` (errors and notes too). See the module docstring."""
    issue_type = _issue_type(finding, vocabulary, out)
    if issue_type is None:
        return
    out.add(ISSUE_TYPE, issue_type, finding.issue_type)
    if issue_type == vocabulary.fault_key:
        for cell in finding.howto_cells():
            if cell.text:
                out.error(cell, "how-to topic on a fault row: left out")
        _fault(finding, vocabulary, out)
    elif issue_type == vocabulary.howto_key:
        for cell in finding.fault_cells():
            if cell.text:
                out.error(cell, "fault column filled on a how-to row: left out")
        _path(vocabulary, HOWTO_TOPIC, (finding.topic, finding.subtopic), out)
    else:
        for cell in (*finding.howto_cells(), *finding.fault_cells()):
            if cell.text:
                out.error(cell, f"issue type {issue_type!r} takes no symptom, fix or topic: left out")


def _issue_type(finding: _Finding, vocabulary: Vocabulary, out: _Collector) -> str | None:
    cell = finding.issue_type
    if cell.text:
        try:
            return vocabulary.resolve(ISSUE_TYPE, cell.text)
        except UnresolvedLabel as exc:
            out.error(cell, f"{exc}: the row is left out")
            return None
    has_fault = any(c.text for c in finding.fault_cells())
    has_howto = any(c.text for c in finding.howto_cells())
    if has_fault and not has_howto:
        out.note(cell, "issue type empty; fault columns filled: read as a fault")
        return vocabulary.fault_key
    if has_howto and not has_fault:
        out.note(cell, "issue type empty; how-to columns filled: read as a how-to question")
        return vocabulary.howto_key
    out.error(cell, "issue type empty and not implied by the other columns: the row is left out")
    return None


def _fault(finding: _Finding, vocabulary: Vocabulary, out: _Collector) -> None:
    if finding.distributed.text:
        try:
            key = vocabulary.resolve(DISTRIBUTED_SPECIFIC, finding.distributed.text)
            out.add(DISTRIBUTED_SPECIFIC, key, finding.distributed)
        except UnresolvedLabel as exc:
            out.error(finding.distributed, str(exc))
    inner, leaf, fix = finding.inner, finding.leaf, finding.fix
    stage_key = _stage_without_inner_level(finding.stage, vocabulary)
    if stage_key is not None and inner.text:
        # A stage whose children are leaves has no inner category: repair the two known shapes.
        symptoms = vocabulary.dimension(SYMPTOM)
        leaf_here = symptoms.child_named(stage_key, inner.text)
        if leaf.text and symptoms.canonical(inner.text) == symptoms.canonical(leaf.text):
            out.note(inner, "inner category repeats the leaf of a stage without inner categories: ignored")
            inner = _EMPTY
        elif leaf_here is not None and not fix.text:
            out.note(inner, "values shifted one column left (leaf in inner category, fix in leaf): realigned")
            inner, leaf, fix = _EMPTY, inner, leaf
    _path(vocabulary, SYMPTOM, (finding.stage, inner, leaf), out)
    if fix.text:
        if fix.text in PENDING_SPELLINGS:
            out.add(FIX_PATTERN, PENDING_LABEL, fix)
        else:
            try:
                for key in vocabulary.resolve_many(FIX_PATTERN, fix.text):
                    out.add(FIX_PATTERN, key, fix)
            except UnresolvedLabel as exc:
                out.error(fix, str(exc))


def _stage_without_inner_level(stage: _Cell, vocabulary: Vocabulary) -> str | None:
    if not stage.text or stage.text in PENDING_SPELLINGS:
        return None
    key = vocabulary.dimension(SYMPTOM).child_named(None, stage.text)
    if key is None or vocabulary.has_grandchildren(SYMPTOM, key):
        return None
    return key


def _path(vocabulary: Vocabulary, dimension: str, cells: Sequence[_Cell], out: _Collector) -> None:
    """Resolve a tree value given level by level (top first); see the module docstring."""
    given = [cell for cell in cells if cell.text]
    if not given:
        return
    parent: str | None = None
    last = _EMPTY
    for depth, cell in enumerate(cells):
        if not cell.text:
            later = [c for c in cells[depth + 1 :] if c.text]
            if parent is None:
                out.error(later[0], f"{dimension}: a lower level is given without the top level: left out")
                return
            if not later:
                out.add(dimension, parent, last)
                return
            if vocabulary.has_grandchildren(dimension, parent) or not vocabulary.has_children(
                dimension, parent
            ):
                name = vocabulary.name_of(dimension, parent)
                out.error(
                    later[0],
                    f"{dimension}: level {depth + 1} empty under {name!r}, a deeper level given: left out",
                )
                return
            continue  # this level does not exist under `parent` (a stage whose children are leaves)
        if cell.text in PENDING_SPELLINGS:
            out.add(dimension, PENDING_LABEL, cell)
            return
        if parent is not None and not vocabulary.has_children(dimension, parent):
            out.error(cell, f"{dimension}: {vocabulary.name_of(dimension, parent)!r} has no subcategories")
            return
        try:
            parent = vocabulary.resolve(dimension, cell.text, parent)
        except UnresolvedLabel as exc:
            out.error(cell, f"{dimension}: {exc}: left out")
            return
        last = cell
    assert parent is not None  # at least one cell was given and resolved
    out.add(dimension, parent, last)
