"""A first submission on PostgreSQL in two statements: the locks, then every write (docs/decisions/0004).

`submit_annotation` (labelling.py) takes this path for the common case, an annotator submitting an open
assignment of theirs for the first time, and the ORM path for everything else (edits, a decided item, a
study without a codebook, SQLite). Both keep the same contract; the tests run both.

`lock` takes, in one statement and in this order, the assignment row (FOR UPDATE: a double click or a
second tab waits here), the codebook row (FOR SHARE: a codebook change waits for us, or we for it, as
in `_hold_codebook`) and the item row (FOR UPDATE: the item's consolidation, which would take it next, is
serialised with the other annotators' submissions of the item). Taking the item lock first instead of
last changes no lock order: codebook before item, as every writer of both does.

The values the statement reads beside its locks come from the snapshot it started with. The assignment
row is the exception: after waiting for a lock, PostgreSQL re-reads the locked row, so a twin request
that submitted meanwhile shows as status ``submitted`` and sends this one to the ORM path, which compares
the labels (nothing is written twice). A draft saved meanwhile (which changes no assignment row) is
replaced by the write's upsert. Whether the item is decided is read from the start snapshot, exactly as
the ORM path reads it before the item is locked; consolidation then runs on the locked item and sees
everything committed before.

`write` inserts or completes the annotation (a draft becomes the submission, keeping when it was
started), its findings and label values, and marks the assignment submitted: one statement.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from apps.core import sql
from apps.corpus.models import Item
from apps.taxonomy.models import Codebook

from .. import payload as pl
from ..models import Annotation, Assignment, AssignmentStatus, Finding, LabelValue
from .common import DECIDED, MAX_SECONDS_PER_ITEM, LoadedCodebook

_A, _C = sql.width(Assignment), sql.width(Codebook)

_LOCK = sql.Statement(
    "taxonomist_submit_lock",
    f"""
SELECT {sql.columns(Assignment, "a")}, {sql.columns(Codebook, "cb")},
    EXISTS (SELECT 1 FROM adjudication_review v WHERE v.item_id = a.item_id AND v.state = %(decided)s)
    OR EXISTS (SELECT 1 FROM adjudication_decision d WHERE d.item_id = a.item_id AND d.is_current),
    EXISTS (SELECT 1 FROM "{Annotation._meta.db_table}" n
            WHERE n.assignment_id = a.id AND n.submitted_at IS NOT NULL)
FROM "{Assignment._meta.db_table}" a
JOIN "{Codebook._meta.db_table}" cb ON cb.study_id = a.study_id
JOIN "{Item._meta.db_table}" i ON i.id = a.item_id
WHERE a.id = %(assignment)s AND a.annotator_id = %(user)s
FOR UPDATE OF a FOR SHARE OF cb FOR UPDATE OF i
""",
    {"assignment": "bigint", "user": "bigint", "decided": "varchar"},
)


@dataclass(frozen=True)
class Locked:
    assignment: Assignment
    codebook: Codebook
    decided: bool
    submitted_before: bool  # an annotation of this assignment was submitted already (an edit)


def lock(assignment_id: int, user_id: int) -> Locked | None:
    """Lock the user's assignment, the study's codebook and the item (see the module docstring); None when
    the assignment is not the user's or the study has no codebook (the ORM path says which)."""
    row = _LOCK.one({"assignment": assignment_id, "user": user_id, "decided": DECIDED})
    if row is None:
        return None
    return Locked(
        assignment=sql.instance(Assignment, row[:_A]),
        codebook=sql.instance(Codebook, row[_A : _A + _C]),
        decided=bool(row[_A + _C]),
        submitted_before=bool(row[_A + _C + 1]),
    )


_WRITE = sql.Statement(
    "taxonomist_submit_write",
    f"""
WITH an AS (
    INSERT INTO "{Annotation._meta.db_table}" AS x
        (assignment_id, memo, draft, codebook_version, started_at, submitted_at, updated_at, seconds_spent,
         imported)
    VALUES (%(assignment)s, %(memo)s, '{{}}'::jsonb, %(version)s, %(now)s, %(now)s, %(now)s,
            COALESCE(%(seconds)s, 0), false)
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
    UPDATE "{Assignment._meta.db_table}"
    SET status = %(submitted)s, submitted_at = COALESCE(submitted_at, %(now)s)
    WHERE id = %(assignment)s
)
SELECT * FROM an
""",
    {
        "assignment": "bigint",
        "memo": "text",
        "version": "integer",
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


def write(
    assignment: Assignment,
    findings: Sequence[Mapping[str, pl.Value]],
    memo: str,
    book: LoadedCodebook,
    now: datetime,
    seconds_spent: int | None,
) -> Annotation:
    """Write a first submission of `assignment` (locked by `lock`, status open) in one statement and
    return its annotation. `seconds_spent` from the page wins; without it, the time since a draft was
    started (0 for none), capped as the ORM path caps it."""
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
    seconds = None if seconds_spent is None else max(0, min(seconds_spent, MAX_SECONDS_PER_ITEM))
    params: dict[str, Any] = {
        "assignment": assignment.pk,
        "memo": memo,
        "version": book.version,
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
    row = _WRITE.one(params)
    assert row is not None  # an INSERT ... ON CONFLICT DO UPDATE returns its row
    annotation = sql.instance(Annotation, row)
    assignment.status = AssignmentStatus.SUBMITTED
    assignment.submitted_at = assignment.submitted_at or now
    annotation.assignment = assignment
    return annotation
