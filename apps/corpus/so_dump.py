"""Stream a Stack Exchange data dump's ``Posts.xml`` into question records with their answers.

Pure module (no Django). ``Posts.xml`` is one ``<posts>`` element holding a ``<row .../>`` per post,
ordered by ``Id``: questions (``PostTypeId="1"``) and answers (``PostTypeId="2"``, joined to their
question by ``ParentId``) interleaved, an answer always after its question but possibly years (and
gigabytes) later. The Stack Overflow file is about 100 GB, so it is never held in memory.

How the join stays in bounded memory (one pass over the XML, then a pass over a small spool):

1. ``xml.etree.ElementTree.iterparse`` reads one row at a time; each row is cleared from the tree
   as soon as it is handled, so the parser holds one element, not the document.
2. A question is screened on its own (title, body, tags, ``AcceptedAnswerId``) with the
   :class:`ScreeningRules`; a rejected one only increments its rule's count. A selected one is
   written to a temporary SQLite file and its id kept in a set.
3. An answer whose ``ParentId`` is in that set is written to the SQLite file too; others are
   dropped on the spot.
4. After the last row, the selected questions are read back in ``Id`` order with their answers
   (an indexed lookup each) and yielded as :class:`ItemRecord` objects; the file is then deleted.

Memory is one XML row plus the set of selected question ids (a few MB for 100,000 questions),
whatever the size of the dump; disk is the selected posts only. Nothing is yielded before the whole
file has been read, so a malformed dump raises :class:`DumpError` before any record exists and an
import that writes while iterating writes nothing for it. A one-pass design that keeps questions in
memory until their last answer arrives was rejected: old questions keep receiving answers, so that
memory grows with the selection and is not bounded.

Both ``Tags`` spellings are understood: ``<python><pandas>`` (dumps up to 2023) and
``|python|pandas|`` (2024 on).
"""

from __future__ import annotations

import json
import sqlite3
import tempfile
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from apps.corpus.records import (
    SOURCE_STACKEXCHANGE,
    SOURCE_STACKOVERFLOW,
    CommentRecord,
    ItemRecord,
    parse_timestamp,
    site_name,
    split_tags,
)
from apps.corpus.screening import ScreeningRules

QUESTION = "1"
ANSWER = "2"
_BATCH_ROWS = 1000
_BATCH_BYTES = 256 * 1024

ProgressCallback = Callable[[int, int], None]


class DumpError(ValueError):
    """The dump cannot be read: malformed XML (with line and column) or an unusable post (with its Id)."""


@dataclass(slots=True)
class DumpStats:
    """Counts of one read: every post seen, questions kept, and rejections per screening rule."""

    posts: int = 0
    questions: int = 0
    answers: int = 0
    selected: int = 0
    answers_joined: int = 0
    rejected: Counter[str] = field(default_factory=Counter)


def _int(attrs: Mapping[str, str], name: str) -> int | None:
    value = attrs.get(name)
    if value is None or value == "":
        return None
    try:
        return int(value)
    except ValueError:
        raise DumpError(f"post Id={attrs.get('Id')!r}: {name}={value!r} is not an integer") from None


def _time(attrs: Mapping[str, str], name: str) -> datetime | None:
    value = attrs.get(name)
    if not value:
        return None
    try:
        return parse_timestamp(value)
    except ValueError:
        raise DumpError(f"post Id={attrs.get('Id')!r}: {name}={value!r} is not a date") from None


def _author(attrs: Mapping[str, str]) -> str:
    # The dump names only deleted users (OwnerDisplayName); others are ids into Users.xml.
    if attrs.get("OwnerDisplayName"):
        return attrs["OwnerDisplayName"]
    return f"user:{attrs['OwnerUserId']}" if attrs.get("OwnerUserId") else ""


def answer_to_comment(answer: Mapping[str, str], accepted_answer_id: int | None) -> CommentRecord:
    """An answer row as a :class:`CommentRecord` (HTML body, ``is_answer=True``)."""
    answer_id = _int(answer, "Id")
    return CommentRecord(
        external_id=str(answer_id),
        author=_author(answer),
        body=answer.get("Body", ""),
        body_format="html",
        created_at=_time(answer, "CreationDate"),
        is_answer=True,
        is_accepted=answer_id is not None and answer_id == accepted_answer_id,
        score=_int(answer, "Score"),
    )


def post_to_record(
    question: Mapping[str, str],
    answers: Sequence[Mapping[str, str]] = (),
    site_host: str = "stackoverflow.com",
) -> ItemRecord:
    """A question row (attributes of ``<row>``) and its answer rows as an :class:`ItemRecord`.

    Answers come accepted first, then by score, then by id. Raises :class:`DumpError` naming the
    post when an attribute is unusable.
    """
    question_id = _int(question, "Id")
    if question_id is None:
        raise DumpError("a post has no Id")
    accepted = _int(question, "AcceptedAnswerId")
    name = site_name(site_host)
    comments = [answer_to_comment(answer, accepted) for answer in answers]
    comments.sort(key=lambda c: (not c.is_accepted, -(c.score or 0), int(c.external_id)))
    metadata: dict[str, Any] = {
        "site": name,
        "question_id": question_id,
        "score": _int(question, "Score"),
        "view_count": _int(question, "ViewCount"),
        "answer_count": _int(question, "AnswerCount"),
        "accepted_answer_id": accepted,
        "author": _author(question),
        "closed_date": question.get("ClosedDate"),
        "last_activity_date": question.get("LastActivityDate"),
        "content_license": question.get("ContentLicense"),
    }
    is_stackoverflow = site_host == "stackoverflow.com"
    return ItemRecord(
        url=f"https://{site_host}/questions/{question_id}",
        source=SOURCE_STACKOVERFLOW if is_stackoverflow else SOURCE_STACKEXCHANGE,
        external_id=str(question_id) if is_stackoverflow else f"{name}:{question_id}",
        title=question.get("Title", "").strip(),
        body=question.get("Body", ""),
        body_format="html",
        created_at=_time(question, "CreationDate"),
        tags=split_tags(question.get("Tags", "")),
        metadata=metadata,
        raw={"question": dict(question), "answers": [dict(answer) for answer in answers]},
        comments=comments,
    )


class PostsDumpReader:
    """Iterating yields the selected questions of a ``Posts.xml`` with their answers, by ``Id``.

    ``rules=None`` selects every question. ``on_progress(bytes_read, total_bytes)`` is called every
    ``progress_every`` rows during the XML pass. ``stats`` is filled in as the pass runs. The spool
    goes to ``spool_dir`` (default: the system temporary directory).
    """

    def __init__(
        self,
        path: str | Path,
        rules: ScreeningRules | None = None,
        *,
        site_host: str = "stackoverflow.com",
        on_progress: ProgressCallback | None = None,
        progress_every: int = 10_000,
        spool_dir: str | Path | None = None,
    ) -> None:
        self.path = Path(path)
        self.rules = rules
        self.site_host = site_host.lower()
        self.on_progress = on_progress
        self.progress_every = progress_every
        self.spool_dir = spool_dir
        self.stats = DumpStats()

    def __iter__(self) -> Iterator[ItemRecord]:
        self.stats = DumpStats()
        with tempfile.TemporaryDirectory(prefix="posts-spool-", dir=self.spool_dir) as directory:
            spool = sqlite3.connect(Path(directory) / "spool.sqlite3")
            try:
                spool.executescript(
                    "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;"
                    "CREATE TABLE question (id INTEGER PRIMARY KEY, attrs TEXT NOT NULL);"
                    "CREATE TABLE answer (id INTEGER PRIMARY KEY, question_id INTEGER NOT NULL,"
                    " attrs TEXT NOT NULL);"
                )
                self._scan(spool)
                spool.execute("CREATE INDEX answer_question ON answer (question_id, id)")
                yield from self._joined(spool)
            finally:
                spool.close()

    def _scan(self, spool: sqlite3.Connection) -> None:
        total = self.path.stat().st_size
        pending = _Spool(spool)
        stats = self.stats
        with self.path.open("rb") as handle:
            try:
                context = ET.iterparse(handle, events=("start", "end"))
                _, root = next(context)
                for event, element in context:
                    if event != "end" or element.tag != "row":
                        continue
                    attrs = dict(element.attrib)
                    # Drop the row from the tree at once: the parser then holds one element, not the file.
                    element.clear()
                    root.clear()
                    self._take(attrs, pending)
                    if self.on_progress is not None and stats.posts % self.progress_every == 0:
                        self.on_progress(handle.tell(), total)
            except StopIteration:
                raise DumpError(f"{self.path.name} is empty") from None
            except ET.ParseError as exc:
                line, column = exc.position
                raise DumpError(
                    f"{self.path.name}: malformed XML at line {line}, column {column}: {exc}"
                ) from None
        pending.flush()
        spool.commit()
        if self.on_progress is not None:
            self.on_progress(total, total)

    def _take(self, attrs: dict[str, str], pending: _Spool) -> None:
        """Count one row; spool it if it is a selected question or an answer to one."""
        stats = self.stats
        stats.posts += 1
        kind = attrs.get("PostTypeId")
        if kind == QUESTION:
            stats.questions += 1
            record = post_to_record(attrs, (), self.site_host)
            rejected_by = self.rules.screen(record) if self.rules is not None else None
            if rejected_by is not None:
                stats.rejected[rejected_by] += 1
                return
            pending.add_question(int(record.metadata["question_id"]), attrs)
            stats.selected += 1
        elif kind == ANSWER:
            stats.answers += 1
            parent = _int(attrs, "ParentId")
            if parent is None or parent not in pending.selected:
                return
            answer_id = _int(attrs, "Id")
            if answer_id is None:
                raise DumpError(f"an answer to question {parent} has no Id")
            pending.add_answer(answer_id, parent, attrs)
            stats.answers_joined += 1

    def _joined(self, spool: sqlite3.Connection) -> Iterator[ItemRecord]:
        answer_cursor = spool.cursor()
        for question_id, attrs_text in spool.execute("SELECT id, attrs FROM question ORDER BY id"):
            answer_rows = answer_cursor.execute(
                "SELECT attrs FROM answer WHERE question_id = ? ORDER BY id", (question_id,)
            ).fetchall()
            answers = [json.loads(text) for (text,) in answer_rows]
            yield post_to_record(json.loads(attrs_text), answers, self.site_host)


class _Spool:
    """Selected rows on their way to SQLite, written in batches bounded in rows and in bytes."""

    def __init__(self, connection: sqlite3.Connection) -> None:
        self.connection = connection
        self.selected: set[int] = set()
        self._questions: list[tuple[int, str]] = []
        self._answers: list[tuple[int, int, str]] = []
        self._bytes = 0

    def add_question(self, question_id: int, attrs: Mapping[str, str]) -> None:
        text = json.dumps(attrs)
        self.selected.add(question_id)
        self._questions.append((question_id, text))
        self._grow(len(text))

    def add_answer(self, answer_id: int, question_id: int, attrs: Mapping[str, str]) -> None:
        text = json.dumps(attrs)
        self._answers.append((answer_id, question_id, text))
        self._grow(len(text))

    def _grow(self, size: int) -> None:
        self._bytes += size
        if self._bytes >= _BATCH_BYTES or len(self._questions) + len(self._answers) >= _BATCH_ROWS:
            self.flush()

    def flush(self) -> None:
        if self._questions:
            self.connection.executemany(
                "INSERT OR REPLACE INTO question (id, attrs) VALUES (?, ?)", self._questions
            )
            self._questions.clear()
        if self._answers:
            self.connection.executemany(
                "INSERT OR REPLACE INTO answer (id, question_id, attrs) VALUES (?, ?, ?)", self._answers
            )
            self._answers.clear()
        self._bytes = 0


def read_posts(
    path: str | Path,
    rules: ScreeningRules | None = None,
    *,
    site_host: str = "stackoverflow.com",
    on_progress: ProgressCallback | None = None,
) -> Iterator[ItemRecord]:
    """Shorthand for ``iter(PostsDumpReader(path, rules, ...))`` when the counts are not needed."""
    return iter(PostsDumpReader(path, rules, site_host=site_host, on_progress=on_progress))
