"""Reading the files people hand to Taxonomist: one way to open them, one way to read CSV and JSON. Pure: no
Django.

Every command and parser that reads a user's file goes through here (items, labels, ratings, codebooks,
URL lists, dumps, packages), so that the same mistakes get the same one-line answer:

* a path that is missing, a directory or not a regular file: :class:`FileReadError` saying so;
* text that is not UTF-8: the encoding found, when it can be told (a UTF-16 or UTF-32 byte-order mark,
  NUL bytes as UTF-16 text has them), and the byte offset of the first byte that is not UTF-8 (a
  latin-1 or Windows-1252 file, typically). A UTF-8 byte-order mark is accepted and dropped.

:func:`csv_records` reads CSV so that a stray quote never swallows rows. Python's ``csv`` module lets a
quoted field run across line ends (a body with newlines is legitimate), so one unbalanced ``"`` takes
every following line into that field. The rule that tells the two apart:

* a quoted field still open at the end of the file is refused, naming the line where its quote opened;
* a record that runs across line ends and ends with a different number of fields than the header is
  refused the same way (a legitimate multi-line field leaves its record as wide as the header; a stray
  quote that closes on a later line by chance almost never does);
* a record that runs across line ends and is as wide as the header is refused the same way when every
  non-blank line it takes in after its first, read on its own, splits into at least as many fields as a
  row of the file has: those lines are rows swallowed between two stray quotes (``u2,ok,"He said hi`` …
  ``u4,ok4,she said bye"``, the last column's field closing by chance at a line end). Text that really
  runs across lines (an issue body with prose, code and commas, a memo) has lines that are not rows: a
  heading, a sentence without the file's delimiters, a code fence, a blank-separated paragraph with fewer
  commas. A row has the header's number of fields unless the caller says fewer will do (``row_width``:
  labels rows may leave out trailing optional columns);
* anything else the ``csv`` module's strict mode refuses (text after a closing quote) is refused with
  the line of its record.

A record's first physical line is the line where any multi-line field in it opened: the fields before
that field hold no line end.

:class:`JsonReader` reads JSON and JSON lines as ``json`` does, except what no database column can hold:
NaN and Infinity (which Python's ``json`` writes for a float's missing value) are refused, naming their
path (:class:`NonJsonNumber`), and half of a UTF-16 surrogate pair (a text cut mid-emoji) becomes U+FFFD.
"""

from __future__ import annotations

import codecs
import csv
import json
import os
import re
import stat
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO

__all__ = [
    "CsvFormatError",
    "FileReadError",
    "JsonReader",
    "NonJsonNumber",
    "check_utf8",
    "csv_records",
    "decode_utf8",
    "lone_surrogate",
    "non_json_number",
    "open_text",
    "read_text",
    "regular_file",
]

# Bodies of long issues exceed csv's default 128 KiB field limit.
CSV_FIELD_LIMIT = 64 * 1024 * 1024
_SNIFF = 4096
_SCAN_CHUNK = 1 << 20
_BOMS = (
    (codecs.BOM_UTF32_LE, "UTF-32 (little-endian)"),
    (codecs.BOM_UTF32_BE, "UTF-32 (big-endian)"),
    (codecs.BOM_UTF16_LE, "UTF-16 (little-endian)"),
    (codecs.BOM_UTF16_BE, "UTF-16 (big-endian)"),
)


class FileReadError(ValueError):
    """A file that cannot be read as asked. `message` is one line that reads after the file's name ("is a
    directory, not a file"), `str()` is ``PATH: message``; `offset` is the byte offset of the first
    undecodable byte, when that is the problem."""

    def __init__(self, path: str | os.PathLike[str], message: str, *, offset: int | None = None) -> None:
        self.path = os.fspath(path)
        self.message = message
        self.offset = offset
        super().__init__(f"{self.path}: {message}")


class CsvFormatError(ValueError):
    """CSV that cannot be read safely; `line` is the physical line (1-based) where the bad record, or the
    quoted field that never closes, starts."""

    def __init__(self, line: int, message: str) -> None:
        self.line = line
        self.message = message
        super().__init__(f"line {line}: {message}")


def regular_file(path: str | os.PathLike[str]) -> Path:
    """`path` as a Path when it names an existing regular file (symlinks followed); else FileReadError."""
    target = Path(path).expanduser()
    try:
        mode = target.stat().st_mode
    except FileNotFoundError:
        raise FileReadError(path, "no such file") from None
    except PermissionError:
        raise FileReadError(path, "cannot be read (permission denied)") from None
    except OSError as exc:
        raise FileReadError(path, f"cannot be read ({exc.strerror})") from None
    if stat.S_ISDIR(mode):
        raise FileReadError(path, "is a directory, not a file")
    if not stat.S_ISREG(mode):
        raise FileReadError(path, "is not a regular file")
    return target


def read_text(path: str | os.PathLike[str]) -> str:
    """The whole file as text: UTF-8, a leading byte-order mark dropped. Raises FileReadError."""
    target = regular_file(path)
    try:
        data = target.read_bytes()
    except OSError as exc:
        raise FileReadError(path, f"cannot be read ({exc.strerror})") from None
    return decode_utf8(data, path)


def decode_utf8(data: bytes, path: str | os.PathLike[str]) -> str:
    """`data` decoded as UTF-8 (a UTF-8 byte-order mark dropped), or FileReadError naming the encoding
    found and the byte offset."""
    _refuse_other_encodings(data[:_SNIFF], path)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise _not_utf8(path, data[exc.start : exc.start + 1], exc.start) from None


@contextmanager
def open_text(path: str | os.PathLike[str]) -> Iterator[TextIO]:
    """Open a file as UTF-8 text for streaming (``newline=""``, as csv wants; a byte-order mark dropped).

    The kind of file and its first bytes are checked on opening; a byte that is not UTF-8 further on
    surfaces, while the caller reads, as FileReadError with its offset in the file (found by scanning the
    file again, only then)."""
    target = _sniffed(path)
    try:
        handle = target.open(encoding="utf-8-sig", newline="")
    except OSError as exc:
        raise FileReadError(path, f"cannot be read ({exc.strerror})") from None
    with handle:
        try:
            yield handle
        except UnicodeDecodeError:
            raise _located_decode_error(target, path) from None


def _sniffed(path: str | os.PathLike[str]) -> Path:
    """`path` as a Path, once it is a regular file whose first bytes show no other encoding than UTF-8."""
    target = regular_file(path)
    try:
        with target.open("rb") as raw:
            head = raw.read(_SNIFF)
    except OSError as exc:
        raise FileReadError(path, f"cannot be read ({exc.strerror})") from None
    _refuse_other_encodings(head, path)
    return target


def check_utf8(path: str | os.PathLike[str], *, limit: int | None = None) -> Path:
    """Check that `path` is a regular file of UTF-8 text (its first `limit` bytes, or all of it), in
    bounded memory; return it as a Path. Raises FileReadError naming the encoding found and the offset."""
    target = _sniffed(path)
    problem = _decode_problem(target, path, limit)
    if problem is not None:
        raise problem
    return target


def _refuse_other_encodings(head: bytes, path: str | os.PathLike[str]) -> None:
    if head.startswith(codecs.BOM_UTF8):
        return
    for bom, name in _BOMS:
        if head.startswith(bom):
            raise FileReadError(
                path, f"is {name} text (byte-order mark at byte 0), not UTF-8; save it as UTF-8", offset=0
            )
    nul = head.find(b"\x00")
    if nul != -1:
        guess = "UTF-16 text" if nul <= 1 or head.count(b"\x00") * 4 >= len(head) else "binary data"
        raise FileReadError(
            path, f"looks like {guess} (a NUL byte at byte {nul}), not UTF-8; save it as UTF-8", offset=nul
        )


def _not_utf8(path: str | os.PathLike[str], byte: bytes, offset: int) -> FileReadError:
    shown = f"0x{byte[0]:02x}" if byte else "a truncated character"
    hint = ""
    if byte and byte[0] >= 0x80:
        hint = f" (latin-1 or Windows-1252 text? there {shown} is {byte.decode('cp1252', 'replace')!r})"
    return FileReadError(
        path, f"is not UTF-8: byte {shown} at byte offset {offset}{hint}; save it as UTF-8", offset=offset
    )


def _located_decode_error(target: Path, path: str | os.PathLike[str]) -> FileReadError:
    return _decode_problem(target, path, None) or FileReadError(path, "is not UTF-8; save it as UTF-8")


def _decode_problem(target: Path, path: str | os.PathLike[str], limit: int | None) -> FileReadError | None:
    """The first byte of the file (within `limit` bytes) that is not UTF-8, as an error; None if none."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    offset = 0
    try:
        with target.open("rb") as raw:
            while (limit is None or offset < limit) and (chunk := raw.read(_SCAN_CHUNK)):
                held = len(decoder.getstate()[0])  # bytes of a character begun in the previous chunk
                try:
                    decoder.decode(chunk)
                except UnicodeDecodeError as exc:
                    # exc.start counts from the held bytes, which come before this chunk
                    start = offset - held + exc.start
                    data = exc.object[exc.start : exc.start + 1]
                    return _not_utf8(path, bytes(data), max(0, start))
                offset += len(chunk)
            if limit is None or offset < limit:
                try:
                    decoder.decode(b"", final=True)
                except UnicodeDecodeError:
                    start = offset - len(decoder.getstate()[0])
                    return FileReadError(
                        path, f"is not UTF-8: it ends inside a character begun at byte {start}", offset=start
                    )
    except OSError as exc:
        return FileReadError(path, f"cannot be read ({exc.strerror})")
    return None


class _Taken:
    """The lines a csv reader takes from `lines`, kept until the caller clears them: the physical lines
    of the record just read."""

    def __init__(self, lines: Iterable[str]) -> None:
        self._lines = iter(lines)
        self.taken: list[str] = []

    def __iter__(self) -> _Taken:
        return self

    def __next__(self) -> str:
        line = next(self._lines)
        self.taken.append(line)
        return line


def _reads_as_a_row(line: str, fields: int, delimiter: str) -> bool:
    """Whether one physical line, read on its own as CSV, has at least `fields` fields."""
    try:
        row = next(csv.reader([line.rstrip("\r\n")], delimiter=delimiter, strict=False), [])
    except csv.Error:
        return False
    return len(row) >= fields


def _swallowed_rows(taken: Sequence[str], fields: int, delimiter: str) -> bool:
    """Whether the lines a multi-line record takes in after its first are all rows of their own."""
    lines = [line for line in taken[1:] if line.strip()]
    return bool(lines) and all(_reads_as_a_row(line, fields, delimiter) for line in lines)


def _lines_named(first: int, last: int) -> str:
    return f"line {first}" if first == last else f"lines {first}-{last}"


def csv_records(
    lines: Iterable[str],
    *,
    delimiter: str = ",",
    row_width: Callable[[Sequence[str]], int] | None = None,
) -> Iterator[tuple[int, list[str]]]:
    """The records of CSV text (`lines`: an open text file, or ``io.StringIO``), each with the physical
    line it starts on; the first record is the header. Blank records are yielded too (the callers skip
    them). Raises CsvFormatError for a stray quote (module docstring) or other malformed CSV.

    `row_width`, given the header, is the fewest fields a row of the file may have (default: as many as
    the header); a multi-line field whose every other line has that many is refused as swallowed rows.
    """
    csv.field_size_limit(max(csv.field_size_limit(), min(sys.maxsize, CSV_FIELD_LIMIT)))
    source = _Taken(lines)
    reader = csv.reader(source, delimiter=delimiter, strict=True)
    width: int | None = None
    fields = 0
    start = 1
    while True:
        source.taken.clear()
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            if "unexpected end of data" in str(exc) or "newline inside string" in str(exc):
                raise CsvFormatError(
                    start,
                    "a quoted field opened on this line is still open at the end of the file "
                    "(a stray or unbalanced '\"'?); every following line would be read into it",
                ) from None
            if "expected after" in str(exc):
                raise CsvFormatError(
                    start,
                    "a quoted field of the record starting on this line has text after its closing quote "
                    '(a \'"\' inside a quoted field is written twice: "")',
                ) from None
            raise CsvFormatError(start, f"malformed CSV ({exc})") from None
        end = reader.line_num
        if width is None:
            width = len(row)
            fields = max(1, row_width(row) if row_width is not None else width)
        elif end > start and len(row) != width:
            raise CsvFormatError(
                start,
                f"a quoted field opened on this line runs to line {end} and leaves the record with "
                f"{len(row)} fields where the header has {width} (a stray or unbalanced '\"'?)",
            )
        elif end > start and _swallowed_rows(source.taken, fields, delimiter):
            raise CsvFormatError(
                start,
                f"a quoted field opened on this line runs to line {end} and takes in "
                f"{_lines_named(start + 1, end)}, which read as rows of their own ({fields} or more fields "
                "each): rows swallowed between two stray or unbalanced '\"'? "
                '(a \'"\' inside a quoted field is written twice: "")',
            )
        yield start, row
        start = end + 1


# --- JSON ----------------------------------------------------------------------------------------------


class NonJsonNumber(ValueError):
    """A JSON text holds NaN, Infinity or -Infinity. Python's ``json`` reads them, and writes them for
    ``float("nan")`` and ``float("inf")`` (a missing value in a data frame, typically), but they are not
    JSON: PostgreSQL refuses them in a JSON column, and so would every reader of an export."""

    def __init__(self, path: str, constant: str) -> None:
        self.path = path  # where in the value: "" for the value itself, else "score", "metadata.sizes[2]"
        self.constant = constant
        super().__init__(f"{constant} is not valid JSON: write null for a missing number")


class _Constant:
    """Where a NaN or Infinity was read (the decoder's stand-in for it, found again by `non_json_number`)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name


# Half of a UTF-16 surrogate pair, written as a JSON escape (a tool that cut a text by UTF-16 units, as
# JavaScript and Java count them, in the middle of an emoji): Python decodes it to a lone surrogate, which
# no UTF-8 text, and so no database column, can hold. A whole pair decodes to one character.
_SURROGATE = re.compile("[\ud800-\udfff]")


class JsonReader:
    """Decodes JSON texts as ``json.loads`` does, except NaN and Infinity (:class:`NonJsonNumber`) and
    lone surrogates (each becomes U+FFFD, as a browser shows it). One per file: a text without them costs
    what ``json.loads`` costs."""

    def __init__(self) -> None:
        self.constants_seen = False  # since the last `loads`, or since this reader was made
        self._decoder = json.JSONDecoder(parse_constant=self._constant)

    def _constant(self, name: str) -> _Constant:
        self.constants_seen = True
        return _Constant(name)

    def decode(self, text: str) -> Any:
        """The value of `text`, any NaN or Infinity in it left as a stand-in (`constants_seen` says so; find
        each with :func:`non_json_number`)."""
        value = self._decoder.decode(text)
        if "\\ud" in text or "\\uD" in text:  # a surrogate's escape: a pair, or half of one
            value = _mend_surrogates(value)
        return value

    def loads(self, text: str) -> Any:
        """The value of `text`; :class:`NonJsonNumber` for the first NaN or Infinity in it."""
        value = self.decode(text)
        if self.constants_seen:
            self.constants_seen = False
            problem = non_json_number(value)
            if problem is not None:
                raise problem
        return value


def _mend_surrogates(value: Any) -> Any:
    """`value` with every lone surrogate in its texts (keys included) replaced by U+FFFD."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value) if _SURROGATE.search(value) else value
    if isinstance(value, dict):
        return {_mend_surrogates(key): _mend_surrogates(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_mend_surrogates(item) for item in value]
    return value


def non_json_number(value: Any) -> NonJsonNumber | None:
    """The first NaN or Infinity (as :meth:`JsonReader.decode` leaves them) in `value`, with its path."""
    hit = _first(value, lambda v: v.name if isinstance(v, _Constant) else None)
    return NonJsonNumber(*hit) if hit is not None else None


def lone_surrogate(value: Any) -> tuple[str, str] | None:
    """The path and character of the first lone surrogate in the texts of parsed JSON (keys included),
    or None. For a request body, which is refused for it (a file's reader mends it instead)."""

    def surrogate(v: Any) -> str | None:
        found = _SURROGATE.search(v) if isinstance(v, str) else None
        return found.group() if found else None

    return _first(value, surrogate)


def _first(value: Any, match: Callable[[Any], str | None], path: str = "") -> tuple[str, str] | None:
    """The path (``a.b[2]``) and `match`'s answer for the first value of parsed JSON, keys included, that
    `match` answers for, or None."""
    answer = match(value)
    if answer is not None:
        return path, answer
    if isinstance(value, dict):
        for key, item in value.items():
            where = f"{path}.{key}" if path else str(key)
            hit = _first(key, match, where) or _first(item, match, where)
            if hit is not None:
                return hit
    elif isinstance(value, list):
        for index, item in enumerate(value):
            hit = _first(item, match, f"{path}[{index}]")
            if hit is not None:
                return hit
    return None
