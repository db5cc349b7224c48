"""A first submission on PostgreSQL in one statement: the locks, every write and the next item
(docs/decisions/0004).

`submit_annotation` (labelling.py) takes this path for the common case, an annotator submitting an open
assignment of theirs for the first time, with labels already checked against the study's codebook index
that this process read last (`CodebookIndex.last_read`, else read now); the ORM path takes everything else
(edits, a decided item, a codebook changed since, a study without a codebook, SQLite), and anything this
statement declines. Both keep the same contract; the tests run both.

The statement takes, in this order, the assignment row (FOR UPDATE: a double click or a second tab waits
here), the codebook row (FOR SHARE: a codebook change waits for us, or we for it, as in `_hold_codebook`)
and the item row (FOR UPDATE: the item's consolidation, which would take it next, is serialised with the
other annotators' submissions of the item). Taking the item lock first instead of last changes no lock
order: codebook before item, as every writer of both does.

It writes only when, on the rows as locked, the assignment is the user's, of the study and open, the
codebook row is still the one the labels were checked against (id, version, `updated_at`, name: the index
cache's key), no annotation of the assignment is submitted, the item is not decided and the assignment is
not a gold check (never consolidated: the ORM path sends no signal for it); otherwise it writes
nothing and returns no row, and the caller takes the ORM path in the same transaction. The locked rows are
read as locked: after waiting for a lock, PostgreSQL re-reads the row, so a twin request that submitted
meanwhile shows as status ``submitted`` and a codebook changed meanwhile by its new version. The rest comes
from the snapshot the statement started with: whether an annotation was submitted or the item decided
(exactly as the ORM path reads them before the item is locked; consolidation then runs on the locked item
in a statement of its own and sees everything committed before), and the next open assignment (the queue
as it was a moment before; the submitted assignment is left out by id).

The write inserts or completes the annotation (a draft becomes the submission, keeping when it was
started), its findings and label values, and marks the assignment submitted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Any

from apps.core import sql
from apps.corpus.models import Item
from apps.taxonomy.models import Codebook

from .. import payload as pl
from ..decided import reader as decided
from ..models import Annotation, Assignment, AssignmentStatus, Finding, LabelValue, Round, RoundKind
from .common import MAX_SECONDS_PER_ITEM, LoadedCodebook


# The user's next open assignment in the study, by round number then queue position, skipping `after` and
# items whose review is decided (adjudication's fact, through `decided.reader()`) unless it is a gold check
# (its item is decided by design: docs/quality.md): for each round, the first one from the
# `assignment_queue` index (annotator, status, round, position); training rounds come before the others
# (their pass mark may lock them), then by number; the scan stops at the first round that has one. Shared
# by labelling's `next_open_assignment` and the submission below; built on first use, once the apps are
# ready.
@cache
def next_open_id() -> str:
    return f"""
SELECT f.first FROM (
    SELECT r.number, r.id AS round_id, r.kind, (
        SELECT a.id FROM "{Assignment._meta.db_table}" a
        WHERE a.annotator_id = %(user)s AND a.status = %(open)s AND a.round_id = r.id
          AND a.id <> %(after)s
          AND NOT {decided().review_decided_sql("a.item_id", unless="a.gold")}
        ORDER BY a.position, a.id
        LIMIT 1
    ) AS first
    FROM "{Round._meta.db_table}" r
    WHERE r.study_id = %(study)s
) f
WHERE f.first IS NOT NULL
ORDER BY f.kind = '{RoundKind.TRAINING.value}' DESC, f.number, f.round_id
LIMIT 1
"""


@cache
def _submit_statement() -> sql.Statement:
    return sql.Statement(
        "taxonomist_submit",
        f"""
WITH l AS (
    SELECT a.id, a.study_id, a.status, a.gold, cb.id AS codebook_id, cb.version, cb.updated_at, cb.name,
        {decided().review_decided_sql("a.item_id")}
        OR {decided().current_decision_sql("a.item_id")}
            AS decided,
        EXISTS (SELECT 1 FROM "{Annotation._meta.db_table}" n
                WHERE n.assignment_id = a.id AND n.submitted_at IS NOT NULL) AS submitted_before
    FROM "{Assignment._meta.db_table}" a
    JOIN "{Codebook._meta.db_table}" cb ON cb.study_id = a.study_id
    JOIN "{Item._meta.db_table}" i ON i.id = a.item_id
    WHERE a.id = %(assignment)s AND a.annotator_id = %(user)s
    FOR UPDATE OF a FOR SHARE OF cb FOR UPDATE OF i
), ok AS (
    SELECT l.id FROM l
    WHERE l.study_id = %(study)s AND l.status = %(open)s AND NOT l.decided AND NOT l.submitted_before
      AND NOT l.gold
      AND l.codebook_id = %(codebook)s AND l.version = %(version)s AND l.updated_at = %(codebook_updated)s
      AND l.name = %(codebook_name)s
), an AS (
    INSERT INTO "{Annotation._meta.db_table}" AS x
        (assignment_id, memo, draft, codebook_version, started_at, submitted_at, updated_at, seconds_spent,
         imported)
    SELECT ok.id, %(memo)s, '{{}}'::jsonb, %(version)s, %(now)s, %(now)s, %(now)s, COALESCE(%(seconds)s, 0),
        false
    FROM ok
    ON CONFLICT (assignment_id) DO UPDATE SET
        memo = EXCLUDED.memo, draft = '{{}}'::jsonb, codebook_version = EXCLUDED.codebook_version,
        submitted_at = EXCLUDED.submitted_at, updated_at = EXCLUDED.updated_at, imported = false,
        seconds_spent = COALESCE(
            %(seconds)s,
            LEAST(%(max_seconds)s, GREATEST(0, floor(extract(epoch FROM EXCLUDED.updated_at - x.started_at))))
        )
    RETURNING {sql.columns(Annotation, "x")}
), f AS (
    INSERT INTO "{Finding._meta.db_table}" (annotation_id, number)
    SELECT an.id, n FROM an, unnest(%(numbers)s::integer[]) AS n
    RETURNING id, number
), v AS (
    INSERT INTO "{LabelValue._meta.db_table}"
        (finding_id, dimension_id, category_id, original_category_id, pending)
    SELECT f.id, t.dimension, t.category, NULL, t.pending
    FROM f JOIN unnest(%(v_number)s::integer[], %(v_dimension)s::bigint[], %(v_category)s::bigint[],
                       %(v_pending)s::boolean[]) AS t(number, dimension, category, pending)
         ON t.number = f.number
), s AS (
    UPDATE "{Assignment._meta.db_table}" AS y
    SET status = %(submitted)s, submitted_at = COALESCE(y.submitted_at, %(now)s)
    WHERE y.id IN (SELECT ok.id FROM ok)
    RETURNING {sql.columns(Assignment, "y")}
)
SELECT s.*, an.*, (SELECT r.number FROM "{Round._meta.db_table}" r WHERE r.id = s.round_id),
    ({next_open_id()})
FROM s, an
""",
        {
            "assignment": "bigint",
            "user": "bigint",
            "study": "bigint",
            "open": "varchar",
            "after": "bigint",
            "codebook": "bigint",
            "version": "integer",
            "codebook_updated": "timestamptz",
            "codebook_name": "varchar",
            "memo": "text",
            "now": "timestamptz",
            "seconds": "integer",
            "max_seconds": "integer",
            "numbers": "integer[]",
            "v_number": "integer[]",
            "v_dimension": "bigint[]",
            "v_category": "bigint[]",
            "v_pending": "boolean[]",
            "submitted": "varchar",
        },
    )


_A = sql.width(Assignment)


@dataclass(frozen=True)
class Submitted:
    annotation: Annotation  # with its assignment, as written
    round_number: int  # the assignment's round's
    next_assignment_id: int | None  # the user's next open assignment in the study, None when there is none


def submit(
    assignment_id: int,
    user_id: int,
    study_id: int,
    findings: Sequence[Mapping[str, pl.Value]],
    memo: str,
    book: LoadedCodebook,
    now: datetime,
    seconds_spent: int | None,
) -> Submitted | None:
    """Write a first submission of the assignment in one statement (see the module docstring), the labels
    checked against `book`; None when the statement declined, having written nothing. `seconds_spent` from
    the page wins; without it, the time since a draft was started (0 for none), capped as the ORM path caps
    it."""
    state = book.index.row_state
    if state is None:  # an index not read from a codebook row (a study without one)
        return None
    v_number: list[int] = []
    v_dimension: list[int] = []
    v_category: list[int | None] = []
    v_pending: list[bool] = []
    for number, values in enumerate(findings, start=1):
        for dimension, value in values.items():
            dimension_id = book.dimension_ids[dimension]
            chosen: Sequence[str | None] = [None] if value == pl.PENDING else value
            for key in chosen:
                v_number.append(number)
                v_dimension.append(dimension_id)
                v_category.append(book.category_ids[(dimension, key)] if key is not None else None)
                v_pending.append(key is None)
    codebook_id, version, updated_at, name = state
    seconds = None if seconds_spent is None else max(0, min(seconds_spent, MAX_SECONDS_PER_ITEM))
    params: dict[str, Any] = {
        "assignment": assignment_id,
        "user": user_id,
        "study": study_id,
        "open": AssignmentStatus.OPEN.value,
        "after": assignment_id,  # the next item is another one
        "codebook": codebook_id,
        "version": version,
        "codebook_updated": updated_at,
        "codebook_name": name,
        "memo": memo,
        "now": now,
        "seconds": seconds,
        "max_seconds": MAX_SECONDS_PER_ITEM,
        "numbers": list(range(1, len(findings) + 1)),
        "v_number": v_number,
        "v_dimension": v_dimension,
        "v_category": v_category,
        "v_pending": v_pending,
        "submitted": AssignmentStatus.SUBMITTED.value,
    }
    row = _submit_statement().one(params)
    if row is None:
        return None
    annotation = sql.instance(Annotation, row[_A:-2])
    annotation.assignment = sql.instance(Assignment, row[:_A])
    return Submitted(annotation, row[-2], row[-1])
