"""A submission's consolidation (`consolidate_submission`, PostgreSQL) ends where `consolidate_item` does.

The submission service locks the item's row and says so in its signal; on PostgreSQL adjudication then
consolidates with hand-written statements instead of the ORM. Each scenario below is labelled twice, on
two items, once through each path, and both must end in the same Review, decision and `changes`; and
`consolidate_item` run again afterwards must find nothing to change. On SQLite both submissions take
`consolidate_item`, so the comparison holds trivially there.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone

from apps.accounts.models import ConsolidationRule, Study, User
from apps.adjudication.models import Decision, Review, ReviewState
from apps.adjudication.services import consolidate, consolidate_item, sql
from apps.adjudication.services.sql import SubmissionState
from apps.annotation.completion import ready
from apps.annotation.models import Assignment, Round
from apps.corpus.models import Item
from tests.adjudication.conftest import CRASH, HANG, HOWTO, Labels, submit
from tests.adjudication.test_services import keys

pytestmark = pytest.mark.django_db

MakeItem = Callable[..., Item]

PENDING_SYMPTOM: Labels = [{"type": ["fault"], "symptom": "pending", "fix": ["code"]}]
TWO_FINDINGS: Labels = [*CRASH, *HOWTO]


def outcome(item: Item) -> dict[str, Any]:
    """What consolidation decided for the item, with annotation ids replaced by their annotators."""
    review = Review.objects.get(item=item)
    state: dict[str, Any] = {
        "review": (review.state, review.disagreeing_dimensions, review.round_id),
        "decisions": Decision.objects.filter(item=item).count(),
    }
    current = Decision.objects.filter(item=item, is_current=True).first()
    if current is not None:
        changes = dict(current.changes)
        changes["annotations"] = sorted(
            ({k: v for k, v in entry.items() if k != "annotation"} for entry in changes["annotations"]),
            key=lambda entry: entry["annotator_id"],
        )
        state.update(
            provenance=current.provenance,
            gold=keys(current),
            changes=changes,
            sources=sorted(a.assignment.annotator_id for a in current.source_annotations.all()),
            round=current.round_id,
            version=current.codebook_version,
            decided_by=current.decided_by_id,
        )
    return state


def label_both_ways(
    make_item: MakeItem, annotators: list[User], labels: list[Labels]
) -> tuple[dict[str, Any], dict[str, Any], Item]:
    """The outcome of the same labels through the submission's path and through `consolidate_item`, after
    each submission (and the item labelled through the submission's path)."""
    short, orm = make_item(*annotators), make_item(*annotators)
    outcomes: list[tuple[dict[str, Any], dict[str, Any]]] = []
    for user, findings in zip(annotators, labels, strict=True):
        submit(short, user, findings, item_locked=True)
        submit(orm, user, findings, item_locked=False)
        outcomes.append((outcome(short), outcome(orm)))
    for step, (a, b) in enumerate(outcomes, start=1):
        assert a == b, f"after submission {step}"
    return outcomes[-1][0], outcomes[-1][1], short


@pytest.mark.parametrize(
    ("labels", "expected_state"),
    [
        ([CRASH, CRASH], ReviewState.DECIDED),
        ([CRASH, HANG], ReviewState.DISAGREEMENT),
        ([PENDING_SYMPTOM, PENDING_SYMPTOM], ReviewState.DISAGREEMENT),
        ([TWO_FINDINGS, TWO_FINDINGS], ReviewState.DECIDED),
        ([TWO_FINDINGS, CRASH], ReviewState.DISAGREEMENT),
        ([HOWTO, HOWTO], ReviewState.DECIDED),
    ],
    ids=["unanimous", "one-dimension-differs", "pending", "two-findings", "finding-count-differs", "howto"],
)
def test_a_submission_consolidates_as_consolidate_item_does(
    make_item: MakeItem,
    annotator_a: User,
    annotator_b: User,
    labels: list[Labels],
    expected_state: str,
) -> None:
    short, orm, _ = label_both_ways(make_item, [annotator_a, annotator_b], labels)
    assert short == orm
    assert short["review"][0] == expected_state


@pytest.mark.parametrize("rule", [ConsolidationRule.MAJORITY, ConsolidationRule.UNANIMOUS])
def test_three_annotators_consolidate_alike_under_either_rule(
    study: Study,
    make_item: MakeItem,
    annotator_a: User,
    annotator_b: User,
    annotator_c: User,
    rule: ConsolidationRule,
) -> None:
    study.consolidation_rule = rule
    study.save()
    short, orm, _ = label_both_ways(make_item, [annotator_a, annotator_b, annotator_c], [CRASH, HANG, CRASH])
    assert short == orm
    expected = ReviewState.DECIDED if rule == ConsolidationRule.MAJORITY else ReviewState.DISAGREEMENT
    assert short["review"][0] == expected


@pytest.mark.parametrize("labels", [[CRASH, CRASH], [CRASH, HANG]], ids=["decided", "disagreement"])
def test_consolidate_item_finds_nothing_to_change_after_a_submission(
    make_item: MakeItem, annotator_a: User, annotator_b: User, labels: list[Labels]
) -> None:
    _, _, item = label_both_ways(make_item, [annotator_a, annotator_b], labels)
    review = Review.objects.get(item=item)
    decisions = list(Decision.objects.filter(item=item).values_list("id", "is_current"))
    consolidate_item(item.pk)
    again = Review.objects.get(item=item)
    assert (again.state, again.disagreeing_dimensions, again.updated_at) == (
        review.state,
        review.disagreeing_dimensions,
        review.updated_at,
    )
    assert list(Decision.objects.filter(item=item).values_list("id", "is_current")) == decisions


def test_the_first_submission_of_an_item_opens_its_review_as_annotating(
    make_item: MakeItem, annotator_a: User, annotator_b: User
) -> None:
    item = make_item(annotator_a, annotator_b)
    assert not Review.objects.filter(item=item).exists()
    submit(item, annotator_a, CRASH)
    review = Review.objects.get(item=item)
    assert (review.state, review.disagreeing_dimensions) == (ReviewState.ANNOTATING, [])
    assert review.round_id is not None
    assert not Decision.objects.filter(item=item).exists()


@pytest.mark.skipif(connection.vendor != "postgresql", reason="the submission's short path")
def test_a_review_changed_after_the_read_gets_no_decision_from_the_short_path(
    make_item: MakeItem, annotator_a: User, annotator_b: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The completing submission writes the Review and the decision in one statement, gated on the Review
    being as it was read: when a lead changed it meanwhile, nothing is written and `consolidate_item`
    decides instead."""
    item = make_item(annotator_a, annotator_b)
    submit(item, annotator_a, CRASH)
    read = sql.SUBMISSION_STATE.run

    def read_then_a_lead_moves(params: dict[str, Any]) -> Any:
        rows = read(params)
        Review.objects.filter(item=item).update(state=ReviewState.DISAGREEMENT)  # committed meanwhile
        return rows

    fallbacks: list[int] = []
    monkeypatch.setattr(sql.SUBMISSION_STATE, "run", read_then_a_lead_moves)
    monkeypatch.setattr(consolidate, "consolidate_item", lambda item_id, **_: fallbacks.append(item_id))
    submit(item, annotator_b, CRASH)
    assert fallbacks == [item.pk]
    assert not Decision.objects.filter(item=item).exists()
    assert Review.objects.get(item=item).state == ReviewState.DISAGREEMENT


@pytest.mark.parametrize("locked", [True, False], ids=["submission-path", "consolidate-item"])
def test_an_item_assigned_to_one_annotator_waits_after_their_submission_and_is_never_unanimous(
    make_item: MakeItem, annotator_a: User, locked: bool
) -> None:
    item = make_item(annotator_a)  # the other annotator's labels never arrived
    submit(item, annotator_a, CRASH, item_locked=locked)
    assert Review.objects.get(item=item).state == ReviewState.ANNOTATING
    assert not Decision.objects.filter(item=item).exists()


@pytest.mark.parametrize("locked", [True, False], ids=["submission-path", "consolidate-item"])
def test_an_item_waits_until_as_many_annotators_as_the_rounds_overlap_submitted(
    make_item: MakeItem,
    round1: Round,
    annotator_a: User,
    annotator_b: User,
    annotator_c: User,
    locked: bool,
) -> None:
    round1.params = {"assignment": {"annotators": ["alice", "bob", "carol"], "overlap": 3}}
    round1.save()
    item = make_item(annotator_a, annotator_b)
    submit(item, annotator_a, CRASH, item_locked=locked)
    submit(item, annotator_b, CRASH, item_locked=locked)
    assert Review.objects.get(item=item).state == ReviewState.ANNOTATING
    assert not Decision.objects.filter(item=item).exists()

    # the third annotator of the overlap joins the round
    Assignment.objects.create(study=item.study, round=round1, item=item, annotator=annotator_c, position=2)
    submit(item, annotator_c, CRASH, item_locked=locked)
    assert Decision.objects.get(item=item, is_current=True).provenance == "unanimous"


@pytest.mark.parametrize(
    ("recorded", "expected"),
    [("3", 3), (None, 2), ("0", 2), ("two", 2)],
    ids=["recorded", "none-recorded", "zero", "not-a-number"],
)
def test_the_submission_state_judges_a_round_by_its_recorded_overlap_else_the_studys(
    recorded: str | None, expected: int
) -> None:
    """As `Round.assigned_overlap` reads it: the round's recorded overlap when it is a positive whole
    number, the study's otherwise."""
    state = SubmissionState(
        study_id=1, rule="unanimous", round_id=1, total=3, done=3, has_current=False, review_id=None,
        review_state=None, dimensions=None, review_round=None, round_overlap=recorded, study_overlap=2,
        opened=False,
    )  # fmt: skip
    assert state.overlap == expected


@pytest.mark.skipif(connection.vendor != "postgresql", reason="the submission's short path")
@pytest.mark.parametrize(
    "recorded", [None, 1, 2, 3, 0, -1, 2.5, 3.0, True, "3", "two"], ids=lambda r: f"overlap-{r!r}"
)
@pytest.mark.parametrize("assigned", [1, 2, 3])
def test_the_state_statement_opens_the_review_exactly_while_the_round_is_not_complete(
    make_item: MakeItem,
    round1: Round,
    annotator_a: User,
    annotator_b: User,
    annotator_c: User,
    recorded: object,
    assigned: int,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The statement's own test of completion (SQL) and `ready` (Python) agree: after each submission of a
    fresh item, the Review was opened by the statement (no other statement ran) exactly when `ready` says
    the round is not complete, with the round's overlap as `Round.assigned_overlap` reads it (a positive
    JSON integer; a string, a fraction or a boolean leave the study's), which the lock and the ORM path
    read too. What the statement reads, `SubmissionState.overlap` reads the same."""
    round1.params = {} if recorded is None else {"assignment": {"overlap": recorded}}
    round1.save()
    annotators = [annotator_a, annotator_b, annotator_c][:assigned]
    inserted: list[dict[str, Any]] = []
    insert = sql.INSERT_REVIEW.run
    monkeypatch.setattr(sql.INSERT_REVIEW, "run", lambda params: inserted.append(params) or insert(params))
    for done, user in enumerate(annotators, start=1):
        item = make_item(*annotators)  # a fresh item, its Review not opened yet, `done - 1` others submitted
        for earlier in annotators[: done - 1]:
            submit(item, earlier, CRASH, item_locked=False)
        Review.objects.filter(item=item).delete()
        inserted.clear()
        submit(item, user, CRASH)
        overlap = round1.assigned_overlap or item.study.overlap
        read = sql.read_submission_state(item.pk, now=timezone.now())
        assert read is not None and read.state.overlap == overlap, (recorded, read)
        complete = ready(submitted=done, assigned=assigned, overlap=overlap)
        review = Review.objects.get(item=item)
        if complete:
            assert review.state != ReviewState.ANNOTATING, (done, assigned, recorded)
        else:
            assert (review.state, inserted) == (ReviewState.ANNOTATING, []), (done, assigned, recorded)
