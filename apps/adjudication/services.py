"""The writes of adjudication: consolidate an item, decide it, follow codebook merges, import gold labels.

Locking contract. Every write on one item's consolidation state runs in one transaction that first locks
the item's row (`consolidate_item`, `import_decisions`) or its Review row (`decide`, `claim`), then reads
the annotations and the current decision. Two annotators submitting the last two annotations of an item at
once are therefore serialised (the second sees the first's annotation and consolidates), and two leads
deciding one item at once are serialised too: the second sees a current decision other than the one it
started from and gets a `DecisionConflict`. The partial unique constraint ``decision_one_current`` is the
last guard: an insert that would make a second current decision raises IntegrityError, reported as the
same conflict. No path overwrites a decision: a new one supersedes it, and the old one stays, not current.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, connection, transaction
from django.db.models import Q
from django.utils import timezone

from apps.accounts.models import Study, User
from apps.accounts.permissions import can_adjudicate
from apps.annotation.completion import ready
from apps.annotation.label_file import LabelFileError, LabelProblem, LabelRow
from apps.annotation.models import Annotation, Assignment, AssignmentStatus, LabelValue, Round
from apps.core.sql import Statement, columns, instance
from apps.corpus.models import Item
from apps.corpus.records import canonical_url
from apps.taxonomy.index import CodebookIndex, UnknownDimensionError
from apps.taxonomy.models import Category
from apps.taxonomy.tree import LabelError

from .consolidation import PENDING, Findings, change, consolidate, overrides_everyone, same_labels
from .models import Decision, DecisionFinding, DecisionValue, Provenance, Review, ReviewState
from .queries import (
    CLAIM_TTL,
    ItemLabels,
    decision_findings,
    item_labels,
    labels_from_rows,
    round_labels_order,
    round_labels_sql,
)

AUTOMATIC = frozenset({Provenance.UNANIMOUS, Provenance.MAJORITY})
Gold = list[dict[str, frozenset[int]]]


class AdjudicationError(Exception):
    """A decision refused, with the reason for the lead. `problems` lists each (finding, dimension, value)
    problem when the labels themselves are wrong."""

    def __init__(self, message: str, problems: Sequence[str] = ()) -> None:
        self.message = message
        self.problems = list(problems)
        super().__init__(message + ("".join(f"\n  {p}" for p in self.problems)))


class DecisionConflict(AdjudicationError):
    """Someone else's decision on the item became current while this one was being made. `current` is
    that decision (None when the one the lead started from was withdrawn)."""

    def __init__(self, message: str, current: Decision | None) -> None:
        self.current = current
        super().__init__(message)


# --- Consolidation -------------------------------------------------------------------------------------


def consolidate_item(
    item_id: int,
    *,
    remap: Mapping[int, int] | None = None,
    label_remap: Mapping[int, int] | None = None,
    index: CodebookIndex | None = None,
) -> Review | None:
    """Bring the item's Review (and automatic decision) up to date with its annotations.

    While some annotation of the item's round is not submitted the Review is ``annotating``. Once all k
    are, `consolidation.consolidate` under the study's rule gives a unanimous or majority decision (a new
    current decision unless the current one already holds the same labels and provenance) or an open
    disagreement. A decision made by a lead or imported is never replaced here: the Review stays
    ``decided``. An automatic decision whose annotations no longer agree is withdrawn (kept, not current).
    `remap` / `label_remap` let a codebook change in progress count as done (see `queries.item_labels`).
    `index`, the study's current codebook when the caller already holds it, saves reading it again.
    Returns the Review, or None for an item with neither assignments nor decisions.
    """
    # No savepoint when nested (a submission): an error here fails the caller's whole transaction anyway.
    with transaction.atomic(savepoint=False):
        item = Item.objects.select_for_update().select_related("study").filter(pk=item_id).first()
        if item is None:
            return None
        labels = item_labels(item, remap=remap, label_remap=label_remap, index=index, complete_only=True)
        current = Decision.objects.filter(item=item, is_current=True).first()
        if labels.round_id is None and current is None:
            return None
        review = Review.objects.select_for_update().filter(item=item).first()
        dimensions: list[str] = list(review.disagreeing_dimensions or []) if review else []
        if current is not None and current.provenance not in AUTOMATIC:
            state = ReviewState.DECIDED
        elif not labels.consolidable:  # not all submitted, or fewer than two or than the overlap: waits
            if current is not None:
                _withdraw(current)
            state, dimensions = ReviewState.ANNOTATING, []
        else:
            result = consolidate(labels.findings, rule=item.study.consolidation_rule)
            dimensions = list(result.disagreeing_dimensions)
            if result.decided:
                gold = list(result.findings)
                provenance = Provenance(result.outcome.value)
                unchanged = (
                    current is not None
                    and current.provenance == provenance
                    and same_labels(decision_findings(current, remap=labels.follow), gold)
                )
                if not unchanged:
                    _record(
                        item,
                        gold,
                        provenance,
                        labels,
                        previous=current,
                        actor=None,
                        rationale="",
                        index=index,
                    )
                state = ReviewState.DECIDED
            else:
                if current is not None:
                    _withdraw(current)
                state = ReviewState.DISAGREEMENT
        if review is None:
            return _create_review(item, state, dimensions, labels.round_id)
        _save_review(review, state, dimensions, labels.round_id)
        return review


# What a submission's consolidation needs, read in one statement (PostgreSQL, the item row locked by the
# submission): the study's rule, the item's latest round with its assignments and submitted annotations
# counted, whether a decision is current, and the item's Review, the overlap recorded for the round (text, or
# NULL) and the study's; when the round is all submitted, its labels too, one row each
# (`queries.round_labels_sql`), the state repeated on each. The common case is written by the same
# statement: an item whose round is not all submitted, without a decision or a Review yet (the first
# annotation of the item), gets its Review as ``annotating``; the 13th value says whether it did.
_STATE_WIDTH = 13
_SUBMISSION_STATE = Statement(
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
ORDER BY {round_labels_order(_STATE_WIDTH)}
""",
    {"item": "bigint", "submitted": "varchar", "annotating": "varchar", "now": "timestamptz"},
)
_INSERT_REVIEW = Statement(
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
_UPDATE_REVIEW = Statement(
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


def consolidate_submission(item_id: int, *, index: CodebookIndex | None = None) -> None:
    """`consolidate_item` for the item of a submission that holds the item's row lock already (PostgreSQL,
    `index` the codebook the submission validated against, share-locked).

    The same outcomes in fewer statements: one read of the item's state, which also opens the Review of an
    item's first annotation (``annotating``); while the round is not all submitted, at most one more write
    of its Review; when this submission completes it, one read of the round's labels, `consolidate` under
    the study's rule, the Review and, when the annotators agree, the decision (`_record`). An item with a
    current decision, a decided Review, or a Review that a lead changed since the read is left to
    `consolidate_item`, whatever the case."""
    now = timezone.now()
    rows, _ = _SUBMISSION_STATE.run(
        {
            "item": item_id,
            "submitted": AssignmentStatus.SUBMITTED.value,
            "annotating": ReviewState.ANNOTATING.value,
            "now": now,
        }
    )
    if not rows:
        return
    state = rows[0][:_STATE_WIDTH]
    (
        study_id, rule, round_id, total, done, has_current, review_id, was, dimensions, review_round,
        round_overlap, study_overlap, opened,
    ) = state  # fmt: skip
    if opened:
        return
    if isinstance(dimensions, str):  # jsonb comes as text: Django parses JSON in its fields, not the driver
        dimensions = json.loads(dimensions)
    if index is None or round_id is None or has_current or was == ReviewState.DECIDED:
        consolidate_item(item_id, index=index)
        return
    item = Item(pk=item_id, study_id=study_id)
    decision: tuple[Gold, Provenance, ItemLabels] | None = None
    target, disagreeing = ReviewState.ANNOTATING.value, []
    recorded = _whole(round_overlap) or None  # as `Round.assigned_overlap` reads it
    if ready(submitted=done, assigned=total, overlap=study_overlap if recorded is None else recorded):
        labels = labels_from_rows(item, round_id, index, (r[_STATE_WIDTH:] for r in rows if r[_STATE_WIDTH]))
        result = consolidate(labels.findings, rule=rule)
        disagreeing = list(result.disagreeing_dimensions)
        if result.decided:
            decision = (list(result.findings), Provenance(result.outcome.value), labels)
            target = ReviewState.DECIDED.value
        else:
            target = ReviewState.DISAGREEMENT.value
    if decision is not None and review_id is not None:
        # The common end of a round: the Review and the decision in one statement.
        gold, provenance, labels = decision
        fields, gold_values, sources = _decision_rows(
            item, gold, provenance, labels, previous=None, actor=None, rationale="", round_id=None,
            override=False, index=index,
        )  # fmt: skip
        params = _decision_params(fields, len(gold), gold_values, sources)
        review = {"review_state": target, "review_dimensions": json.dumps(disagreeing), "review": review_id}
        decided = _DECIDE_REVIEW.one({**params, **review, "was": was})
        if decided is None or not decided[0]:
            consolidate_item(item_id, index=index)
        return
    values = {
        "item": item_id,
        "study": study_id,
        "round": round_id,
        "state": target,
        "dimensions": json.dumps(disagreeing),
        "now": now,
    }
    if review_id is None:
        written = _INSERT_REVIEW.one(values) is not None
    else:
        changed = was != target or list(dimensions or []) != disagreeing
        if not changed and review_round == round_id:
            written = True
        else:
            _, count = _UPDATE_REVIEW.run({**values, "changed": changed, "review": review_id, "was": was})
            written = count == 1
    if not written:
        consolidate_item(item_id, index=index)
        return
    if decision is not None:
        gold, provenance, labels = decision
        _record(item, gold, provenance, labels, previous=None, actor=None, rationale="", index=index)


def _whole(text: str | None) -> int | None:
    """A whole number read as JSON text from the database, or None."""
    return int(text) if text is not None and text.isdigit() else None


def _create_review(item: Item, state: str, dimensions: list[str], round_id: int | None) -> Review:
    """The item's first Review, written with its state in one insert (the item row is locked)."""
    fields = {
        "item": item,
        "study_id": item.study_id,
        "round_id": round_id,
        "state": state,
        "disagreeing_dimensions": dimensions,
        "updated_at": timezone.now(),
    }
    if connection.vendor == "postgresql":  # the item's row lock keeps every other writer of it waiting
        return Review.objects.create(**fields)
    try:
        with transaction.atomic():
            return Review.objects.create(**fields)
    except IntegrityError:
        # Only without row locks (SQLite) can another transaction have created it since our read.
        review = Review.objects.select_for_update().get(item=item)
        _save_review(review, state, dimensions, round_id, force=True)
        return review


def consolidate_items(item_ids: Iterable[int], **options: Any) -> int:
    """`consolidate_item` for each id, each in its own transaction; returns how many were looked at."""
    n = 0
    for item_id in dict.fromkeys(item_ids):
        consolidate_item(item_id, **options)
        n += 1
    return n


def _save_review(
    review: Review, state: str, dimensions: list[str], round_id: int | None, *, force: bool = False
) -> None:
    changed = force or review.state != state or list(review.disagreeing_dimensions or []) != dimensions
    if not changed and review.round_id == round_id:
        return
    review.state = state
    review.disagreeing_dimensions = dimensions
    if round_id is not None:
        review.round_id = round_id
    if changed:
        review.updated_at = timezone.now()
    review.save(update_fields=["state", "disagreeing_dimensions", "round", "updated_at"])


def _withdraw(decision: Decision) -> None:
    Decision.objects.filter(pk=decision.pk).update(is_current=False)


# --- Recording a decision ------------------------------------------------------------------------------


def _record(
    item: Item,
    gold: Gold,
    provenance: Provenance,
    labels: ItemLabels,
    *,
    previous: Decision | None,
    actor: User | None,
    rationale: str,
    round_id: int | None = None,
    override: bool = False,
    index: CodebookIndex | None = None,
) -> Decision:
    """Write a new current decision superseding `previous` (inside the caller's transaction)."""
    index = index or CodebookIndex.for_study(item.study)
    # Only the row still current may be superseded: 0 rows means someone else got there first.
    if previous is not None and not Decision.objects.filter(pk=previous.pk, is_current=True).update(
        is_current=False
    ):
        raise DecisionConflict(_conflict_message(None, previous.pk), None)
    fields, values, sources = _decision_rows(
        item, gold, provenance, labels, previous=previous, actor=actor, rationale=rationale,
        round_id=round_id, override=override, index=index,
    )  # fmt: skip
    if connection.vendor == "postgresql":
        row = _INSERT_DECISION.one(_decision_params(fields, len(gold), values, sources))
        assert row is not None  # an INSERT returns its row
        return _decision_instance(row, fields)
    decision = Decision.objects.create(**fields)
    findings = DecisionFinding.objects.bulk_create(
        DecisionFinding(decision=decision, number=number) for number in range(1, len(gold) + 1)
    )
    DecisionValue.objects.bulk_create(
        DecisionValue(finding=findings[number - 1], dimension_id=dimension_id, category_id=category_id)
        for number, dimension_id, category_id in values
    )
    if sources:
        # A new decision has no source rows yet: insert them, skipping the read `set()` would make.
        through = Decision.source_annotations.through
        through.objects.bulk_create([through(decision_id=decision.pk, annotation_id=pk) for pk in sources])
    return decision


DecisionRows = tuple[dict[str, Any], list[tuple[int, int, int]], list[int]]


def _decision_rows(
    item: Item,
    gold: Gold,
    provenance: Provenance,
    labels: ItemLabels,
    *,
    previous: Decision | None,
    actor: User | None,
    rationale: str,
    round_id: int | None,
    override: bool,
    index: CodebookIndex,
) -> DecisionRows:
    """A new current decision's fields (as `Decision.objects.create` takes them), its gold values (finding
    number, dimension id, category id) and its source annotations' ids."""
    fields: dict[str, Any] = {
        "study_id": item.study_id,
        "item": item,
        "round_id": round_id or labels.round_id,
        "provenance": provenance,
        "rationale": rationale,
        "decided_by": actor,
        "decided_at": timezone.now(),
        "is_current": True,
        "supersedes": previous,
        "changes": _changes(gold, labels, previous, index, override),
        "codebook_version": index.version,
    }
    values = [
        (number, index.dimension(key).id, category_id)
        for number, finding in enumerate(gold, start=1)
        for key, ids in finding.items()
        for category_id in sorted(ids)
    ]
    return fields, values, [a.pk for a in dict.fromkeys(labels.annotations)]


_SOURCES = Decision.source_annotations.through._meta.db_table


# `_record` on PostgreSQL: the decision, its findings, their values and its source annotations in one
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
_INSERT_DECISION = Statement(
    "taxonomist_insert_decision", f"WITH {_decision_ctes('')}\nSELECT * FROM d", _DECISION_TYPES
)
# A completed round's unanimous decision with its Review (`consolidate_submission`): the Review becomes
# decided only while still as it was read (as `_UPDATE_REVIEW`), and the decision is written only if it
# did; the first value says whether it did.
_DECIDE_REVIEW = Statement(
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


def _decision_params(
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


def _decision_instance(row: Sequence[Any], fields: dict[str, Any]) -> Decision:
    decision = instance(Decision, row)
    decision.item, decision.decided_by, decision.supersedes = (
        fields["item"],
        fields["decided_by"],
        fields["supersedes"],
    )
    return decision


def _keys(values: Iterable[int | str], index: CodebookIndex) -> list[str]:
    return [
        PENDING if v == PENDING else (index.categories[v].key if v in index.categories else str(v))
        for v in values
        if isinstance(v, int) or v == PENDING
    ]


def _changes(
    gold: Gold, labels: ItemLabels, previous: Decision | None, index: CodebookIndex, override: bool
) -> dict[str, Any]:
    """The decision's `changes` JSON: per source annotation (and against the decision it supersedes),
    whether the labels are identical, the finding counts, and each differing dimension's category keys."""

    def describe(findings: Findings) -> dict[str, Any]:
        diff = change(findings, gold)
        return {
            "identical": diff.identical,
            "findings": [diff.findings_from, diff.findings_to],
            "dimensions": {
                d: {"from": _keys(before, index), "to": _keys(after, index)}
                for d, (before, after) in diff.dimensions.items()
            },
        }

    out: dict[str, Any] = {
        "annotations": [
            {"annotation": a.pk, "annotator_id": a.assignment.annotator_id, **describe(f)}
            for a, f in zip(labels.annotations, labels.findings, strict=True)
        ],
        "override": override,
    }
    if previous is not None:
        out["previous"] = {"decision": previous.pk, **describe(decision_findings(previous))}
    return out


# --- Deciding ------------------------------------------------------------------------------------------


def gold_from_keys(
    index: CodebookIndex, findings: Sequence[Mapping[str, Sequence[str] | str]], *, complete: bool
) -> Gold:
    """Check a decision's findings (dimension key → category keys) against the codebook and return them as
    category ids. Refused (AdjudicationError listing every problem by finding, dimension and value): no
    finding, an empty finding, an unknown or retired dimension, a category not in the dimension or not
    active (retired, merged, proposed), *pending*, several categories on a single-choice dimension, a value
    on a dimension that does not apply; with `complete`, an applicable dimension left without a value."""
    problems: list[str] = []
    if not findings:
        problems.append("a decision needs at least one finding")
    gold: Gold = []
    for number, values in enumerate(findings, start=1):
        chosen: dict[str, frozenset[int]] = {}
        for key, keys in values.items():
            where = f"finding {number}, dimension {key!r}"
            try:
                dimension = index.dimension(key)
            except UnknownDimensionError:
                problems.append(f"{where}: not a dimension of the codebook")
                continue
            if dimension.retired:
                problems.append(f"{where}: the dimension is retired")
                continue
            texts = [keys] if isinstance(keys, str) else list(keys)
            texts = [t.strip() for t in texts if t.strip()]
            if any(t.casefold() == PENDING for t in texts):
                problems.append(f"{where}: a decision cannot leave a dimension pending; choose a category")
                continue
            ids: list[int] = []
            for text in texts:
                try:
                    category = index.category_by_key(key, text)
                except LookupError:
                    problems.append(f"{where}, value {text!r}: not a category of {dimension.name!r}")
                    continue
                if not category.is_active:
                    status = category.status
                    if category.merged_into_id in index.categories:
                        status += f" into {index.path(category.merged_into_id)!r}"
                    problems.append(f"{where}, value {text!r}: the category is {status}")
                    continue
                ids.append(category.id)
            if not dimension.multiple and len(set(texts)) > 1:
                problems.append(f"{where}: {dimension.name!r} takes one category, got {', '.join(texts)}")
            if ids:
                chosen[key] = frozenset(ids)
        applicable = {d.key for d in index.applicable_dimensions({k: list(v) for k, v in chosen.items()})}
        for key in chosen:
            if key not in applicable:
                on = index.dimension(key).applies_when
                when = f" (only when {on[0]!r} is {on[1]!r})" if on else ""
                problems.append(f"finding {number}, dimension {key!r}: does not apply to this finding{when}")
        if complete:
            for dimension in index.applicable_dimensions({k: list(v) for k, v in chosen.items()}):
                if dimension.key not in chosen:
                    problems.append(f"finding {number}, dimension {dimension.key!r}: choose a category")
        if not values:
            problems.append(f"finding {number}: the finding is empty")
        gold.append({k: v for k, v in chosen.items() if k in applicable})
    if problems:
        raise AdjudicationError("The decision was not saved:", problems)
    return gold


def decide(
    item: Item,
    findings: Sequence[Mapping[str, Sequence[str] | str]],
    *,
    actor: User,
    rationale: str = "",
    expected_decision_id: int | None,
) -> Decision:
    """Record the lead's decision on `item` (provenance ``adjudicated``) and close its Review.

    `findings` are dimension key → category keys, one mapping per gold finding (`gold_from_keys` checks
    them). `expected_decision_id` is the current decision the lead saw when they opened the item (None when
    there was none): if another decision is current now, nothing is written and DecisionConflict says who
    decided and when. A decision that differs from the current one supersedes it (a reversal; the old one
    is kept). Refused with AdjudicationError: `actor` is not a lead or owner of the study, the item's
    annotations are not all submitted, the decision holds what no annotator chose (`overrides_everyone`)
    without a rationale while the study requires one, or it repeats the current decision.
    """
    study = item.study
    if not can_adjudicate(actor, study):
        raise AdjudicationError("Only a lead or an owner of this study can decide its items.")
    index = CodebookIndex.for_study(study)
    gold = gold_from_keys(index, findings, complete=True)
    rationale = rationale.strip()
    with transaction.atomic():
        review = Review.objects.select_for_update().filter(item=item).first()
        current = Decision.objects.filter(item=item, is_current=True).select_related("decided_by").first()
        if (current.pk if current else None) != expected_decision_id:
            raise DecisionConflict(_conflict_message(current, expected_decision_id), current)
        labels = item_labels(item)
        if not labels.complete and not (current is not None and not labels.assignments):
            if labels.assignments:
                raise AdjudicationError(
                    f"This item is not fully annotated yet: {labels.submitted} of {labels.k} annotations "
                    "are submitted. It can be decided once every annotator has submitted."
                )
            raise AdjudicationError("This item has no annotations to decide from.")
        if current is not None and same_labels(decision_findings(current), gold):
            raise AdjudicationError("This is already the current decision: nothing to save.")
        override = overrides_everyone(gold, labels.findings)
        if override and study.require_rationale_on_override and not rationale:
            raise AdjudicationError(
                "This decision differs from every annotator: write a rationale saying why "
                "(the study requires one when a decision overrides everyone)."
            )
        try:
            with transaction.atomic():
                decision = _record(
                    item,
                    gold,
                    Provenance.ADJUDICATED,
                    labels,
                    previous=current,
                    actor=actor,
                    rationale=rationale,
                    override=override,
                    index=index,
                )
        except IntegrityError:
            winner = Decision.objects.filter(item=item, is_current=True).select_related("decided_by").first()
            raise DecisionConflict(_conflict_message(winner, expected_decision_id), winner) from None
        if review is None:
            review = Review.objects.create(item=item, study=study, round_id=labels.round_id)
        review.claimed_by = None
        review.claimed_at = None
        review.save(update_fields=["claimed_by", "claimed_at"])
        _save_review(review, ReviewState.DECIDED, list(review.disagreeing_dimensions or []), labels.round_id)
    return decision


def _conflict_message(current: Decision | None, expected: int | None) -> str:
    if current is None:
        return (
            "The decision you started from is no longer current (it was withdrawn when the annotations "
            "changed). Nothing was saved: reload the item and decide again."
        )
    who = (
        str(current.decided_by)
        if current.decided_by
        else f"an {current.get_provenance_display().lower()} decision"
    )
    when = timezone.localtime(current.decided_at).strftime("%Y-%m-%d %H:%M")
    if expected is None:
        return (
            f"{who} decided this item at {when} while you were working on it. Your decision was not saved: "
            "review the current decision and decide again if you disagree."
        )
    return (
        f"The decision you started from was replaced by a newer one ({who}, {when}). Your decision was not "
        "saved: review the current decision and decide again if you disagree."
    )


def claim(item: Item, user: User) -> bool:
    """Mark that `user` has the item open for adjudication (other leads see it for `CLAIM_TTL`), unless
    another lead's claim still counts (`queries.claimed_recently`). One conditional UPDATE, so of two
    leads opening the item at once only one claims it. Returns whether `user` holds the claim now (False
    too for an item without a Review: nothing to adjudicate)."""
    now = timezone.now()
    free = Q(claimed_by=None) | Q(claimed_by=user) | Q(claimed_at=None) | Q(claimed_at__lte=now - CLAIM_TTL)
    return bool(Review.objects.filter(free, item=item).update(claimed_by=user, claimed_at=now))


# --- Codebook changes ----------------------------------------------------------------------------------


def follow_merge(source: Category, target: Category) -> int:
    """After `source` was merged into `target`, consolidate again the items with an open disagreement or
    an automatic decision whose labels touch `source` (A chose the source and B the target: they now
    agree; a majority may become unanimous). The taxonomy's merge has already moved annotation and gold
    labels (`original_category` keeps the source); `remap` makes the rerun correct even if it had not.
    Runs inside the merge's transaction. Returns how many items were consolidated again."""
    touches = Q(category=source) | Q(original_category=source) | Q(original_category__merged_into=source)
    touched = set(
        LabelValue.objects.filter(touches).values_list("finding__annotation__assignment__item_id", flat=True)
    )
    touched |= set(
        DecisionValue.objects.filter(touches, finding__decision__is_current=True).values_list(
            "finding__decision__item_id", flat=True
        )
    )
    return _rerun(touched, remap={source.pk: target.pk})


def follow_split(mapping: Mapping[int, int]) -> int:
    """Annotation labels were reassigned (`mapping`: LabelValue id → new category id): consolidate again
    the items concerned that have an open disagreement or an automatic decision."""
    touched = set(
        LabelValue.objects.filter(pk__in=list(mapping)).values_list(
            "finding__annotation__assignment__item_id", flat=True
        )
    )
    return _rerun(touched, label_remap=mapping)


def _rerun(item_ids: set[int], **options: Any) -> int:
    if not item_ids:
        return 0
    rerun = Review.objects.filter(item_id__in=item_ids).filter(
        Q(state=ReviewState.DISAGREEMENT)
        | Q(item__decisions__is_current=True, item__decisions__provenance__in=list(AUTOMATIC))
    )
    return consolidate_items(sorted(set(rerun.values_list("item_id", flat=True))), **options)


# --- Importing gold decisions --------------------------------------------------------------------------


@dataclass(frozen=True)
class ImportedDecisions:
    """What `import_decisions` did: items in the file, new decisions (of which `replaced` superseded a
    different current decision) and items whose current decision already held the same labels."""

    items: int
    created: int
    replaced: int
    unchanged: int


@dataclass
class _Planned:
    item: Item
    gold: Gold
    rationale: str
    round_id: int | None


def import_decisions(
    study: Study, rows: Sequence[LabelRow], *, actor: User | None = None
) -> ImportedDecisions:
    """Import gold decisions (provenance ``imported``) from parsed labels-CSV rows (docs/design.md §5).

    Items are found by URL (as written or canonical); labels resolve through the codebook (a key or a path
    of names) and must name active categories; `memo` becomes the rationale; `round`, when given, must be a
    round of the study. The import is all-or-nothing: every problem is collected first and raised as one
    LabelFileError (row, field, value) before anything is written. Re-importing is idempotent: an item whose
    current decision holds the same labels gets no new decision; different labels make a new current
    decision superseding the old one, which is kept.
    """
    index = CodebookIndex.for_study(study)
    problems: list[LabelProblem] = []
    items = _items_by_url(study, {r.item for r in rows})
    rounds = dict(Round.objects.filter(study=study).values_list("number", "id"))
    per_item: dict[int, list[LabelRow]] = defaultdict(list)
    for row in rows:
        item = items.get(row.item)
        if item is None:
            problems.append(
                LabelProblem(row.first_row, "item", row.item, "no item with this URL in the study")
            )
            continue
        if row.round is not None and row.round not in rounds:
            problems.append(
                LabelProblem(row.first_row, "round", str(row.round), "no such round in the study")
            )
            continue
        per_item[item.pk].append(row)
    plans: list[_Planned] = []
    by_id = {item.pk: item for item in items.values()}
    for item_id, group in per_item.items():
        plan = _plan_item(by_id[item_id], group, index, rounds, problems)
        if plan is not None:
            plans.append(plan)
    if problems:
        raise LabelFileError(problems)
    created = replaced = unchanged = 0
    with transaction.atomic():
        for plan in plans:
            outcome = _import_one(plan, index, actor)
            created += outcome in ("created", "replaced")
            replaced += outcome == "replaced"
            unchanged += outcome == "unchanged"
    return ImportedDecisions(items=len(plans), created=created, replaced=replaced, unchanged=unchanged)


def _items_by_url(study: Study, urls: set[str]) -> dict[str, Item]:
    """URL as written in the file → item, trying the canonical spelling when the exact one is unknown."""
    canonical: dict[str, str] = {}
    for url in urls:
        try:
            canonical[url] = canonical_url(url)
        except ValueError:
            canonical[url] = url
    found = {i.url: i for i in Item.objects.filter(study=study, url__in=set(urls) | set(canonical.values()))}
    return {
        url: found.get(url) or found[canonical[url]]
        for url in urls
        if url in found or canonical[url] in found
    }


def _plan_item(
    item: Item,
    group: list[LabelRow],
    index: CodebookIndex,
    rounds: Mapping[int, int],
    problems: list[LabelProblem],
) -> _Planned | None:
    before = len(problems)
    annotators = list(dict.fromkeys(r.annotator for r in group))
    if len(annotators) > 1:
        second = next(r for r in group if r.annotator == annotators[1])
        problems.append(
            LabelProblem(
                second.first_row,
                "annotator",
                second.annotator,
                f"the item's decision rows name several annotators ({', '.join(map(repr, annotators))}): "
                "a gold decision is one set of labels",
            )
        )
    round_numbers = list(dict.fromkeys(r.round for r in group if r.round is not None))
    if len(round_numbers) > 1:
        second = next(r for r in group if r.round == round_numbers[1])
        problems.append(
            LabelProblem(
                second.first_row, "round", str(second.round), "the item's decision rows name several rounds"
            )
        )
    by_number: dict[int, dict[str, list[tuple[int, int]]]] = {}
    first_rows: dict[int, int] = {}
    for row in sorted(group, key=lambda r: r.finding):
        finding = by_number.setdefault(row.finding, {})
        first_rows[row.finding] = min(first_rows.get(row.finding, row.first_row), row.first_row)
        for label in row.labels:
            try:
                dimension = index.dimension(label.dimension)
            except UnknownDimensionError as exc:
                problems.append(LabelProblem(label.row, "dimension", label.dimension, str(exc)))
                continue
            if dimension.retired:
                problems.append(
                    LabelProblem(label.row, "dimension", label.dimension, "the dimension is retired")
                )
                continue
            try:
                category_id = index.resolve(dimension.key, label.text)
            except LabelError as exc:
                problems.append(LabelProblem(label.row, "label", label.text, str(exc)))
                continue
            category = index.categories[category_id]
            if not category.is_active:
                status = category.status
                if category.merged_into_id in index.categories:
                    status += f" into {index.path(category.merged_into_id)!r}"
                problems.append(
                    LabelProblem(label.row, "label", label.text, f"{index.path(category_id)!r} is {status}")
                )
                continue
            finding.setdefault(dimension.key, []).append((category_id, label.row))
    gold: Gold = []
    for number in sorted(by_number):
        values = by_number[number]
        for key, chosen in values.items():
            dimension = index.dimension(key)
            if not dimension.multiple and len({c for c, _ in chosen}) > 1:
                problems.append(
                    LabelProblem(
                        chosen[1][1],
                        "label",
                        index.categories[chosen[1][0]].key,
                        f"{dimension.name!r} takes one category; finding {number} already has "
                        f"{index.path(chosen[0][0])!r}",
                    )
                )
        ids = {k: frozenset(c for c, _ in v) for k, v in values.items()}
        applying = [d.key for d in index.applicable_dimensions({k: list(v) for k, v in ids.items()})]
        applicable = set(applying)
        for key, chosen in values.items():
            if key not in applicable:
                on = index.dimension(key).applies_when
                when = f" (only when {on[0]!r} is {on[1]!r})" if on else ""
                problems.append(
                    LabelProblem(
                        chosen[0][1],
                        "dimension",
                        key,
                        f"does not apply to finding {number} of this item{when}",
                    )
                )
        if len(problems) == before:  # a gold finding fills every dimension that applies to it
            for key in (k for k in applying if k not in values):
                problems.append(
                    LabelProblem(
                        first_rows[number],
                        "dimension",
                        key,
                        f"finding {number} of item {item.url} leaves this dimension empty, but it applies "
                        "to the finding; add a row with its label",
                    )
                )
        if ids:
            gold.append(ids)
    if len(problems) > before:
        return None
    memos = list(dict.fromkeys(r.memo.strip() for r in group if r.memo.strip()))
    round_id = rounds[round_numbers[0]] if round_numbers else None
    return _Planned(item, gold, "\n\n".join(memos), round_id)


def _import_one(plan: _Planned, index: CodebookIndex, actor: User | None) -> str:
    item = Item.objects.select_for_update().get(pk=plan.item.pk)
    current = Decision.objects.filter(item=item, is_current=True).first()
    labels = item_labels(item)
    if current is not None and same_labels(decision_findings(current), plan.gold):
        outcome = "unchanged"
    else:
        _record(
            item,
            plan.gold,
            Provenance.IMPORTED,
            labels,
            previous=current,
            actor=actor,
            rationale=plan.rationale,
            round_id=plan.round_id,
            override=bool(labels.findings) and overrides_everyone(plan.gold, labels.findings),
            index=index,
        )
        outcome = "replaced" if current is not None else "created"
    review, created = Review.objects.select_for_update().get_or_create(
        item=item, defaults={"study_id": item.study_id, "round_id": plan.round_id or labels.round_id}
    )
    _save_review(
        review,
        ReviewState.DECIDED,
        list(review.disagreeing_dimensions or []),
        plan.round_id or labels.round_id,
        force=created,
    )
    return outcome
