"""Reading a replication package: the zip and its manifest, timestamps and fields, the study, rounds and
items files. Every check adds to a `Problems` list; nothing here writes (see `restore`)."""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.utils import timezone

from apps.accounts.models import ConsolidationRule, Role, User
from apps.annotation.models import RoundKind, SampleMethod
from apps.core.files import JsonReader, NonJsonNumber
from apps.corpus.models import BodyFormat, Relevance
from apps.corpus.records import CommentRecord, ItemRecord

from .build import MANIFEST, PACKAGE_FORMAT, PACKAGE_VERSION

REQUIRED_FILES = (
    "annotations.csv",
    "codebook.json",
    "dataset.json",
    "items.jsonl",
    "sampling.json",
    "study.json",
)
DEFAULT_MAX_BYTES = 8 * 1024**3
MAX_REPORTED = 50
USERNAME_MAX = 150


class PackageError(ValueError):
    """A package that cannot be imported; `problems` lists every problem found. Nothing was written."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        shown = problems[:MAX_REPORTED]
        more = f"\n  ... and {len(problems) - MAX_REPORTED} more" if len(problems) > MAX_REPORTED else ""
        super().__init__(
            f"The package cannot be imported ({len(problems)} problem{'s' if len(problems) != 1 else ''}; "
            "nothing was written):\n  " + "\n  ".join(shown) + more
        )


def max_bytes() -> int:
    return int(getattr(settings, "IMPORT_STUDY_MAX_BYTES", DEFAULT_MAX_BYTES))


# --- Small readers ------------------------------------------------------------------------------------


class Problems:
    """Every problem of a package, as "where: what" lines, raised together as one PackageError."""

    def __init__(self) -> None:
        self.items: list[str] = []

    def add(self, where: str, message: str) -> None:
        self.items.append(f"{where}: {message}")

    def raise_if_any(self) -> None:
        if self.items:
            raise PackageError(self.items)


def read_time(value: Any, where: str, problems: Problems, *, required: bool = True) -> datetime | None:
    """An ISO 8601 timestamp (naive ones read as UTC), or None for ""/null when not `required`."""
    if value in (None, ""):
        if required:
            problems.add(where, "a timestamp is required")
        return None
    if not isinstance(value, str):
        problems.add(where, f"expected an ISO 8601 timestamp, got {value!r}")
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        problems.add(where, f"not an ISO 8601 timestamp: {value!r}")
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def stamp(value: Any) -> datetime:
    """A timestamp the checks already accepted (writing phase); now when missing."""
    return read_time(value, "", Problems(), required=False) or timezone.now()


def new_number(raw: Mapping[str, Any], at: str, numbers: set[int], problems: Problems) -> int | None:
    """The entry's ``number``, a whole number ≥ 1 not seen before in `numbers` (added to it); None, with
    the problem recorded at ``{at}.number``, otherwise."""
    number = raw.get("number")
    if not isinstance(number, int) or isinstance(number, bool) or number < 1 or number in numbers:
        problems.add(f"{at}.number", f"expected a new whole number ≥ 1, got {number!r}")
        return None
    numbers.add(number)
    return number


def expect(data: Any, kind: type | tuple[type, ...], where: str, problems: Problems) -> bool:
    if isinstance(data, bool) and kind is int:
        problems.add(where, f"expected a whole number, got {data!r}")
        return False
    if not isinstance(data, kind):
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        shown = repr(data) if not isinstance(data, dict | list) else type(data).__name__
        problems.add(where, f"expected {names}, got {shown[:80]}")
        return False
    return True


def text_field(
    obj: Mapping[str, Any], name: str, where: str, problems: Problems, *, empty: bool = True
) -> str:
    value = obj.get(name, "")
    if value is None:
        value = ""
    if not isinstance(value, str):
        problems.add(f"{where}.{name}", f"expected text, got {value!r}"[:200])
        return ""
    if not empty and not value:
        problems.add(f"{where}.{name}", "must not be empty")
    return str(value)


def username_field(
    value: Any, where: str, problems: Problems, users: set[str], *, required: bool = False
) -> str:
    if value in (None, ""):
        if required:
            problems.add(where, "a username is required")
        return ""
    if not isinstance(value, str) or len(value) > USERNAME_MAX:
        problems.add(where, f"not a username: {value!r}"[:200])
        return ""
    try:
        User.username_validator(value)
    except ValidationError:
        problems.add(where, f"not a valid username: {value!r}")
        return ""
    users.add(value)
    return value


# --- The zip and its manifest -------------------------------------------------------------------------


def open_package(path: Path) -> zipfile.ZipFile:
    if not path.is_file():
        raise PackageError([f"{path}: no such file"])
    try:
        return zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise PackageError([f"{path.name}: not a zip file ({exc})"]) from None


def verify(archive: zipfile.ZipFile) -> dict[str, Any]:
    """Check the manifest and every file's checksum; return the manifest."""
    problems = Problems()
    names = [info.filename for info in archive.infolist()]
    total = sum(info.file_size for info in archive.infolist())
    if total > max_bytes():
        raise PackageError(
            [f"the package unpacks to {total:,} bytes, more than the limit of {max_bytes():,}"]
        )
    if MANIFEST not in names:
        raise PackageError([f"{MANIFEST}: missing: this is not a Taxonomist replication package"])
    try:
        manifest = json.loads(archive.read(MANIFEST).decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise PackageError([f"{MANIFEST}: not valid JSON ({exc})"]) from None
    if not isinstance(manifest, dict) or manifest.get("format") != PACKAGE_FORMAT:
        raise PackageError([f"{MANIFEST}: not a Taxonomist replication package (format {PACKAGE_FORMAT!r})"])
    if manifest.get("format_version") != PACKAGE_VERSION:
        raise PackageError(
            [f"{MANIFEST}: package format version {manifest.get('format_version')!r} is not supported "
             f"(this Taxonomist reads version {PACKAGE_VERSION})"]
        )  # fmt: skip
    files = manifest.get("files")
    if not isinstance(files, dict):
        raise PackageError([f"{MANIFEST}: 'files' must map each file name to its sha256 and bytes"])
    for name in REQUIRED_FILES:
        if name not in files:
            problems.add(MANIFEST, f"does not list {name}, which the import needs")
    for name in sorted(set(names) - set(files) - {MANIFEST}):
        problems.add(name, "is in the zip but not in the manifest")
    if len(names) != len(set(names)):
        problems.add("zip", "holds the same file name twice")
    for name, entry in sorted(files.items()):
        expected = entry.get("sha256") if isinstance(entry, dict) else None
        if not isinstance(expected, str):
            problems.add(MANIFEST, f"no sha256 for {name}")
            continue
        if name not in names:
            problems.add(name, "listed in the manifest but missing from the zip")
            continue
        digest = hashlib.sha256()
        with archive.open(name) as handle:
            while block := handle.read(1 << 20):
                digest.update(block)
        if digest.hexdigest() != expected:
            problems.add(
                name, f"checksum mismatch: the manifest says {expected}, the file has {digest.hexdigest()}"
            )
    problems.raise_if_any()
    return manifest


def json_file(archive: zipfile.ZipFile, name: str, problems: Problems) -> Any:
    try:
        return json.loads(archive.read(name).decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        problems.add(name, f"not valid JSON ({exc})")
        return None


def text_lines(archive: zipfile.ZipFile, name: str) -> Iterator[str]:
    with archive.open(name) as raw:
        yield from io.TextIOWrapper(raw, encoding="utf-8", newline="")


def check_study(data: Any, problems: Problems, users: set[str]) -> dict[str, str]:
    """The members (username → role); problems for anything else wrong in study.json."""
    where = "study.json"
    if not expect(data, dict, where, problems):
        return {}
    name = text_field(data, "name", where, problems, empty=False)
    if len(name) > 200:
        problems.add(f"{where}.name", "longer than 200 characters")
    text_field(data, "description", where, problems)
    overlap = data.get("overlap")
    if not isinstance(overlap, int) or isinstance(overlap, bool) or overlap < 1:
        problems.add(f"{where}.overlap", f"expected a whole number ≥ 1, got {overlap!r}")
    if data.get("consolidation_rule") not in ConsolidationRule.values:
        problems.add(f"{where}.consolidation_rule", f"expected one of {', '.join(ConsolidationRule.values)}")
    for flag in ("show_annotator_names", "require_rationale_on_override", "reveal_labels_after_decision"):
        if not isinstance(data.get(flag), bool):
            problems.add(f"{where}.{flag}", "expected true or false")
    members: dict[str, str] = {}
    for position, raw in enumerate(data.get("members") or []):
        at = f"{where}.members[{position}]"
        if not expect(raw, dict, at, problems):
            continue
        username = username_field(raw.get("username"), f"{at}.username", problems, users, required=True)
        if raw.get("role") not in Role.values:
            problems.add(f"{at}.role", f"expected one of {', '.join(Role.values)}, got {raw.get('role')!r}")
        elif username:
            members[username] = raw["role"]
    return members


def check_rounds(
    data: Any, urls: Mapping[str, int], problems: Problems, users: set[str]
) -> list[dict[str, Any]]:
    where = "sampling.json"
    if not expect(data, dict, where, problems) or not expect(
        data.get("rounds"), list, f"{where}.rounds", problems
    ):
        return []
    numbers: set[int] = set()
    rounds = []
    for position, raw in enumerate(data["rounds"]):
        at = f"{where}.rounds[{position}]"
        if not expect(raw, dict, at, problems):
            continue
        number = new_number(raw, at, numbers, problems)
        if number is None:
            continue
        if raw.get("method") not in SampleMethod.values:
            problems.add(
                f"{at}.method", f"expected one of {', '.join(SampleMethod.values)}, got {raw.get('method')!r}"
            )
        for name in ("seed", "requested_size"):
            value = raw.get(name)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
                problems.add(f"{at}.{name}", f"expected a whole number or null, got {value!r}")
        _check_kind(raw, at, problems)
        if not isinstance(raw.get("params", {}), dict):
            problems.add(f"{at}.params", "expected an object")
        text_field(raw, "name", at, problems)
        text_field(raw, "stratify_field", at, problems)
        read_time(raw.get("created_at"), f"{at}.created_at", problems)
        username_field(raw.get("created_by"), f"{at}.created_by", problems, users)
        items = raw.get("items")
        if not isinstance(items, list):
            problems.add(f"{at}.items", "expected a list of item URLs")
            continue
        seen: set[str] = set()
        for url in items:
            if url not in urls:
                problems.add(f"{at}.items", f"{url!r} is not an item of items.jsonl"[:300])
            elif url in seen:
                problems.add(f"{at}.items", f"{url!r} appears twice"[:300])
            seen.add(url)
        rounds.append(raw)
    return rounds


def _check_kind(raw: dict[str, Any], at: str, problems: Problems) -> None:
    """A round's kind (packages before training rounds have none: reliability) and pass mark (a training
    round's, a whole percentage from 1 to 100, or null)."""
    kind = raw.get("kind", RoundKind.RELIABILITY)
    if kind not in RoundKind.values:
        problems.add(f"{at}.kind", f"expected one of {', '.join(RoundKind.values)}, got {kind!r}"[:300])
    mark = raw.get("pass_mark")
    if mark is None:
        return
    if not isinstance(mark, int) or isinstance(mark, bool) or not 1 <= mark <= 100:
        problems.add(
            f"{at}.pass_mark", f"expected a whole percentage from 1 to 100 or null, got {mark!r}"[:300]
        )
    elif kind != RoundKind.TRAINING:
        problems.add(
            f"{at}.pass_mark", f"only a training round has a pass mark; this round is {kind!r}"[:300]
        )


def optional_entries(
    data: Any, key: str, where: str, problems: Problems
) -> Iterator[tuple[str, dict[str, Any]]]:
    """The objects of `data`'s optional list `key` (absent: none), each with its place in the file
    (``{where}.{key}[n]``); a list or an entry of the wrong type is a problem, and is skipped."""
    value = data.get(key, []) if isinstance(data, dict) else []
    if not expect(value, list, f"{where}.{key}", problems):
        return
    for position, raw in enumerate(value):
        at = f"{where}.{key}[{position}]"
        if expect(raw, dict, at, problems):
            yield at, raw


def check_gold_items(
    data: Any, urls: Mapping[str, int], decided: set[str], problems: Problems, users: set[str]
) -> list[dict[str, Any]]:
    """sampling.json's `gold_items` (absent in packages before gold checks): each a decided item of the
    package, once, with who marked it (a username or null) and when."""
    seen: set[str] = set()
    gold = []
    for at, raw in optional_entries(data, "gold_items", "sampling.json", problems):
        url = raw.get("url")
        if not isinstance(url, str) or url not in urls:
            problems.add(f"{at}.url", f"{url!r} is not an item of items.jsonl"[:300])
            continue
        if url in seen:
            problems.add(f"{at}.url", f"{url!r} appears twice"[:300])
            continue
        if url not in decided:
            problems.add(
                f"{at}.url", f"{url!r} has no decision in dataset.json: a gold check is a decided item"[:300]
            )
        seen.add(url)
        read_time(raw.get("marked_at"), f"{at}.marked_at", problems)
        username_field(raw.get("marked_by"), f"{at}.marked_by", problems, users)
        gold.append(raw)
    return gold


def json_object(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, dict) else {}


def item_record(raw: dict[str, Any], where: str, problems: Problems, users: set[str]) -> ItemRecord | None:
    before = len(problems.items)
    url = text_field(raw, "url", where, problems, empty=False)
    if len(url) > 500:
        problems.add(f"{where}.url", "longer than 500 characters")
    if len(str(raw.get("source") or "")) > 32:
        problems.add(f"{where}.source", "longer than 32 characters")
    body_format = raw.get("body_format")
    if body_format not in BodyFormat.values:
        problems.add(
            f"{where}.body_format", f"expected one of {', '.join(BodyFormat.values)}, got {body_format!r}"
        )
    if raw.get("relevance") not in Relevance.values:
        problems.add(f"{where}.relevance", f"expected one of {', '.join(Relevance.values)}")
    tags = raw.get("tags")
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        problems.add(f"{where}.tags", "expected a list of texts")
    for name in ("metadata", "raw"):
        if not isinstance(raw.get(name), dict):
            problems.add(f"{where}.{name}", "expected an object")
    created = read_time(raw.get("created_at"), f"{where}.created_at", problems, required=False)
    username_field(raw.get("screened_by"), f"{where}.screened_by", problems, users)
    comments = []
    for position, comment in enumerate(raw.get("comments") or []):
        at = f"{where}.comments[{position}]"
        if not expect(comment, dict, at, problems):
            continue
        if comment.get("body_format") not in BodyFormat.values:
            problems.add(f"{at}.body_format", f"expected one of {', '.join(BodyFormat.values)}")
        score = comment.get("score")
        if score is not None and (not isinstance(score, int) or isinstance(score, bool)):
            problems.add(f"{at}.score", f"expected a whole number or null, got {score!r}")
        comments.append(
            CommentRecord(
                external_id=text_field(comment, "external_id", at, problems),
                author=text_field(comment, "author", at, problems),
                body=text_field(comment, "body", at, problems),
                body_format=comment.get("body_format") or "markdown",
                created_at=read_time(comment.get("created_at"), f"{at}.created_at", problems, required=False),
                is_answer=bool(comment.get("is_answer")),
                is_accepted=bool(comment.get("is_accepted")),
                score=score,
            )
        )
    record = ItemRecord(
        url=url,
        source=text_field(raw, "source", where, problems, empty=False),
        external_id=text_field(raw, "external_id", where, problems),
        title=text_field(raw, "title", where, problems),
        body=text_field(raw, "body", where, problems),
        body_format=body_format if body_format in BodyFormat.values else "markdown",
        created_at=created,
        tags=list(tags) if isinstance(tags, list) else [],
        metadata=json_object(raw.get("metadata")),
        raw=json_object(raw.get("raw")),
        comments=comments,
    )
    text_field(raw, "relevance_reason", where, problems)
    return record if len(problems.items) == before else None


def read_items(archive: zipfile.ZipFile, problems: Problems, users: set[str]) -> dict[str, int]:
    """Check items.jsonl; return URL → line number."""
    urls: dict[str, int] = {}
    reader = JsonReader()
    for number, line in enumerate(text_lines(archive, "items.jsonl"), start=1):
        if not line.strip():
            continue
        where = f"items.jsonl line {number}"
        try:
            raw = reader.loads(line)
        except NonJsonNumber as exc:  # a hand-edited package: PostgreSQL would refuse it at the write
            problems.add(f"{where}.{exc.path}" if exc.path else where, str(exc))
            continue
        except ValueError as exc:
            problems.add(where, f"not valid JSON ({exc})")
            continue
        if not expect(raw, dict, where, problems):
            continue
        record = item_record(raw, where, problems, users)
        if record is None:
            continue
        if record.url in urls:
            problems.add(f"{where}.url", f"{record.url!r} is also on line {urls[record.url]}")
        urls[record.url] = number
    return urls


def item_records(archive: zipfile.ZipFile) -> Iterator[tuple[ItemRecord, tuple[str, str, str]]]:
    """The checked items again, as records to write, each with its screening (relevance, reason,
    screener's username or "")."""
    ignored = Problems()
    reader = JsonReader()  # as `read_items` read them: half a surrogate pair as U+FFFD
    for line in text_lines(archive, "items.jsonl"):
        if line.strip():
            raw = reader.loads(line)
            record = item_record(raw, "", ignored, set())
            assert record is not None  # checked by read_items
            yield record, (raw["relevance"], raw.get("relevance_reason") or "", raw.get("screened_by") or "")
