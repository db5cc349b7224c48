"""Read item files (CSV, TSV, JSON, JSONL, URL lists) into :class:`ItemRecord` objects.

Pure module (no Django). The formats are those of docs/design.md §5:

- **CSV / TSV**: a header row, then one item per row. ``url`` is required; ``title``, ``body``,
  ``body_format`` (``markdown`` | ``html`` | ``text``), ``source``, ``external_id``, ``created_at``
  (ISO 8601 or Unix seconds) and ``tags`` are understood (header names are case-insensitive); every
  other column is kept in ``metadata`` under its own name. ``tags`` are separated by ``;``
  (``bug;module: ddp``); a cell written as ``<a><b>`` or ``|a|b|`` (Stack Overflow dump style) is
  understood too. Commas are not separators because label names may contain them.
- **JSON**: an array of objects, or an object with an ``items`` array (a Stack Exchange API
  response). Each object is one of: a GitHub REST issue object (``html_url`` + ``number``); a Stack
  Exchange question (``question_id``, with ``answers`` if the filter included them); or a plain
  object with the CSV fields (``tags`` a list or a string, ``comments`` an optional list of
  ``{"body", "author", "created_at", "is_answer", "is_accepted", "score", "external_id",
  "body_format"}``). A whole JSON file is loaded at once: use JSONL for very large files.
- **JSONL**: one such object per line; blank lines are ignored.
- **URL lists**: one URL per line (to be hydrated later); blank lines and ``#`` comments ignored.

Defaults: ``source`` and ``external_id`` follow from the URL (:func:`records.source_for_url`);
``body_format`` is ``html`` for Stack Exchange sources and ``markdown`` otherwise. GitHub pull
requests in a JSON export are skipped (counted in :class:`FileCheck.skipped`), as the GitHub importer
skips them. Two rows with the same canonical URL are an error (the file is ambiguous), and so is a
canonical URL longer than 500 characters (it could not be stored).

Errors: a bad row raises (or is collected as) :class:`ImportFileError` naming line (or item),
field and value. To guarantee that nothing is written when any row is bad, call
:func:`validate_then_iterate`: it reads the whole file first and raises :class:`ImportFileErrors`
listing every problem before a single record is produced; then it streams the records in a second
pass, in bounded memory apart from the set of URLs seen.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TextIO

from apps.core.files import (
    CsvFormatError,
    FileReadError,
    JsonReader,
    NonJsonNumber,
    csv_records,
    non_json_number,
    open_text,
)
from apps.corpus import github, stackexchange
from apps.corpus.records import (
    BODY_FORMATS,
    MAX_URL_LENGTH,
    SOURCE_STACKEXCHANGE,
    SOURCE_STACKOVERFLOW,
    BodyFormat,
    CommentRecord,
    ItemRecord,
    canonical_url,
    external_id_for_url,
    parse_timestamp,
    source_for_url,
    split_tags,
)

FileFormat = Literal["csv", "tsv", "json", "jsonl", "urls"]
FILE_FORMATS: tuple[FileFormat, ...] = ("csv", "tsv", "json", "jsonl", "urls")
_EXTENSIONS: dict[str, FileFormat] = {
    ".csv": "csv",
    ".tsv": "tsv",
    ".json": "json",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".txt": "urls",
    ".urls": "urls",
}
_KNOWN_FIELDS = ("url", "title", "body", "body_format", "source", "external_id", "created_at", "tags")
_TOO_DEEP = "invalid JSON: arrays or objects nested too deeply (an item is at most a few levels deep)"


class ImportFileError(ValueError):
    """One problem in an item file, located by line (or item number in a JSON array) and field."""

    def __init__(
        self,
        line: int | None,
        field: str | None,
        value: object,
        message: str,
        unit: Literal["line", "item"] = "line",
    ) -> None:
        self.line = line
        self.field = field
        self.value = value
        self.message = message
        self.unit = unit
        super().__init__(str(self))

    def __str__(self) -> str:
        where = []
        if self.line is not None:
            where.append(f"{self.unit} {self.line}")
        if self.field is not None:
            where.append(f"field {self.field!r}")
        if self.value is not None:
            shown = repr(self.value)
            where.append(f"value {shown[:80] + '...' if len(shown) > 80 else shown}")
        prefix = ", ".join(where)
        return f"{prefix}: {self.message}" if prefix else self.message


class ImportFileErrors(ValueError):
    """Every problem found in a file (at most ``max_errors``; ``truncated`` says if there were more)."""

    def __init__(self, errors: Sequence[ImportFileError], truncated: bool = False) -> None:
        self.errors = list(errors)
        self.truncated = truncated
        lines = [str(error) for error in self.errors]
        more = "\n(more errors not shown)" if truncated else ""
        super().__init__(f"{len(self.errors)} error(s) in the file:\n" + "\n".join(lines) + more)


@dataclass(slots=True)
class FileCheck:
    """The outcome of reading a whole file without keeping its records."""

    format: FileFormat
    records: int = 0
    skipped: list[tuple[int, str]] = field(default_factory=list)
    errors: list[ImportFileError] = field(default_factory=list)
    truncated: bool = False

    @property
    def ok(self) -> bool:
        return not self.errors


@dataclass(slots=True)
class _Skip:
    position: int
    reason: str


def detect_format(path: str | Path, format: str | None = None) -> FileFormat:
    """The file format: ``format`` when given (must be one of :data:`FILE_FORMATS`), else by extension."""
    if format is not None:
        name = format.lower()
        for known in FILE_FORMATS:
            if name == known:
                return known
        raise ImportFileError(
            None, "format", format, f"unknown format; expected one of {', '.join(FILE_FORMATS)}"
        )
    suffix = Path(path).suffix.lower()
    if suffix in _EXTENSIONS:
        return _EXTENSIONS[suffix]
    raise ImportFileError(
        None,
        None,
        Path(path).name,
        f"cannot tell the format from the extension {suffix or '(none)'!r}; "
        f"pass one of {', '.join(FILE_FORMATS)} explicitly",
    )


def iter_records(path: str | Path, format: str | None = None) -> Iterator[ItemRecord]:
    """Stream the records of a file; raise :class:`ImportFileError` at the first bad row.

    Rows before the bad one have already been yielded: use :func:`validate_then_iterate` when a
    bad row must stop everything.
    """
    for entry in _entries(Path(path), detect_format(path, format)):
        if isinstance(entry, ImportFileError):
            raise entry
        if isinstance(entry, ItemRecord):
            yield entry


def check_file(path: str | Path, format: str | None = None, max_errors: int = 100) -> FileCheck:
    """Read the whole file, count its records and collect every error (up to ``max_errors``)."""
    fmt = detect_format(path, format)
    check = FileCheck(format=fmt)
    for entry in _entries(Path(path), fmt):
        if isinstance(entry, ImportFileError):
            if len(check.errors) >= max_errors:
                check.truncated = True
                break
            check.errors.append(entry)
        elif isinstance(entry, _Skip):
            check.skipped.append((entry.position, entry.reason))
        else:
            check.records += 1
    return check


def validate_then_iterate(
    path: str | Path, format: str | None = None, max_errors: int = 100
) -> Iterator[ItemRecord]:
    """Check the whole file now; raise :class:`ImportFileErrors` if any row is bad; else return an
    iterator over its records (a second pass over the file).

    The check runs when this function is called, not when the iterator is first advanced, so a
    caller that writes only while iterating writes nothing for a bad file.
    """
    check = check_file(path, format, max_errors)
    if not check.ok:
        raise ImportFileErrors(check.errors, check.truncated)
    return iter_records(path, check.format)


def load_records(
    path: str | Path, format: str | None = None, max_errors: int = 100
) -> tuple[list[ItemRecord], list[ImportFileError]]:
    """All records and all errors of a small file in one pass (records of bad rows are absent)."""
    records: list[ItemRecord] = []
    errors: list[ImportFileError] = []
    for entry in _entries(Path(path), detect_format(path, format)):
        if isinstance(entry, ImportFileError):
            if len(errors) < max_errors:
                errors.append(entry)
        elif isinstance(entry, ItemRecord):
            records.append(entry)
    return records, errors


# --- reading ---------------------------------------------------------------------------------------

_Entry = ItemRecord | ImportFileError | _Skip
_Unit = Literal["line", "item"]


@dataclass(slots=True)
class _Row:
    """A record with where it was read, until the duplicate check has seen it."""

    record: ItemRecord
    position: int
    unit: _Unit


_Located = _Row | ImportFileError | _Skip


def _located(entry: _Entry, position: int, unit: _Unit) -> _Located:
    return _Row(entry, position, unit) if isinstance(entry, ItemRecord) else entry


def _entries(path: Path, fmt: FileFormat) -> Iterator[_Entry]:
    """Every row of the file as a record, a skip or an error (a repeated URL is an error)."""
    seen: dict[str, int] = {}
    try:
        with open_text(path) as handle:
            for entry in _raw_entries(handle, fmt):
                if not isinstance(entry, _Row):
                    yield entry
                    continue
                url, position, unit = entry.record.url, entry.position, entry.unit
                first = seen.get(url)
                if first is not None:
                    message = f"same item as {unit} {first} (URLs are compared canonically)"
                    yield ImportFileError(position, "url", url, message, unit)
                    continue
                seen[url] = position
                yield entry.record
    except FileReadError as exc:  # the path may be the job's copy of an upload: say "the file"
        yield ImportFileError(None, None, None, f"cannot read the file: {exc.message}")


def _raw_entries(handle: TextIO, fmt: FileFormat) -> Iterator[_Located]:
    if fmt in ("csv", "tsv"):
        yield from _csv_entries(handle, "\t" if fmt == "tsv" else ",")
    elif fmt == "json":
        yield from _json_entries(handle)
    elif fmt == "jsonl":
        yield from _jsonl_entries(handle)
    else:
        yield from _url_entries(handle)


def _csv_entries(handle: TextIO, delimiter: str) -> Iterator[_Located]:
    reader = csv_records(handle, delimiter=delimiter)
    try:
        header_line, header = next(reader, (1, None))
    except CsvFormatError as exc:
        yield ImportFileError(exc.line, None, None, exc.message)
        return
    if header is None:
        yield ImportFileError(1, None, None, "the file is empty: expected a header row with a 'url' column")
        return
    names = [name.strip() for name in header]
    lowered = [name.lower() for name in names]
    for index, name in enumerate(lowered):
        if not name:
            yield ImportFileError(header_line, None, None, f"column {index + 1} of the header has no name")
            return
        if lowered.index(name) != index:
            yield ImportFileError(header_line, names[index], None, "the header names this column twice")
            return
    if "url" not in lowered:
        message = f"missing required column 'url' (columns: {', '.join(names)})"
        yield ImportFileError(header_line, "url", None, message)
        return
    keys = [name if name.lower() not in _KNOWN_FIELDS else name.lower() for name in names]
    while True:
        try:
            start, row = next(reader)
        except StopIteration:
            return
        except CsvFormatError as exc:  # nothing after a stray quote can be trusted: stop here
            yield ImportFileError(exc.line, None, None, exc.message)
            return
        if not row or (len(row) == 1 and not row[0].strip()):
            continue
        if len(row) > len(keys):
            yield ImportFileError(
                start,
                None,
                row[len(keys)],
                f"the row has {len(row)} fields but the header has {len(keys)}",
            )
            continue
        values = dict(zip(keys, row + [""] * (len(keys) - len(row)), strict=True))
        yield _located(_generic_entry(values, start, "line", from_text=True), start, "line")


def _json_entries(handle: TextIO) -> Iterator[_Located]:
    reader = JsonReader()
    try:
        document = reader.decode(handle.read())
    except json.JSONDecodeError as exc:
        yield ImportFileError(exc.lineno, None, None, f"invalid JSON: {exc.msg} (column {exc.colno})")
        return
    except RecursionError:
        yield ImportFileError(None, None, None, _TOO_DEEP)
        return
    if isinstance(document, dict) and "error_id" in document:
        message = document.get("error_message") or document.get("error_name")
        yield ImportFileError(None, None, None, f"the file holds a Stack Exchange API error: {message}")
        return
    if isinstance(document, dict) and isinstance(document.get("items"), list):
        items: list[Any] = document["items"]
    elif isinstance(document, list):
        items = document
    else:
        yield ImportFileError(
            None, None, None, "expected a JSON array of items, or an object with an 'items' array"
        )
        return
    for number, item in enumerate(items, start=1):
        problem = non_json_number(item) if reader.constants_seen else None
        if problem is not None:
            yield _non_json_number(problem, number, "item")
            continue
        yield _located(_object_entry(item, number, "item"), number, "item")


def _jsonl_entries(handle: TextIO) -> Iterator[_Located]:
    reader = JsonReader()
    for number, text in enumerate(handle, start=1):
        if not text.strip():
            continue
        try:
            item = reader.loads(text)
        except NonJsonNumber as problem:
            yield _non_json_number(problem, number, "line")
            continue
        except json.JSONDecodeError as exc:
            yield ImportFileError(number, None, None, f"invalid JSON: {exc.msg} (column {exc.colno})")
            continue
        except RecursionError:
            yield ImportFileError(number, None, None, _TOO_DEEP)
            continue
        yield _located(_object_entry(item, number, "line"), number, "line")


def _non_json_number(problem: NonJsonNumber, position: int, unit: _Unit) -> ImportFileError:
    """NaN or Infinity in an item (Python's json writes them; JSON has none): refused, naming the field."""
    return ImportFileError(position, problem.path or None, None, str(problem), unit)


def _url_entries(handle: TextIO) -> Iterator[_Located]:
    for number, text in enumerate(handle, start=1):
        value = text.strip()
        if not value or value.startswith("#"):
            continue
        yield _located(_generic_entry({"url": value}, number, "line", from_text=True), number, "line")


def _object_entry(item: object, position: int, unit: _Unit) -> _Entry:
    if not isinstance(item, dict):
        return ImportFileError(position, None, item, "expected a JSON object", unit)
    try:
        if github.is_issue_object(item):
            if github.is_pull_request(item):
                return _Skip(position, f"pull request {item.get('html_url')}")
            record = github.issue_to_record(item)
        elif stackexchange.is_question_object(item):
            record = stackexchange.question_to_record(item, item.get("answers") or ())
        elif "answer_id" in item and "url" not in item:
            return ImportFileError(
                position, "answer_id", item["answer_id"], "a Stack Exchange answer, not a question", unit
            )
        else:
            return _generic_entry(item, position, unit, from_text=False)
    except (ValueError, KeyError, TypeError) as exc:
        return ImportFileError(position, None, None, f"not a usable API object: {exc}", unit)
    return record


def _generic_entry(row: Mapping[str, Any], position: int, unit: _Unit, from_text: bool) -> _Entry:
    """A record from a flat row (CSV cells are all text; JSON values are typed)."""
    known: dict[str, Any] = {}
    metadata: dict[str, Any] = {}
    comments_value: Any = None
    for key, value in row.items():
        lowered = key.lower()
        if lowered in _KNOWN_FIELDS:
            known[lowered] = value
        elif lowered == "comments" and not from_text:
            comments_value = value
        else:
            metadata[key] = value

    def fail(field_name: str, value: object, message: str) -> ImportFileError:
        return ImportFileError(position, field_name, value, message, unit)

    url_value = known.get("url")
    if url_value is None or (isinstance(url_value, str) and not url_value.strip()):
        return fail("url", None, "a URL is required")
    if not isinstance(url_value, str):
        return fail("url", url_value, "must be text")
    try:
        url = canonical_url(url_value)
    except ValueError:
        return fail("url", url_value, "not an absolute http(s) URL")
    if len(url) > MAX_URL_LENGTH:
        return fail("url", url_value, f"longer than {MAX_URL_LENGTH} characters")

    texts: dict[str, str] = {}
    for name in ("title", "body", "source", "external_id", "body_format"):
        value = known.get(name)
        if value is None:
            texts[name] = ""
        elif isinstance(value, str):
            texts[name] = value
        else:
            return fail(name, value, "must be text")

    source = texts["source"].strip().lower() or source_for_url(url)
    body_format = texts["body_format"].strip().lower()
    if not body_format:
        body_format = "html" if source in (SOURCE_STACKOVERFLOW, SOURCE_STACKEXCHANGE) else "markdown"
    if body_format not in BODY_FORMATS:
        return fail("body_format", texts["body_format"], f"expected one of {', '.join(BODY_FORMATS)}")

    created_value = known.get("created_at")
    created_at = None
    if created_value not in (None, ""):
        if not isinstance(created_value, str | int | float) or isinstance(created_value, bool):
            return fail("created_at", created_value, "must be an ISO 8601 date or Unix seconds")
        try:
            created_at = parse_timestamp(created_value)
        except (ValueError, OverflowError, OSError):
            return fail("created_at", created_value, "not an ISO 8601 date or time, nor Unix seconds")

    tags_value = known.get("tags")
    if tags_value is None:
        tags: list[str] = []
    elif isinstance(tags_value, str):
        tags = split_tags(tags_value)
    elif isinstance(tags_value, list) and all(isinstance(tag, str) for tag in tags_value):
        tags = list(dict.fromkeys(tag.strip() for tag in tags_value if tag.strip()))
    else:
        return fail("tags", tags_value, "must be a list of strings or ';'-separated text")

    comments: list[CommentRecord] = []
    if comments_value is not None:
        if not isinstance(comments_value, list):
            return fail("comments", comments_value, "must be a list of objects")
        for index, comment_value in enumerate(comments_value, start=1):
            try:
                comments.append(_comment_from_object(comment_value, index))
            except ValueError as exc:
                return fail(f"comments[{index}]", None, str(exc))

    record = ItemRecord(
        url=url,
        source=source,
        external_id=texts["external_id"].strip() or external_id_for_url(url),
        title=texts["title"].strip(),
        body=texts["body"],
        body_format=_body_format(body_format),
        created_at=created_at,
        tags=tags,
        metadata=metadata,
        raw=dict(row),
        comments=comments,
    )
    return record


def _body_format(name: str) -> BodyFormat:
    for known in BODY_FORMATS:
        if name == known:
            return known
    raise ValueError(f"unknown body format {name!r}")


def _comment_from_object(value: object, index: int) -> CommentRecord:
    if not isinstance(value, dict):
        raise ValueError("expected an object")
    body = value.get("body", "")
    author = value.get("author", "")
    if not isinstance(body, str) or not isinstance(author, str):
        raise ValueError("'body' and 'author' must be text")
    body_format = value.get("body_format", "markdown")
    if body_format not in BODY_FORMATS:
        raise ValueError(f"'body_format' must be one of {', '.join(BODY_FORMATS)}")
    created_value = value.get("created_at")
    created_at = None
    if created_value not in (None, ""):
        if not isinstance(created_value, str | int | float):
            raise ValueError("'created_at' must be an ISO 8601 date or Unix seconds")
        created_at = parse_timestamp(created_value)
    score = value.get("score")
    if score is not None and (not isinstance(score, int) or isinstance(score, bool)):
        raise ValueError("'score' must be an integer")
    flags = {name: value.get(name, False) for name in ("is_answer", "is_accepted")}
    if not all(isinstance(flag, bool) for flag in flags.values()):
        raise ValueError("'is_answer' and 'is_accepted' must be true or false")
    return CommentRecord(
        external_id=str(value.get("external_id") or index),
        author=author,
        body=body,
        body_format=_body_format(str(body_format)),
        created_at=created_at,
        is_answer=flags["is_answer"],
        is_accepted=flags["is_accepted"],
        score=score,
    )
