"""Every hand-written SQL statement of adjudication: the submission's consolidation read (the item's state
with a completed round's labels), the Review's insert and update, and the decision written in one statement
(alone, or with its Review). PostgreSQL prepared statements (`apps.core.sql.Statement`); each has an ORM
twin in the modules that call it, and tests hold both to one outcome (docs/decisions/0004)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from apps.accounts.models import Study
from apps.annotation.models import Annotation, Assignment, Round
from apps.core.sql import Statement, columns, instance
from apps.corpus.models import Item

from ..models import Decision, DecisionFinding, DecisionValue, Review
from ..queries import (
    round_labels_order,
    round_labels_sql,
)

# What a submission's consolidation needs, read in one statement (PostgreSQL, the item row locked by the
# submission): the study's rule, the item's latest round with its assignments and submitted annotations
# counted, whether a decision is current, and the item's Review, the overlap recorded for the round (text, or
# NULL) and the study's; when the round is all submitted, its labels too, one row each
# (`queries.round_labels_sql`), the state repeated on each. The common case is written by the same
# statement: an item whose round is not all submitted, without a decision or a Review yet (the first
# annotation of the item), gets its Review as ``annotating``; the 13th value says whether it did.
STATE_WIDTH = 13
SUBMISSION_STATE = Statement(
    "taxonomist_submission_state",
    f"""
WITH r AS (
    SELECT a.round_id, count(*) AS total,
           count(*) FILTER (WHERE a.status = %(submitted)s AND n.submitted_at IS NOT NULL) AS done,
           ro.params -> 'assignment' ->> 'overlap' AS round_overlap
    FROM "{Assignment._meta.db_table}" a
    JOIN "{Round._meta.db_table}" ro ON ro.id = a.round_id
    LEFT JOIN "{Annotation._meta.db_table}" n ON n.assignment_id = a.id
    WHERE a.item_id = %(item)s
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
    WHERE st.review_id IS NULL AND st.round_id IS NOT NULL AND NOT st.has_current AND st.done < st.total
    ON CONFLICT (item_id) DO NOTHING
    RETURNING id
)
SELECT st.*, EXISTS (SELECT 1 FROM opened), lab.*
FROM st LEFT JOIN LATERAL ({round_labels_sql("st.round_id", "st.done >= st.total")}) lab ON true
ORDER BY {round_labels_order(STATE_WIDTH)}
""",
    {"item": "bigint", "submitted": "varchar", "annotating": "varchar", "now": "timestamptz"},
)
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


_SOURCES = Decision.source_annotations.through._meta.db_table


# `record_decision` on PostgreSQL: the decision, its findings, their values and its source annotations in one
# statement (four inserts through the ORM); every decision takes it, automatic or a lead's. `gate` is a
# FROM clause the decision's row is selected from (empty: always one row).
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


def decision_params(
    fields: dict[str, Any], findings: int, values: list[tuple[int, int, int]], sources: list[int]
) -> dict[str, Any]:
    """The decision statements' parameters for `fields` as `Decision.objects.create` takes them."""
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
        "numbers": list(range(1, findings + 1)),
        "v_number": [number for number, _, _ in values],
        "v_dimension": [dimension for _, dimension, _ in values],
        "v_category": [category for _, _, category in values],
        "sources": sources,
    }


def decision_instance(row: Sequence[Any], fields: dict[str, Any]) -> Decision:
    decision = instance(Decision, row)
    decision.item, decision.decided_by, decision.supersedes = (
        fields["item"],
        fields["decided_by"],
        fields["supersedes"],
    )
    return decision
