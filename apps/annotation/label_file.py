"""The labels CSV of docs/design.md §5, read into one row per (item, annotator, round, finding). No Django.

Format: a header row naming the columns ``item, annotator, dimension, label`` and optionally
``finding``, ``round`` and ``memo`` (any order, case-insensitive; any other column is refused, so that a
misspelt ``findng`` cannot silently put every label in finding 1). Then one row per label:

* ``item``: the item's URL (resolved against the study by the importer);
* ``annotator``: a username; may be empty only for gold decisions (``decisions=True``);
* ``dimension``: a dimension key; ``label``: a category key or its path of names joined by `` > ``
  (resolved by the importer), or ``pending`` (any case) for an undecided dimension (not for decisions);
* ``finding``: a whole number ≥ 1, default 1; ``round``: a whole number ≥ 1 or empty;
* ``memo``: free text, one per annotation: distinct memos of one (item, annotator, round) are joined
  with a blank line.

Rows with the same item, annotator, round and finding form one :class:`LabelRow`; rows with the same
dimension in it form a multi-choice value (a repeated identical row counts once). Row numbers are those
a spreadsheet shows: the header is row 1. Every problem of the file is collected and reported together
in a :class:`LabelFileError` (at most `MAX_REPORTED` listed), each with its row, field and value.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from apps.core.files import CsvFormatError, csv_records

PENDING = "pending"
REQUIRED_COLUMNS = ("item", "annotator", "dimension", "label")
OPTIONAL_COLUMNS = ("finding", "round", "memo")
MAX_REPORTED = 50
MAX_FINDING = 32767  # the database's PositiveSmallIntegerField


@dataclass(frozen=True)
class LabelProblem:
    """One problem: `row` as a spreadsheet numbers it (0 when it concerns the whole file)."""

    row: int
    field: str
    value: str
    message: str

    def __str__(self) -> str:
        where = f"row {self.row}" if self.row else "file"
        value = f" {self.value!r}" if self.value else ""
        return f"{where}, {self.field}{value}: {self.message}"


def report(problems: Sequence[object], limit: int = MAX_REPORTED, what: str = "problem") -> str:
    """The text of an error listing up to `limit` problems, one per line, and how many were left out."""
    lines = [f"{len(problems)} {what}{'s' if len(problems) != 1 else ''}:"]
    lines.extend(f"  {p}" for p in problems[:limit])
    if len(problems) > limit:
        lines.append(f"  ... and {len(problems) - limit} more")
    return "\n".join(lines)


class LabelFileError(ValueError):
    """A labels file that cannot be imported; `problems` lists every problem found, in row order."""

    def __init__(self, problems: Sequence[LabelProblem]) -> None:
        self.problems = sorted(problems, key=lambda p: p.row)
        super().__init__(report(self.problems))


@dataclass(frozen=True)
class Label:
    """One label text as written (a key, a path, or ``pending``) and the row it came from."""

    dimension: str
    text: str
    row: int

    @property
    def pending(self) -> bool:
        return self.text.strip().casefold() == PENDING


@dataclass
class LabelRow:
    """The labels of one finding of one annotator on one item (in one round, when given).

    `labels` keeps every label with its row, in file order; `rows` every row that contributed.
    """

    item: str
    annotator: str
    finding: int
    round: int | None
    memo: str = ""
    labels: list[Label] = field(default_factory=list)
    rows: list[int] = field(default_factory=list)

    @property
    def first_row(self) -> int:
        return self.rows[0] if self.rows else 0

    @property
    def key(self) -> tuple[str, str, int | None, int]:
        return (self.item, self.annotator, self.round, self.finding)

    def values(self) -> dict[str, list[str] | str]:
        """Dimension → label texts in file order, or ``"pending"``."""
        out: dict[str, list[str] | str] = {}
        for label in self.labels:
            if label.pending:
                out[label.dimension] = PENDING
            else:
                texts = out.setdefault(label.dimension, [])
                if isinstance(texts, list) and label.text not in texts:
                    texts.append(label.text)
        return out


class FlatLabel(Protocol):
    """One label as a flat record (a CSV row, or a row read from a workbook)."""

    @property
    def item(self) -> str: ...
    @property
    def annotator(self) -> str: ...
    @property
    def dimension(self) -> str: ...
    @property
    def label(self) -> str: ...
    @property
    def finding(self) -> int: ...
    @property
    def round(self) -> int | None: ...
    @property
    def memo(self) -> str: ...


@dataclass(frozen=True)
class _Flat:
    item: str
    annotator: str
    dimension: str
    label: str
    finding: int
    round: int | None
    memo: str


def group_labels(
    records: Iterable[FlatLabel], *, row_numbers: Sequence[int] | None = None, decisions: bool = False
) -> list[LabelRow]:
    """Group flat labels into `LabelRow`s by (item, annotator, round, finding), in order of first
    appearance. `row_numbers` gives each record's row for messages (default: 1, 2, ...).

    Raises LabelFileError when one dimension of one finding is both *pending* and a category, or, with
    `decisions`, when a label is *pending* (a gold decision always names a category).
    """
    problems: list[LabelProblem] = []
    groups: dict[tuple[str, str, int | None, int], LabelRow] = {}
    memos: dict[tuple[str, str, int | None], list[str]] = {}
    for index, record in enumerate(records):
        row = row_numbers[index] if row_numbers is not None else index + 1
        key = (record.item, record.annotator, record.round, record.finding)
        group = groups.get(key)
        if group is None:
            group = groups[key] = LabelRow(record.item, record.annotator, record.finding, record.round)
        label = Label(record.dimension, record.label, row)
        if label.pending and decisions:
            problems.append(LabelProblem(row, "label", record.label, "a gold decision cannot be pending"))
            continue
        if any(
            existing.dimension == label.dimension and existing.pending != label.pending
            for existing in group.labels
        ):
            other = next(e.row for e in group.labels if e.dimension == label.dimension)
            problems.append(
                LabelProblem(
                    row,
                    "label",
                    record.label,
                    f"dimension {record.dimension!r} of finding {record.finding} is both pending and a "
                    f"category (see row {other})",
                )
            )
            continue
        if not any(e.dimension == label.dimension and e.text == label.text for e in group.labels):
            group.labels.append(label)
        if row not in group.rows:
            group.rows.append(row)
        memo = record.memo.strip()
        annotation_memos = memos.setdefault((record.item, record.annotator, record.round), [])
        if memo and memo not in annotation_memos:
            annotation_memos.append(memo)
    if problems:
        raise LabelFileError(problems)
    for group in groups.values():
        group.memo = "\n\n".join(memos.get((group.item, group.annotator, group.round), []))
    return list(groups.values())


def open_csv(text: str, **options: Any) -> tuple[Iterator[tuple[int, list[str]]], list[str]]:
    """A labels file's records (numbered rows) and its header, a byte-order mark dropped; LabelFileError
    for an empty file or one that is not CSV. `options` go to `core.files.csv_records`."""
    records = csv_records(io.StringIO(text.removeprefix("\ufeff"), newline=""), **options)
    try:
        _, header = next(records)
    except StopIteration:
        raise LabelFileError([LabelProblem(0, "header", "", "the file is empty")]) from None
    except CsvFormatError as exc:
        raise LabelFileError([LabelProblem(1, "header", "", f"not readable as CSV: {exc}")]) from None
    return records, header


def parse_labels_csv(text: str, *, decisions: bool) -> list[LabelRow]:
    """Read a labels CSV (module docstring) into `LabelRow`s, or raise LabelFileError listing every
    problem with its row, field and value. With `decisions`, `annotator` may be empty and no label may be
    *pending*."""
    records_in, header = open_csv(text, row_width=_row_width)
    columns = _columns(header)
    problems: list[LabelProblem] = []
    records: list[_Flat] = []
    row_numbers: list[int] = []
    row = 1
    try:
        for row, (_, cells) in enumerate(records_in, start=2):
            if not any(cell.strip() for cell in cells):
                continue
            record = _record(row, cells, columns, len(header), decisions, problems)
            if record is not None:
                records.append(record)
                row_numbers.append(row)
    except CsvFormatError as exc:  # the line is the file's; the row, as a spreadsheet counts records
        problems.append(LabelProblem(row + 1, "row", "", f"not readable as CSV: {exc}"))
    if not records and not problems:
        problems.append(LabelProblem(0, "rows", "", "the file has a header but no labels"))
    if problems:
        raise LabelFileError(problems)
    return group_labels(records, row_numbers=row_numbers, decisions=decisions)


def _row_width(header: Sequence[str]) -> int:
    """The fewest cells a row can have: up to the last required column (optional ones after it may be
    left out), so that a stray quote in a memo cannot swallow such short rows either."""
    names = [cell.strip().casefold() for cell in header]
    return 1 + max((i for i, name in enumerate(names) if name in REQUIRED_COLUMNS), default=len(names) - 1)


def _columns(header: Sequence[str]) -> dict[str, int]:
    names = [cell.strip().casefold() for cell in header]
    known = set(REQUIRED_COLUMNS) | set(OPTIONAL_COLUMNS)
    problems: list[LabelProblem] = []
    for name in names:
        if name and name not in known:
            expected = ", ".join((*REQUIRED_COLUMNS, *OPTIONAL_COLUMNS))
            problems.append(LabelProblem(1, "header", name, f"unknown column (expected {expected})"))
        elif name and names.count(name) > 1:
            problems.append(LabelProblem(1, "header", name, "column appears more than once"))
    missing = [c for c in REQUIRED_COLUMNS if c not in names]
    if missing:
        problems.append(
            LabelProblem(
                1,
                "header",
                ",".join(header),
                f"missing column(s) {', '.join(missing)}: the header must name item, annotator, dimension, "
                "label[, finding][, round][, memo]",
            )
        )
    if problems:
        raise LabelFileError(list(dict.fromkeys(problems)))
    return {name: index for index, name in enumerate(names) if name}


def _record(
    row: int,
    cells: Sequence[str],
    columns: Mapping[str, int],
    width: int,
    decisions: bool,
    problems: list[LabelProblem],
) -> _Flat | None:
    if len(cells) > width and any(cell.strip() for cell in cells[width:]):
        extra = next(cell for cell in cells[width:] if cell.strip())
        problems.append(LabelProblem(row, "row", extra, f"{len(cells)} cells but the header has {width}"))
        return None

    def cell(name: str) -> str:
        index = columns.get(name)
        return cells[index].strip() if index is not None and index < len(cells) else ""

    before = len(problems)
    item, annotator, dimension, label = (cell(c) for c in REQUIRED_COLUMNS)
    if not item:
        problems.append(LabelProblem(row, "item", "", "empty: the item's URL is required"))
    if not annotator and not decisions:
        problems.append(
            LabelProblem(row, "annotator", "", "empty: a username is required (except for --decisions)")
        )
    if not dimension:
        problems.append(LabelProblem(row, "dimension", "", "empty: a dimension key is required"))
    if not label:
        problems.append(
            LabelProblem(row, "label", "", "empty: a category key, a path or 'pending' is required")
        )
    finding = _whole_number(row, "finding", cell("finding"), 1, problems, upper=MAX_FINDING)
    round_text = cell("round")
    number = _whole_number(row, "round", round_text, None, problems) if round_text else None
    memo_index = columns.get("memo")
    memo = cells[memo_index] if memo_index is not None and memo_index < len(cells) else ""
    if len(problems) > before:
        return None
    return _Flat(item, annotator, dimension, label, finding or 1, number, memo)


def _whole_number(
    row: int, name: str, text: str, default: int | None, problems: list[LabelProblem], upper: int = 2**31 - 1
) -> int | None:
    if not text:
        return default
    try:
        value = int(text)
    except ValueError:
        try:
            as_float = float(text)  # spreadsheets write 2 as "2.0"
        except ValueError:
            as_float = float("nan")
        if not as_float.is_integer():
            problems.append(LabelProblem(row, name, text, "not a whole number"))
            return None
        value = int(as_float)
    if not 1 <= value <= upper:
        problems.append(LabelProblem(row, name, text, f"must be between 1 and {upper}"))
        return None
    return value
