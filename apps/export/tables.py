"""The exported dataset as tables: plain records in, pandas DataFrames and JSON objects out. No Django.

`rows` reads the database into the plain records defined here (`ExportItem` and its parts); this module
turns them into what the files hold (docs/design.md §5 "Export", docs/export.md):

* `dataset_frame`: the CSV / XLSX table, one row per (item, finding) of the current decision, with the
  columns `dataset_columns` names; with ``raw=True`` one more row per (item, annotator, finding) of every
  submitted annotation (column ``annotator`` set, ``provenance`` / ``decided_by`` / ``rationale`` empty,
  the annotator's memo in ``memo``);
* `item_object`: the JSON / JSONL object of one item (`json_text.ItemJson` writes its line faster);
* `annotations_frame`: the replication package's raw labels file, a docs/design.md §5 labels CSV with the
  category *key* in ``label`` and a few extra columns so that `package.import_study` loses nothing.

The CSV files are written row by row (`dataset_rows`, `annotation_rows`) with `csv_writer`, the dialect
pandas' ``to_csv`` writes, without building DataFrames; pandas is imported only by the functions that
return one (XLSX, the preview), so that a CSV or JSON export never pays for importing it.

Cells of the CSV and XLSX files go through `escape_cell` (the CSV formula-injection guard, OWASP): a text
starting with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is prefixed with a single quote, so a
spreadsheet shows it as text instead of running it. The rule also quotes a text that already starts with
quotes followed by one of those characters, which makes it reversible (`unescape_cell`), so a package
read back gives the exact original text.
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

PATH_SEPARATOR = " > "
VALUE_SEPARATOR = "; "
PENDING = "pending"
"""A *pending* (undecided) value of an annotator: the label text of the labels CSV (docs/design.md §5)."""

PENDING_TEXT = "(pending)"
"""How a pending value shows in a dataset cell, where category paths are written."""

BASE_COLUMNS = ("url", "title", "source", "round")
DECISION_COLUMNS = ("provenance", "decided_by", "rationale")
ANNOTATION_COLUMNS = (
    "item",
    "annotator",
    "dimension",
    "label",
    "finding",
    "round",
    "memo",
    "path",
    "original",
    "status",
    "submitted_at",
)
"""The package's raw labels file: the §5 labels columns first, then `path` (the label's path of names,
for people), `original` (the key an annotator chose before a merge moved the label), `status` of the
assignment (``submitted`` or ``open``) and `submitted_at` (ISO 8601)."""

_DANGEROUS = re.compile(r"'*[=+\-@\t\r]")
_ESCAPED = re.compile(r"'+[=+\-@\t\r]")
_FIRST_CHARACTERS = frozenset("'=+-@\t\r")
# openpyxl refuses these control characters (they are not allowed in XML 1.0).
_ILLEGAL_XLSX = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")


# --- Plain records ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Value:
    """One chosen category, or a pending value (``pending=True``, `key` = `PENDING`).

    `path` is the category's path of names at the requested level; `original` the key of the category
    chosen before a codebook merge moved the label ("" when it was not moved).
    """

    key: str
    path: str
    original: str = ""
    pending: bool = False

    @property
    def text(self) -> str:
        return PENDING_TEXT if self.pending else self.path


PENDING_VALUE = Value(PENDING, "", pending=True)


@dataclass(frozen=True, slots=True)
class FindingRecord:
    """One finding: dimension key → its values in the codebook's tree order."""

    number: int
    values: Mapping[str, tuple[Value, ...]]


@dataclass(frozen=True, slots=True)
class DecisionRecord:
    """An item's current decision. `decided_at` is ISO 8601; `decided_by` a username or ""."""

    round: int | None
    provenance: str
    decided_by: str
    decided_at: str
    rationale: str
    codebook_version: int
    findings: tuple[FindingRecord, ...]


@dataclass(frozen=True, slots=True)
class AnnotationRecord:
    """One assignment of an item to an annotator: its submitted labels, or ``status="open"`` and none."""

    annotator: str
    round: int | None
    status: str
    memo: str
    submitted_at: str
    findings: tuple[FindingRecord, ...]

    @property
    def submitted(self) -> bool:
        return self.status == "submitted"


@dataclass(frozen=True, slots=True)
class ExportItem:
    """One item with its current decision (None when undecided) and its annotators' labels."""

    url: str
    title: str
    source: str
    decision: DecisionRecord | None
    annotations: tuple[AnnotationRecord, ...] = field(default_factory=tuple)


# --- Cells --------------------------------------------------------------------------------------------


def escape_cell(text: str) -> str:
    """The CSV formula-injection guard: ``'`` + `text` when a spreadsheet could read it as a formula.

    Quoted: a text starting with ``= + - @``, a tab or a carriage return, and (so that `unescape_cell` can
    undo it) one starting with single quotes followed by one of those.
    """
    # The first-character test settles almost every cell without the regular expression.
    return "'" + text if text[:1] in _FIRST_CHARACTERS and _DANGEROUS.match(text) else text


def unescape_cell(text: str) -> str:
    """The inverse of `escape_cell`: ``unescape_cell(escape_cell(t)) == t`` for every text `t`."""
    return text[1:] if _ESCAPED.match(text) else text


def xlsx_cell(value: object) -> object:
    """A value ready for openpyxl: texts escaped as for CSV (so none becomes a formula) and stripped of
    the control characters XML cannot hold; missing values (None, NaN, pandas NA) become None."""
    import pandas as pd

    if value is None or value is pd.NA or (isinstance(value, float) and value != value):
        return None
    if isinstance(value, str):
        return escape_cell(_ILLEGAL_XLSX.sub("", value))
    return value


def escape_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of `frame` with every text cell passed through `escape_cell`."""
    out = frame.copy()
    for column in out.columns:
        if out[column].dtype == object:
            out[column] = [escape_cell(v) if isinstance(v, str) else v for v in out[column]]
    return out


def join_values(values: Sequence[Value]) -> str:
    """The cell of a dimension: the values' paths joined with ``"; "`` (``(pending)`` for pending)."""
    return VALUE_SEPARATOR.join(v.text for v in values)


# --- The dataset table (CSV, XLSX) --------------------------------------------------------------------


def dimension_columns(dimensions: Sequence[str], *, raw: bool) -> dict[str, str]:
    """Dimension key → its column name: the key itself, or ``"KEY (dimension)"`` when the key is also
    one of the fixed columns (a dimension keyed ``source`` must not hide the item's source)."""
    fixed = {*BASE_COLUMNS, "finding", *DECISION_COLUMNS, *(("annotator", "memo") if raw else ())}
    return {key: f"{key} (dimension)" if key in fixed else key for key in dimensions}


def dataset_columns(dimensions: Sequence[str], *, raw: bool = False) -> list[str]:
    """``url, title, source, round, [annotator,] finding, <one per dimension>, provenance, decided_by,
    rationale[, memo]`` (the bracketed ones with `raw`)."""
    names = dimension_columns(dimensions, raw=raw)
    return [
        *BASE_COLUMNS,
        *(("annotator",) if raw else ()),
        "finding",
        *(names[key] for key in dimensions),
        *DECISION_COLUMNS,
        *(("memo",) if raw else ()),
    ]


def _unchanged(text: str) -> str:
    return text


class DimensionCells:
    """The dimension cells of findings (`join_values`, escaped with `escape`), made once per distinct
    finding and kept across the chunks of an export.

    The readers (`findings.ValueCache`) share one tuple per distinct value list of a dimension and one
    mapping per distinct finding, so the cache is keyed by identity. It holds the objects it has seen,
    so their ids cannot be reused meanwhile, and is emptied when it reaches `max_cached` of them.
    """

    def __init__(self, dimensions: Sequence[str], *, escape: bool = False, max_cached: int = 50_000) -> None:
        self.dimensions = tuple(dimensions)
        self.escape = escape
        self.max_cached = max_cached
        self.empty = ("",) * len(self.dimensions)
        self._joined: dict[int, tuple[tuple[Value, ...], str]] = {}
        self._rows: dict[int, tuple[Mapping[str, tuple[Value, ...]], tuple[str, ...]]] = {}

    def _cell(self, values: tuple[Value, ...]) -> str:
        cached = self._joined.get(id(values))
        if cached is not None and cached[0] is values:
            return cached[1]
        text = join_values(values)
        if self.escape:
            text = escape_cell(text)
        self._joined[id(values)] = (values, text)
        return text

    def __call__(self, values: Mapping[str, tuple[Value, ...]]) -> tuple[str, ...]:
        """The cells of one finding, one per dimension ("" for a dimension it has no value in)."""
        cached = self._rows.get(id(values))
        if cached is not None and cached[0] is values:
            return cached[1]
        if len(self._rows) >= self.max_cached or len(self._joined) >= self.max_cached:
            self._rows.clear()
            self._joined.clear()
        texts = tuple(self._cell(values[key]) if key in values else "" for key in self.dimensions)
        self._rows[id(values)] = (values, texts)
        return texts


def dataset_rows(
    items: Iterable[ExportItem],
    dimensions: Sequence[str],
    *,
    raw: bool = False,
    escape: bool = False,
    cells: DimensionCells | None = None,
) -> Iterator[tuple[Any, ...]]:
    """The rows of `dataset_frame` as tuples in `dataset_columns` order, in file order; with `escape`
    every text cell passed through `escape_cell` already (cheaper than `escape_frame` afterwards: the
    cells of findings with the same values are built, and escaped, once). Pass the same `cells` (made
    with the same dimensions and `escape`) for every chunk of an export to keep that work across chunks.

    Per item: one row per finding of its current decision (one row with an empty `finding` when the
    decision has none); with `raw`, then one row per finding of each submitted annotation, in the order
    the records hold them. An item without a decision has no gold row: it appears only with `raw`,
    through its annotators' rows.
    """
    e = escape_cell if escape else _unchanged
    if cells is None:
        cells = DimensionCells(dimensions, escape=escape)
    elif cells.dimensions != tuple(dimensions) or cells.escape != escape:
        raise ValueError("the cells cache was made for other dimensions or escaping")
    empty = cells.empty

    for item in items:
        head = (e(item.url), e(item.title), e(item.source))
        decision = item.decision
        if decision is not None:
            tail = (e(decision.provenance), e(decision.decided_by), e(decision.rationale))
            row: tuple[Any, ...]
            if not decision.findings:
                row = (None, *empty, *tail)
                yield (*head, decision.round, *(("",) if raw else ()), *row, *(("",) if raw else ()))
            for finding in decision.findings:
                row = (finding.number, *cells(finding.values), *tail)
                yield (*head, decision.round, *(("",) if raw else ()), *row, *(("",) if raw else ()))
        if not raw:
            continue
        for annotation in item.annotations:
            if not annotation.submitted:
                continue
            start = (*head, annotation.round, e(annotation.annotator))
            end = ("", "", "", e(annotation.memo))
            if not annotation.findings:
                yield (*start, None, *empty, *end)
            for finding in annotation.findings:
                yield (*start, finding.number, *cells(finding.values), *end)


def dataset_frame(
    items: Iterable[ExportItem], dimensions: Sequence[str], *, raw: bool = False, escape: bool = False
) -> pd.DataFrame:
    """The dataset table (module docstring), unescaped unless `escape`: `round` and `finding` are nullable
    integers, every other column text ("" when empty)."""
    import pandas as pd

    columns = dataset_columns(dimensions, raw=raw)
    rows = list(dataset_rows(items, dimensions, raw=raw, escape=escape))
    frame = pd.DataFrame.from_records(rows, columns=columns)
    for column in ("round", "finding"):
        frame[column] = frame[column].astype("Int64")
    return frame


def csv_writer(handle: IO[str]) -> Any:
    """A CSV writer for the export files: the dialect of pandas' ``to_csv`` (comma, double quotes only
    where needed and doubled inside, ``\n`` line ends), which wrote them before; None is an empty cell,
    as a missing value was."""
    return csv.writer(handle, lineterminator="\n")


def write_csv(frame: pd.DataFrame, handle: IO[str], *, header: bool, escape: bool = True) -> None:
    """Append `frame` to an open text file as CSV (``\\n`` line ends, missing values empty), its text
    cells escaped (`escape_frame`) unless `escape` is False (for a frame built with ``escape=True``)."""
    (escape_frame(frame) if escape else frame).to_csv(
        handle, index=False, header=header, lineterminator="\n", na_rep=""
    )


def xlsx_rows(frame: pd.DataFrame) -> Iterator[list[object]]:
    """The frame's rows as lists of openpyxl-ready cells (`xlsx_cell`), header not included."""
    for row in frame.itertuples(index=False, name=None):
        yield [xlsx_cell(value) for value in row]


# --- JSON ---------------------------------------------------------------------------------------------


def values_object(values: tuple[Value, ...]) -> list[dict[str, str]] | str:
    """A dimension's labels in JSON: ``[{"key", "path"[, "original"]}]``, or ``"pending"``."""
    if any(v.pending for v in values):
        return PENDING
    out = []
    for value in values:
        entry = {"key": value.key, "path": value.path}
        if value.original:
            entry["original"] = value.original
        out.append(entry)
    return out


def finding_object(finding: FindingRecord) -> dict[str, Any]:
    """``{"finding": N, "labels": {dimension: [{"key", "path"[, "original"]}] | "pending"}}``."""
    return {
        "finding": finding.number,
        "labels": {key: values_object(values) for key, values in finding.values.items()},
    }


def item_object(item: ExportItem, *, raw: bool = False) -> dict[str, Any]:
    """The JSON object of one item: `url`, `title`, `source`, then its current decision's `round`,
    `provenance`, `decided_by`, `decided_at`, `rationale`, `codebook_version` and `findings` (all null
    when the item is undecided, which only happens with `raw`); with `raw`, `annotations`: every
    submitted annotation as ``{"annotator", "round", "memo", "submitted_at", "findings"}``."""
    decision = item.decision
    obj: dict[str, Any] = {
        "url": item.url,
        "title": item.title,
        "source": item.source,
        "round": decision.round if decision else None,
        "provenance": decision.provenance if decision else None,
        "decided_by": decision.decided_by if decision else None,
        "decided_at": decision.decided_at if decision else None,
        "rationale": decision.rationale if decision else None,
        "codebook_version": decision.codebook_version if decision else None,
        "findings": [finding_object(f) for f in decision.findings] if decision else None,
    }
    if raw:
        obj["annotations"] = [
            {
                "annotator": a.annotator,
                "round": a.round,
                "memo": a.memo,
                "submitted_at": a.submitted_at,
                "findings": [finding_object(f) for f in a.findings],
            }
            for a in item.annotations
            if a.submitted
        ]
    return obj


def json_line(obj: Any) -> str:
    """One JSON value on one line, deterministic: sorted keys, UTF-8 text kept as is."""
    return json.dumps(obj, ensure_ascii=False, sort_keys=True)


# --- The package's raw labels file --------------------------------------------------------------------


def annotation_rows(
    items: Iterable[ExportItem], dimensions: Sequence[str], *, escape: bool = False
) -> Iterator[tuple[Any, ...]]:
    """The rows of `annotations_frame` as tuples in `ANNOTATION_COLUMNS` order: per item, per annotation
    (in record order), one row per value (dimensions in `dimensions` order, values in record order). A
    finding without values gives one row with empty `dimension` and `label`; an annotation without
    findings (or an open assignment) one row with an empty `finding` (None) too. With `escape` every text
    cell is passed through `escape_cell`."""
    e = escape_cell if escape else _unchanged
    order = {key: position for position, key in enumerate(dimensions)}
    # Per distinct mapping of a finding (the readers share them, as for `dataset_rows`): its dimensions
    # in file order, each with the cells of its values.
    seen: dict[int, tuple[Mapping[str, tuple[Value, ...]], tuple[tuple[str, str, str, str], ...]]] = {}

    def cells(values: Mapping[str, tuple[Value, ...]]) -> tuple[tuple[str, str, str, str], ...]:
        cached = seen.get(id(values))
        if cached is not None and cached[0] is values:
            return cached[1]
        keys = sorted(values, key=lambda k: (order.get(k, len(order)), k))
        out = tuple(
            (
                e(key),
                e(PENDING if value.pending else value.key),
                e("" if value.pending else value.path),
                e(value.original),
            )
            for key in keys
            for value in values[key]
        )
        seen[id(values)] = (values, out)
        return out

    for item in items:
        url = e(item.url)
        for annotation in item.annotations:
            annotator, round_number = e(annotation.annotator), annotation.round
            memo, status, at = e(annotation.memo), e(annotation.status), e(annotation.submitted_at)
            if not annotation.findings:
                yield (url, annotator, "", "", None, round_number, memo, "", "", status, at)
                continue
            for finding in annotation.findings:
                labels = cells(finding.values)
                if not labels:
                    yield (url, annotator, "", "", finding.number, round_number, memo, "", "", status, at)
                for dimension, label, path, original in labels:
                    yield (
                        url,
                        annotator,
                        dimension,
                        label,
                        finding.number,
                        round_number,
                        memo,
                        path,
                        original,
                        status,
                        at,
                    )


def annotations_frame(items: Iterable[ExportItem], dimensions: Sequence[str]) -> pd.DataFrame:
    """The package's ``annotations.csv`` table (`ANNOTATION_COLUMNS`), unescaped."""
    import pandas as pd

    frame = pd.DataFrame.from_records(list(annotation_rows(items, dimensions)), columns=ANNOTATION_COLUMNS)
    for column in ("round", "finding"):
        frame[column] = frame[column].astype("Int64")
    return frame
