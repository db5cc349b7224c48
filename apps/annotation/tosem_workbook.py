"""Read the TOSEM 2023 labelling workbooks into plain label rows. Pure: no Django.

The replication package of Liu et al., "Rise of Distributed Deep Learning Training in the Big Model
Era: From a Software Engineering Perspective", ACM TOSEM 32(6), 2023 (doi:10.1145/3597204) holds two
workbook layouts, both read here:

- ``reliability_analysis_roundN.xlsx``: sheets ``label1`` and ``label2`` (one annotator each) and
  ``Final`` (the settled labels), with the columns ``Link, Issue Type, How-to topic, How-to
  sub-topic, Distributed-specified, Stage, Type, Leaf Category, Fix Pattern[, Memo]`` (``Final``
  headers end in " Final"; the memo column is optional). Read by :func:`read_reliability_workbook`.
- ``final_categories.xlsx``: sheet ``how-to questions`` (``Type, Link, how-to topic, sub-topic``) and
  sheet ``faults`` (``Type, Link, distributed-specific, stage, inner-category, leaf category, fix
  pattern``), where ``Type`` is the study's source (``GitHub-horovod``, ``SO-tensorflow & SO-keras``).
  Read by :func:`read_final_workbook`.

Output rows have the shape of the labels CSV of docs/design.md §5 (``item, annotator, dimension, label,
finding, round, memo``). The codebook must have the five dimensions named by the constants below;
which ``issue_type`` category means "fault" and which "how-to question" is read from the
``applies_when`` of ``symptom`` and ``howto_topic``.

Contract of the reading (docs/tosem23-import.md gives the full rules with examples):

- One sheet row is one *finding*. A post's findings are its rows, numbered 1, 2, ... in sheet order;
  a row without a link belongs to the post above it only when column A is merged over it (the study's
  way of writing a post with several faults). Rows without any label are skipped (a note is kept if
  they carry a link).
- Every label text goes through :func:`normalise_label`, then through the synonyms given to
  :meth:`Vocabulary.from_codebook` (chains allowed), and is looked up by name: flat dimensions among
  all categories, tree dimensions level by level under the parent named in the same row. A
  multi-choice dimension's text that is not one name is split on `` & `` and `` / ``.
- ``PENDING`` (and its misspellings ``PEDNING``, ``PENING``) gives the label :data:`PENDING_LABEL`,
  which an importer maps to the *pending* flag. A tree dimension whose lower level is PENDING is
  pending as a whole: the partial path is not kept (the database stores pending without a category).
- A tree dimension with an empty lower level is labelled with the deepest category given (``Function
  Support`` without a sub-topic is the category ``function-support``).
- Two shapes are repaired, each with a note naming the row: values shifted one column to the left (a
  stage without inner categories, its leaf in the inner-category column, the fix pattern in the leaf
  column and an empty fix-pattern column, as in round 4's ``label2``), and an inner-category cell
  that repeats the leaf of such a stage. A missing issue type is taken from the columns filled when
  only fault columns, or only how-to columns, hold values (also noted).
- Anything else that does not resolve is an *error* with sheet, row, column and value; the value is
  left out (never guessed) and the rest of the row is still read. A multi-choice value with one
  unresolved part is left out whole, so that a set is never silently shortened.

Errors about the workbook's shape (a missing sheet, a header that is not the TOSEM layout) raise
:class:`TosemLayoutError` instead: nothing sensible can be read from such a file.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import openpyxl
from openpyxl.utils import get_column_letter
from openpyxl.worksheet.worksheet import Worksheet

from .tosem_rows import (
    CellIssue,
    LabelRow,
    SheetResult,
    WorkbookResult,
    _Cell,
    _Collector,
    _Finding,
    _parse_finding,
)
from .tosem_vocabulary import (
    DIMENSIONS,
    DISTRIBUTED_SPECIFIC,
    FIX_PATTERN,
    HOWTO_TOPIC,
    ISSUE_TYPE,
    OTHER_FIX_PATTERN,
    PENDING_LABEL,
    SYMPTOM,
    TOSEM_RARE_FIX_PATTERNS,
    TOSEM_RETIRED_NAMES,
    TOSEM_SPELLING_VARIANTS,
    TosemLayoutError,
    UnresolvedLabel,
    Vocabulary,
    normalise_label,
    tosem_synonyms,
)

__all__ = [
    "DIMENSIONS",
    "DISTRIBUTED_SPECIFIC",
    "FINAL_FAULT_SHEET",
    "FINAL_HOWTO_SHEET",
    "FIX_PATTERN",
    "HOWTO_TOPIC",
    "ISSUE_TYPE",
    "OTHER_FIX_PATTERN",
    "PENDING_LABEL",
    "RELIABILITY_SHEETS",
    "SYMPTOM",
    "TOSEM_RARE_FIX_PATTERNS",
    "TOSEM_RETIRED_NAMES",
    "TOSEM_SPELLING_VARIANTS",
    "CellIssue",
    "LabelRow",
    "SheetResult",
    "TosemLayoutError",
    "UnresolvedLabel",
    "Vocabulary",
    "WorkbookResult",
    "iter_label_rows",
    "normalise_label",
    "read_final_workbook",
    "read_reliability_workbook",
    "tosem_synonyms",
]

#: Annotator written for each sheet of a reliability workbook ("" for the settled ``Final`` sheet).
RELIABILITY_SHEETS: Mapping[str, str] = {"label1": "annotator1", "label2": "annotator2", "Final": ""}

FINAL_HOWTO_SHEET = "how-to questions"
FINAL_FAULT_SHEET = "faults"


# --- Workbooks -------------------------------------------------------------------------------------

_RELIABILITY_HEADER = (
    "link",
    "issue type",
    "how-to topic",
    "how-to sub-topic",
    "distributed-specified",
    "stage",
    "type",
    "leaf category",
    "fix pattern",
)
_MEMO_COLUMN = get_column_letter(len(_RELIABILITY_HEADER) + 1)
_FINAL_HOWTO_HEADER = ("type", "link", "how-to topic", "sub-topic")
_FINAL_FAULT_HEADER = (
    "type",
    "link",
    "distributed-specific",
    "stage",
    "inner-category",
    "leaf category",
    "fix pattern",
)


def _header(ws: Worksheet, expected: Sequence[str], path: str, strip_suffix: str = "") -> int:
    """Check row 1 against ``expected``; return the number of layout columns (+1 if a memo column)."""
    values = [normalise_label(ws.cell(row=1, column=i + 1).value) for i in range(len(expected) + 1)]
    found = [v.removesuffix(strip_suffix).strip() if strip_suffix else v for v in values[: len(expected)]]
    if tuple(found) != tuple(expected):
        raise TosemLayoutError(
            f"{path}: sheet {ws.title!r} header is {values[: len(expected)]}, expected {list(expected)}"
        )
    return len(expected) + 1 if values[len(expected)] == "memo" else len(expected)


def _merged_tops(ws: Worksheet, column: int) -> dict[int, int]:
    """For every row covered (below its top) by a merged range over ``column``: the range's top row."""
    tops: dict[int, int] = {}
    for merged in ws.merged_cells.ranges:
        if merged.min_col <= column <= merged.max_col:
            for row in range(merged.min_row + 1, merged.max_row + 1):
                tops[row] = merged.min_row
    return tops


def _rows(ws: Worksheet) -> Iterator[tuple[int, list[object]]]:
    for number, values in enumerate(ws.iter_rows(min_row=2, values_only=True), start=2):
        yield number, list(values)


def _value(values: Sequence[object], index: int) -> object:
    value = values[index] if index < len(values) else None
    if isinstance(value, str) and not value.strip():
        return None
    return value


def _stray_cells(values: Sequence[object], width: int, sheet: str, row: int) -> list[CellIssue]:
    return [
        CellIssue(sheet, row, get_column_letter(i + 1), str(value), "value outside the TOSEM layout: ignored")
        for i, value in enumerate(values)
        if i >= width and _value(values, i) is not None
    ]


class _SheetReader:
    """Shared row loop: link (with merged cells), finding numbers, empty rows, issue collection."""

    def __init__(self, ws: Worksheet, link_column: int, annotator: str, round_number: int | None) -> None:
        self.ws = ws
        self.link_column = link_column  # 0-based
        self.annotator = annotator
        self.round = round_number
        self.tops = _merged_tops(ws, link_column + 1)
        self.links: dict[int, str] = {}
        self.counts: Counter[str] = Counter()
        self.rows: list[LabelRow] = []
        self.errors: list[CellIssue] = []
        self.notes: list[CellIssue] = []
        self.findings = 0
        self.items: dict[str, None] = {}  # ordered set of the posts met

    def link(self, row: int, values: Sequence[object]) -> str:
        raw = _value(values, self.link_column)
        if raw is None and row in self.tops:
            return self.links.get(self.tops[row], "")
        text = "" if raw is None else str(raw).strip()
        self.links[row] = text
        if text:
            self.items.setdefault(text)
        return text

    def read(
        self,
        row: int,
        values: Sequence[object],
        finding: _Finding,
        memo: str,
        labelled: bool,
        vocabulary: Vocabulary,
    ) -> None:
        item = self.link(row, values)
        letter = get_column_letter(self.link_column + 1)
        if not labelled:
            if memo:
                self.errors.append(
                    CellIssue(self.ws.title, row, _MEMO_COLUMN, memo, "memo without labels", item)
                )
            elif item and row not in self.tops:
                self.notes.append(
                    CellIssue(self.ws.title, row, letter, item, "link without labels: skipped", item)
                )
            return
        if not item:
            self.errors.append(
                CellIssue(
                    self.ws.title, row, letter, "", "labels without a link (no merged cell above): left out"
                )
            )
            return
        out = _Collector(self.ws.title, row, item)
        _parse_finding(finding, vocabulary, out)
        self.errors.extend(out.errors)
        self.notes.extend(out.notes)
        if not out.labels:
            return
        self.counts[item] += 1
        self.findings += 1
        for position, (dimension, label, raw) in enumerate(out.labels):
            first_memo = memo if position == 0 else ""
            self.rows.append(
                LabelRow(
                    item, self.annotator, dimension, label, self.counts[item], self.round, first_memo, raw
                )
            )

    def result(self) -> SheetResult:
        return SheetResult(
            self.ws.title,
            self.annotator,
            self.findings,
            tuple(self.items),
            tuple(self.rows),
            tuple(self.errors),
            tuple(self.notes),
        )


def _load(path: str | Path) -> Any:
    # Not read-only: merged-cell ranges are only available on a fully loaded workbook.
    return openpyxl.load_workbook(Path(path), data_only=True)


def read_reliability_workbook(
    path: str | Path,
    round_number: int,
    vocabulary: Vocabulary,
    sheets: Mapping[str, str] = RELIABILITY_SHEETS,
) -> WorkbookResult:
    """Read a ``reliability_analysis_roundN.xlsx`` workbook: each sheet of ``sheets`` (sheet name ->
    annotator written in the rows) into label rows of round ``round_number``.

    Raises :class:`TosemLayoutError` when a sheet is missing or its header is not the TOSEM layout.
    """
    workbook = _load(path)
    results: list[SheetResult] = []
    for sheet_name, annotator in sheets.items():
        if sheet_name not in workbook.sheetnames:
            raise TosemLayoutError(f"{path}: no sheet {sheet_name!r} (sheets: {workbook.sheetnames})")
        ws = workbook[sheet_name]
        width = _header(ws, _RELIABILITY_HEADER, str(path), strip_suffix=" final")
        reader = _SheetReader(ws, 0, annotator, round_number)
        for row, values in _rows(ws):
            cells = [
                _Cell(get_column_letter(i + 1), _value(values, i)) for i in range(len(_RELIABILITY_HEADER))
            ]
            finding = _Finding(
                issue_type=cells[1],
                topic=cells[2],
                subtopic=cells[3],
                distributed=cells[4],
                stage=cells[5],
                inner=cells[6],
                leaf=cells[7],
                fix=cells[8],
            )
            memo_value = _value(values, 9) if width > 9 else None
            memo = "" if memo_value is None else str(memo_value).strip()
            labelled = any(cell.text for cell in cells[1:])
            reader.errors.extend(_stray_cells(values, width, ws.title, row))
            reader.read(row, values, finding, memo, labelled, vocabulary)
        results.append(reader.result())
    return WorkbookResult(str(path), tuple(results), {})


def read_final_workbook(path: str | Path, vocabulary: Vocabulary) -> WorkbookResult:
    """Read ``final_categories.xlsx``: the settled labels (annotator "", round None) of every post.

    Findings are numbered per post across both sheets in workbook order (how-to questions, then
    faults). ``sources`` maps each post to its ``Type`` cell (several distinct values joined by "; ").
    Raises :class:`TosemLayoutError` when a sheet is missing or its header is not the TOSEM layout.
    """
    workbook = _load(path)
    results: list[SheetResult] = []
    sources: dict[str, list[str]] = {}
    counts: Counter[str] = Counter()  # shared: findings are numbered across the two sheets
    for sheet_name, header, implied in (
        (FINAL_HOWTO_SHEET, _FINAL_HOWTO_HEADER, vocabulary.howto_key),
        (FINAL_FAULT_SHEET, _FINAL_FAULT_HEADER, vocabulary.fault_key),
    ):
        if sheet_name not in workbook.sheetnames:
            raise TosemLayoutError(f"{path}: no sheet {sheet_name!r} (sheets: {workbook.sheetnames})")
        ws = workbook[sheet_name]
        width = _header(ws, header, str(path))
        if width > len(header):
            raise TosemLayoutError(f"{path}: sheet {sheet_name!r} has an unexpected memo column")
        reader = _SheetReader(ws, 1, "", None)
        reader.counts = counts
        type_tops = _merged_tops(ws, 1)
        types: dict[int, str] = {}
        implied_name = vocabulary.name_of(ISSUE_TYPE, implied)
        for row, values in _rows(ws):
            cells = [_Cell(get_column_letter(i + 1), _value(values, i)) for i in range(len(header))]
            if sheet_name == FINAL_HOWTO_SHEET:
                finding = _Finding(issue_type=_Cell("", implied_name), topic=cells[2], subtopic=cells[3])
            else:
                finding = _Finding(
                    issue_type=_Cell("", implied_name),
                    distributed=cells[2],
                    stage=cells[3],
                    inner=cells[4],
                    leaf=cells[5],
                    fix=cells[6],
                )
            labelled = any(cell.text for cell in cells[2:])
            reader.errors.extend(_stray_cells(values, width, ws.title, row))
            source_raw = _value(values, 0)
            source = (
                str(source_raw).strip() if source_raw is not None else types.get(type_tops.get(row, -1), "")
            )
            types[row] = source
            reader.read(row, values, finding, "", labelled, vocabulary)
            item = reader.links.get(row) or reader.links.get(reader.tops.get(row, -1), "")
            if labelled and item and source and source not in sources.setdefault(item, []):
                sources[item].append(source)
        results.append(reader.result())
    joined = {item: "; ".join(values) for item, values in sorted(sources.items())}
    return WorkbookResult(str(path), tuple(results), joined)


def iter_label_rows(results: Iterable[WorkbookResult]) -> Iterator[LabelRow]:
    """All label rows of several workbooks, in reading order."""
    for result in results:
        yield from result.rows
