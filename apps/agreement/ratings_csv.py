"""Parser of the ratings CSV of docs/design.md §5 (``agreement --ratings FILE.csv``). Pure: no Django.

Format: a header naming exactly the columns ``item``, ``annotator`` and ``label`` (any order, case and
surrounding spaces ignored), then one row per rating. Fields are stripped of surrounding whitespace;
labels are compared exactly (case-sensitive). Blank lines are skipped. A UTF-8 byte-order mark is
accepted.

- single-label (``multi=False``): one row per rated (item, annotator); a second row for the same pair
  and an empty label are errors.
- multi-choice (``multi=True``): the rows of one (item, annotator) form its set; a single row with an
  empty label means "rated, chose no category" and must be that pair's only row; a repeated label is
  an error.
- an absent (item, annotator) pair means "did not rate".

Extra columns are refused rather than ignored: a labels export with a ``dimension`` column would
otherwise mix dimensions silently. With ``categories`` declared, a label outside them is an error (the
declared set defines Gwet's AC1; list ``pending`` there if the data uses it); without, the categories
are the labels seen, sorted. Every error is a :class:`RatingsFileError` naming the line, field and value.
"""

import io
import os
from collections.abc import Iterator, Sequence
from typing import IO, Literal, overload

from apps.agreement.metrics import NO_CATEGORY, MultiRatingTable, RatingTable
from apps.core.files import CsvFormatError, FileReadError, csv_records, read_text

COLUMNS = ("item", "annotator", "label")

__all__ = ["COLUMNS", "RatingsFileError", "parse_ratings"]


class RatingsFileError(ValueError):
    """Bad ratings file; ``line`` (1-based, the row's first physical line), ``field`` and ``value`` are
    set when the problem has them."""

    def __init__(
        self, message: str, *, line: int | None = None, field: str | None = None, value: str | None = None
    ) -> None:
        self.message, self.line, self.field, self.value = message, line, field, value
        where = [
            part
            for part in (
                f"line {line}" if line is not None else "",
                f"field {field!r}" if field is not None else "",
                f"value {value!r}" if value is not None else "",
            )
            if part
        ]
        super().__init__(f"{', '.join(where)}: {message}" if where else message)


@overload
def parse_ratings(
    source: str | os.PathLike[str] | IO[str],
    *,
    multi: Literal[False],
    categories: Sequence[str] | None = None,
) -> RatingTable: ...
@overload
def parse_ratings(
    source: str | os.PathLike[str] | IO[str], *, multi: Literal[True], categories: Sequence[str] | None = None
) -> MultiRatingTable: ...
@overload
def parse_ratings(
    source: str | os.PathLike[str] | IO[str], *, multi: bool, categories: Sequence[str] | None = None
) -> RatingTable | MultiRatingTable: ...
def parse_ratings(
    source: str | os.PathLike[str] | IO[str], *, multi: bool, categories: Sequence[str] | None = None
) -> RatingTable | MultiRatingTable:
    """Parse a ratings CSV into a table (:class:`MultiRatingTable` when ``multi``).

    ``source``: the CSV text (``str``), a path (``os.PathLike``, read as UTF-8), or an open text file.
    ``categories``: the declared categories, in order. Raises :class:`RatingsFileError`.
    """
    declared = _declared(categories)
    known = set(declared or ())
    text = _read(source)
    rows = _records(text)
    header_line, header = next(rows, (0, []))
    if not header:
        raise RatingsFileError("empty file: expected a header line 'item,annotator,label'")
    position = _header(header, header_line)

    triples: list[tuple[str, str, str]] = []
    first_line: dict[tuple[str, str], int] = {}  # (item, annotator) -> line of its first row
    pair_labels: dict[tuple[str, str], dict[str, int]] = {}  # multi: label -> line
    for line, row in rows:
        if len(row) != len(header):
            raise RatingsFileError(
                f"expected {len(header)} fields like the header, got {len(row)}", line=line
            )
        item, annotator, label = (row[position[column]].strip() for column in COLUMNS)
        for column, value in (("item", item), ("annotator", annotator)):
            if not value:
                raise RatingsFileError(f"the {column} is empty", line=line, field=column, value=value)
        if label == NO_CATEGORY and not multi:
            raise RatingsFileError(
                "the label is empty; an empty label means 'chose no category' only with --multi",
                line=line,
                field="label",
                value=label,
            )
        if declared is not None and label != NO_CATEGORY and label not in known:
            raise RatingsFileError(
                f"not a declared category; declared: {', '.join(declared)}",
                line=line,
                field="label",
                value=label,
            )
        pair = (item, annotator)
        if not multi and pair in first_line:
            raise RatingsFileError(
                f"second rating of item {item!r} by annotator {annotator!r} (first on line "
                f"{first_line[pair]}); single-label ratings have one row per item and annotator",
                line=line,
                field="annotator",
                value=annotator,
            )
        if multi:
            _check_multi_row(pair_labels.setdefault(pair, {}), label, line)
        first_line.setdefault(pair, line)
        triples.append((item, annotator, label))

    if not triples:
        raise RatingsFileError("no ratings after the header")
    annotators = sorted({annotator for _, annotator, _ in triples})
    if len(annotators) < 2:
        raise RatingsFileError(
            "only one annotator; agreement needs ratings from two or more",
            field="annotator",
            value=annotators[0],
        )
    try:
        if multi:
            return MultiRatingTable.from_triples(triples, declared)
        return RatingTable.from_triples(triples, declared)
    except ValueError as exc:  # a multi-choice table above MAX_MULTI_CELLS; the rest is checked above
        raise RatingsFileError(str(exc)) from exc


def _declared(categories: Sequence[str] | None) -> tuple[str, ...] | None:
    if categories is None:
        return None
    declared = tuple(category.strip() for category in categories)
    for category in declared:
        if not category:
            raise RatingsFileError("a declared category is empty", field="categories", value=category)
    duplicates = sorted({c for c in declared if declared.count(c) > 1})
    if duplicates:
        raise RatingsFileError("a category is declared twice", field="categories", value=duplicates[0])
    return declared


def _read(source: str | os.PathLike[str] | IO[str]) -> str:
    if isinstance(source, str):
        text = source
    elif isinstance(source, os.PathLike):
        try:
            text = read_text(source)
        except FileReadError as exc:
            raise RatingsFileError(exc.message) from exc
    else:
        text = source.read()
    return text.removeprefix("\ufeff")


def _records(text: str) -> Iterator[tuple[int, list[str]]]:
    """Non-blank CSV records with the line each starts on (a stray quote refused: `core.files`)."""
    try:
        for line, row in csv_records(io.StringIO(text, newline="")):
            if any(field.strip() for field in row):
                yield line, row
    except CsvFormatError as exc:
        raise RatingsFileError(exc.message, line=exc.line) from exc


def _header(header: list[str], line: int) -> dict[str, int]:
    names = [name.strip().lower() for name in header]
    position: dict[str, int] = {}
    for index, name in enumerate(names):
        if name in position:
            raise RatingsFileError(
                "column named twice in the header", line=line, field=name, value=header[index]
            )
        if name not in COLUMNS:
            raise RatingsFileError(
                "unexpected column; a ratings file has exactly the columns item,annotator,label "
                "(keep the rows of one dimension and drop the other columns)",
                line=line,
                value=header[index],
            )
        position[name] = index
    missing = [column for column in COLUMNS if column not in position]
    if missing:
        raise RatingsFileError(
            f"missing column {', '.join(missing)}; the header is {','.join(header)!r}, "
            "expected item,annotator,label",
            line=line,
            field=missing[0],
        )
    return position


def _check_multi_row(labels: dict[str, int], label: str, line: int) -> None:
    """One (item, annotator)'s rows in multi mode: distinct labels, an empty label only on its own."""
    if label in labels:
        raise RatingsFileError(
            f"the same label is repeated for this item and annotator (first on line {labels[label]})",
            line=line,
            field="label",
            value=label,
        )
    if labels and (label == NO_CATEGORY or NO_CATEGORY in labels):
        other = next(iter(labels))
        raise RatingsFileError(
            "an empty label means 'chose no category' and must be the only row of its item and annotator "
            f"(line {labels[other]} has {other!r})",
            line=line,
            field="label",
            value=label,
        )
    labels[label] = line
