"""Every hand-written SQL statement of adjudication, and the reading of its rows into named tuples.

The submission's consolidation read (the item's state with a completed round's labels), the Review's
insert and update, and the decision written in one statement (alone, or with its Review). PostgreSQL
prepared statements (`apps.core.sql.Statement`); each has an ORM twin in the module that calls it, and tests
hold both to one outcome (docs/decisions/0004). Callers get named rows or model instances from the
functions below, never a row to unpack by position: a column's position is known only here, next to the
statement that selects it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple

from apps.accounts.models import Study
from apps.annotation.completion import MIN_ANNOTATIONS
from apps.annotation.models import Annotation, Assignment, AssignmentStatus, Finding, LabelValue, Round
from apps.core.sql import Statement, columns, instance, width
from apps.corpus.models import Item

from ..models import Decision, DecisionFinding, DecisionValue, Review, ReviewState
from ..queries import RoundLabel


class SubmissionState(NamedTuple):
    """The item's state as a submission's consolidation reads it (`read_submission_state`), in the order of
    the statement's ``st`` columns and its last one. `total` and `done` are 0 when the item has no round."""

    study_id: int
    rule: str  # the study's consolidation rule
    round_id: int | None  # the item's latest round
    total: int  # assignments in the round
    done: int  # of which submitted
    has_current: bool  # a decision is current
    review_id: int | None
    review_state: str | None
    dimensions: list[str] | None  # the Review's disagreeing dimensions
    review_round: int | None
    round_overlap: str | None  # the round's recorded overlap as text when it is a JSON number, else NULL
    study_overlap: int
    opened: bool  # the statement opened the item's Review (``annotating``): nothing is left to do

    @property
    def overlap(self) -> int:
        """The overlap the round's completion is judged by, as `Round.assigned_overlap` reads it."""
        text = self.round_overlap
        recorded = (int(text) if text is not None and text.isdigit() else None) or None
        return self.study_overlap if recorded is None else recorded


@dataclass(frozen=True)
class SubmissionRead:
    """`SUBMISSION_STATE`'s answer: the item's state and, when its round is all submitted, the round's
    labels (`round_labels`, read from the rows only when asked for)."""

    state: SubmissionState
    rows: list[tuple[Any, ...]]

    def round_labels(self) -> Iterator[RoundLabel]:
        """The round's label rows (`round_labels_sql`), each assignment and annotation built once."""
        a_width, n_width = width(Assignment), width(Annotation)
        built: dict[int, tuple[Assignment, Annotation | None]] = {}
        for row in self.rows:
            labels = row[STATE_WIDTH:]
            if not labels[0]:  # no assignment: the round is not all submitted, no labels were joined
                continue
            pair = built.get(labels[0])
            if pair is None:
                assignment = instance(Assignment, labels[:a_width])
                started = labels[a_width] is not None
                annotation = instance(Annotation, labels[a_width : a_width + n_width]) if started else None
                pair = built[labels[0]] = (assignment, annotation)
            number, value_id, dimension_id, category_id, pending = labels[a_width + n_width :]
            yield RoundLabel(pair[0], pair[1], number, value_id, dimension_id, category_id, pending)


# The labels of one round of one item (read with the item's state in `SUBMISSION_STATE`): each assignment
# with its annotation, findings and label values, one row per value (or per finding without values, or per
# assignment without findings), in the columns `SubmissionRead.round_labels` reads. `round_id` and
# `condition` are SQL expressions; %(item)s is the item.
def round_labels_sql(round_id: str, condition: str = "true") -> str:
    return f"""
SELECT {columns(Assignment, "a")}, {columns(Annotation, "n")}, f.number, v.id, v.dimension_id, v.category_id,
       v.pending
FROM "{Assignment._meta.db_table}" a
LEFT JOIN "{Annotation._meta.db_table}" n ON n.assignment_id = a.id
LEFT JOIN "{Finding._meta.db_table}" f ON f.annotation_id = n.id
LEFT JOIN "{LabelValue._meta.db_table}" v ON v.finding_id = f.id
WHERE a.item_id = %(item)s AND a.round_id = {round_id} AND NOT a.gold AND {condition}
"""


def round_labels_order(offset: int) -> str:
    """The ORDER BY of `round_labels_sql`'s rows (assignment, finding number, value) by column position,
    its columns starting after `offset` others."""
    a_width, n_width = width(Assignment), width(Annotation)
    return f"{offset + 1}, {offset + a_width + n_width + 1}, {offset + a_width + n_width + 2}"


# Gold checks (`a.gold`) are never consolidated: left out of both reads (docs/quality.md).
# What a submission's consolidation needs, read in one statement (PostgreSQL, the item row locked by the
# submission): the study's rule, the item's latest round with its assignments and submitted annotations
# counted, whether a decision is current, and the item's Review, the overlap recorded for the round (the text
# of a JSON number, else NULL: `overlap_of` takes no string) and the study's; when the round is all submitted,
# its labels too, one row each (`round_labels_sql`), the state repeated on each. The common case is written by
# the same statement: an item whose round is not complete, without a decision or a Review yet (the first
# annotation of the item, or the only one of a round of one annotator), gets its Review as ``annotating``; the
# state's last value (`SubmissionState.opened`) says whether it did. "Complete" is
# `apps.annotation.completion.ready`, the round's recorded overlap read as `SubmissionState.overlap` reads it
# (tests hold the two together).
STATE_WIDTH = len(SubmissionState._fields)
SUBMISSION_STATE = Statement(
    "taxonomist_submission_state",
    f"""
WITH r AS (
    SELECT a.round_id, count(*) AS total,
           count(*) FILTER (WHERE a.status = %(submitted)s AND n.submitted_at IS NOT NULL) AS done,
           CASE WHEN jsonb_typeof(ro.params -> 'assignment' -> 'overlap') = 'number'
               THEN ro.params -> 'assignment' ->> 'overlap' END AS round_overlap
    FROM "{Assignment._meta.db_table}" a
    JOIN "{Round._meta.db_table}" ro ON ro.id = a.round_id
    LEFT JOIN "{Annotation._meta.db_table}" n ON n.assignment_id = a.id
    WHERE a.item_id = %(item)s AND NOT a.gold
    GROUP BY ro.number, a.round_id, ro.params
    ORDER BY ro.number DESC
    LIMIT 1
), st AS (
    SELECT i.study_id, s.consolidation_rule, r.round_id, r.total, r.done,
        EXISTS (SELECT 1 FROM "{Decision._meta.db_table}" d WHERE d.item_id = i.id AND d.is_current)
            AS has_current,
        v.id AS review_id, v.state, v.disagreeing_dimensions, v.round_id AS review_round,
        r.round_overlap, s.overlap AS study_overlap
    FROM "{Item._meta.db_table}" i
    JOIN "{Study._meta.db_table}" s ON s.id = i.study_id
    LEFT JOIN r ON true
    LEFT JOIN "{Review._meta.db_table}" v ON v.item_id = i.id
    WHERE i.id = %(item)s
), opened AS (
    INSERT INTO "{Review._meta.db_table}"
        (item_id, study_id, round_id, state, disagreeing_dimensions, updated_at, claimed_by_id, claimed_at)
    SELECT %(item)s, st.study_id, st.round_id, %(annotating)s, '[]'::jsonb, %(now)s, NULL, NULL
    FROM st
    WHERE st.review_id IS NULL AND st.round_id IS NOT NULL AND NOT st.has_current
      AND (st.done < st.total OR st.done < GREATEST(%(min_annotations)s, COALESCE(NULLIF(
          CASE WHEN st.round_overlap ~ '^[0-9]+$' THEN st.round_overlap::numeric END, 0), st.study_overlap)))
    ON CONFLICT (item_id) DO NOTHING
    RETURNING id
)
SELECT st.*, EXISTS (SELECT 1 FROM opened), lab.*
FROM st LEFT JOIN LATERAL ({round_labels_sql("st.round_id", "st.done >= st.total")}) lab ON true
ORDER BY {round_labels_order(STATE_WIDTH)}
""",
    {"item": "bigint", "submitted": "varchar", "annotating": "varchar", "now": "timestamptz",
     "min_annotations": "integer"},
)  # fmt: skip
INSERT_REVIEW = Statement(
    "taxonomist_review_insert",
    f"""
INSERT INTO "{Review._meta.db_table}"
    (item_id, study_id, round_id, state, disagreeing_dimensions, updated_at, claimed_by_id, claimed_at)
VALUES (%(item)s, %(study)s, %(round)s, %(state)s, %(dimensions)s::jsonb, %(now)s, NULL, NULL)
ON CONFLICT (item_id) DO NOTHING
RETURNING id
""",
    {"item": "bigint", "study": "bigint", "round": "bigint", "state": "varchar", "dimensions": "jsonb",
     "now": "timestamptz"},
)  # fmt: skip
# Only while the Review is still as it was read: `decide` and `claim` lock the Review, not the item.
UPDATE_REVIEW = Statement(
    "taxonomist_review_update",
    f"""
UPDATE "{Review._meta.db_table}"
SET state = %(state)s, disagreeing_dimensions = %(dimensions)s::jsonb, round_id = %(round)s,
    updated_at = CASE WHEN %(changed)s THEN %(now)s ELSE updated_at END
WHERE id = %(review)s AND state = %(was)s
""",
    {"state": "varchar", "dimensions": "jsonb", "round": "bigint", "changed": "boolean", "now": "timestamptz",
     "review": "bigint", "was": "varchar"},
)  # fmt: skip


def read_submission_state(item_id: int, *, now: datetime) -> SubmissionRead | None:
    """`SUBMISSION_STATE` for the item (its row locked by the caller); None for an item that is gone."""
    rows, _ = SUBMISSION_STATE.run(
        {
            "item": item_id,
            "submitted": AssignmentStatus.SUBMITTED.value,
            "annotating": ReviewState.ANNOTATING.value,
            "now": now,
            "min_annotations": MIN_ANNOTATIONS,
        }
    )
    if not rows:
        return None
    state = SubmissionState._make(rows[0][:STATE_WIDTH])
    dimensions: Any = state.dimensions
    if isinstance(dimensions, str):  # jsonb comes as text: Django parses JSON in its fields, not the driver
        dimensions = json.loads(dimensions)
    state = state._replace(dimensions=dimensions, total=state.total or 0, done=state.done or 0)
    return SubmissionRead(state, rows)


def insert_review(
    *, item_id: int, study_id: int, round_id: int, state: str, dimensions: list[str], now: datetime
) -> bool:
    """`INSERT_REVIEW`: the item's first Review; False when one exists already (nothing written)."""
    values = {"item": item_id, "study": study_id, "round": round_id, "state": state,
              "dimensions": json.dumps(dimensions), "now": now}  # fmt: skip
    return INSERT_REVIEW.one(values) is not None


def update_review(
    review_id: int,
    *,
    was: str,
    round_id: int,
    state: str,
    dimensions: list[str],
    changed: bool,
    now: datetime,
) -> bool:
    """`UPDATE_REVIEW`: the Review's state, only while it is still `was`; False when it was not (nothing
    written). `changed` says whether the state or the dimensions differ (`updated_at` moves only then)."""
    values = {"review": review_id, "was": was, "round": round_id, "state": state,
              "dimensions": json.dumps(dimensions), "changed": changed, "now": now}  # fmt: skip
    _, count = UPDATE_REVIEW.run(values)
    return count == 1


class GoldValue(NamedTuple):
    """One value of a new decision: its finding's number (from 1), the dimension and the category."""

    number: int
    dimension_id: int
    category_id: int


@dataclass(frozen=True)
class NewDecision:
    """A new current decision as every path writes it: `fields` as `Decision.objects.create` takes them,
    how many gold `findings` it has, their `values` and its source annotations' ids."""

    fields: dict[str, Any]
    findings: int
    values: list[GoldValue]
    sources: list[int]


_SOURCES = Decision.source_annotations.through._meta.db_table


# `record.record_decision` on PostgreSQL: the decision, its findings, their values and its source
# annotations in one statement (four inserts through the ORM); every decision takes it, automatic or a
# lead's. `gate` is a FROM clause the decision's row is selected from (empty: always one row).
def _decision_ctes(gate: str) -> str:
    return f"""
d AS (
    INSERT INTO "{Decision._meta.db_table}" AS x
        (study_id, item_id, round_id, provenance, rationale, decided_by_id, decided_at, is_current,
         supersedes_id, changes, codebook_version)
    SELECT %(study)s, %(item)s, %(round)s, %(provenance)s, %(rationale)s, %(actor)s, %(decided_at)s, true,
           %(previous)s, %(changes)s, %(version)s {gate}
    RETURNING {columns(Decision, "x")}
), f AS (
    INSERT INTO "{DecisionFinding._meta.db_table}" (decision_id, number)
    SELECT d.id, n FROM d, unnest(%(numbers)s::integer[]) AS n
    RETURNING id, number
), v AS (
    INSERT INTO "{DecisionValue._meta.db_table}" (finding_id, dimension_id, category_id, original_category_id)
    SELECT f.id, t.dimension, t.category, NULL
    FROM f JOIN unnest(%(v_number)s::integer[], %(v_dimension)s::bigint[], %(v_category)s::bigint[])
         AS t(number, dimension, category) ON t.number = f.number
), s AS (
    INSERT INTO "{_SOURCES}" (decision_id, annotation_id)
    SELECT d.id, a FROM d, unnest(%(sources)s::bigint[]) AS a
)"""


_DECISION_TYPES = {
    "study": "bigint", "item": "bigint", "round": "bigint", "provenance": "varchar", "rationale": "text",
    "actor": "bigint", "decided_at": "timestamptz", "previous": "bigint", "changes": "jsonb",
    "version": "integer", "numbers": "integer[]", "v_number": "integer[]", "v_dimension": "bigint[]",
    "v_category": "bigint[]", "sources": "bigint[]",
}  # fmt: skip
INSERT_DECISION = Statement(
    "taxonomist_insert_decision", f"WITH {_decision_ctes('')}\nSELECT * FROM d", _DECISION_TYPES
)
# A completed round's unanimous decision with its Review (`consolidate_submission`): the Review becomes
# decided only while still as it was read (as `UPDATE_REVIEW`), and the decision is written only if it
# did; the first value says whether it did.
DECIDE_REVIEW = Statement(
    "taxonomist_decide_review",
    f"""
WITH r AS (
    UPDATE "{Review._meta.db_table}"
    SET state = %(review_state)s, disagreeing_dimensions = %(review_dimensions)s::jsonb, round_id = %(round)s,
        updated_at = %(decided_at)s
    WHERE id = %(review)s AND state = %(was)s
    RETURNING id
), {_decision_ctes("FROM r")}
SELECT EXISTS (SELECT 1 FROM r), d.* FROM (SELECT 1) AS one LEFT JOIN d ON true
""",
    {
        **_DECISION_TYPES,
        "review_state": "varchar",
        "review_dimensions": "jsonb",
        "review": "bigint",
        "was": "varchar",
    },
)


def insert_decision(new: NewDecision) -> Decision:
    """`INSERT_DECISION`: the decision with its findings, values and sources; the decision's instance."""
    row = INSERT_DECISION.one(_decision_params(new))
    assert row is not None  # an INSERT returns its row
    return _decision_instance(row, new.fields)


def decide_review(new: NewDecision, *, review_id: int, was: str, state: str, dimensions: list[str]) -> bool:
    """`DECIDE_REVIEW`: the Review's new state and the decision, both only while the Review is still `was`;
    False when it was not (nothing written)."""
    review = {"review_state": state, "review_dimensions": json.dumps(dimensions), "review": review_id}
    row = DECIDE_REVIEW.one({**_decision_params(new), **review, "was": was})
    return row is not None and bool(row[0])


def _decision_params(new: NewDecision) -> dict[str, Any]:
    """The decision statements' parameters for a new decision."""
    fields = new.fields
    actor, previous = fields["decided_by"], fields["supersedes"]
    return {
        "study": fields["study_id"],
        "item": fields["item"].pk,
        "round": fields["round_id"],
        "provenance": str(fields["provenance"]),
        "rationale": fields["rationale"],
        "actor": actor.pk if actor is not None else None,
        "decided_at": fields["decided_at"],
        "previous": previous.pk if previous is not None else None,
        "changes": json.dumps(fields["changes"]),
        "version": fields["codebook_version"],
        "numbers": list(range(1, new.findings + 1)),
        "v_number": [v.number for v in new.values],
        "v_dimension": [v.dimension_id for v in new.values],
        "v_category": [v.category_id for v in new.values],
        "sources": new.sources,
    }


def _decision_instance(row: Sequence[Any], fields: dict[str, Any]) -> Decision:
    """The decision's instance from its ``RETURNING`` columns, its related objects those it was made with."""
    decision = instance(Decision, row)
    decision.item, decision.decided_by, decision.supersedes = (
        fields["item"],
        fields["decided_by"],
        fields["supersedes"],
    )
    return decision
