"""Consolidation, decisions, reversals and codebook merges against the database."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.core.management import call_command

from apps.accounts.models import ConsolidationRule, Study, User
from apps.adjudication.models import Decision, Provenance, Review, ReviewState
from apps.adjudication.queries import decision_findings
from apps.adjudication.services import AdjudicationError, DecisionConflict, decide
from apps.adjudication.status import study_status
from apps.corpus.models import Item
from apps.taxonomy.models import Category
from apps.taxonomy.services import merge_category, retire_category
from tests.adjudication.conftest import CRASH, HANG, HOWTO, submit

pytestmark = pytest.mark.django_db

MakeItem = Callable[..., Item]


def keys(decision: Decision) -> list[dict[str, set[str]]]:
    names = dict(Category.objects.values_list("id", "key"))
    return [{d: {names[c] for c in ids} for d, ids in f.items()} for f in decision_findings(decision)]


def test_identical_labels_become_a_unanimous_decision_once_everyone_submitted(
    make_item: MakeItem, annotator_a: User, annotator_b: User
) -> None:
    item = make_item(annotator_a, annotator_b)
    first = submit(item, annotator_a, CRASH)
    assert Review.objects.get(item=item).state == ReviewState.ANNOTATING
    assert not Decision.objects.filter(item=item).exists()
    second = submit(item, annotator_b, CRASH)
    decision = Decision.objects.get(item=item)
    assert decision.provenance == Provenance.UNANIMOUS
    assert decision.decided_by is None and decision.is_current
    assert keys(decision) == [{"type": {"fault"}, "symptom": {"crash"}, "fix": {"config", "code"}}]
    assert set(decision.source_annotations.all()) == {first, second}
    assert all(entry["identical"] for entry in decision.changes["annotations"])
    assert decision.codebook_version == 1
    assert Review.objects.get(item=item).state == ReviewState.DECIDED


def test_different_labels_open_a_disagreement_naming_the_dimension(
    make_item: MakeItem, annotator_a: User, annotator_b: User
) -> None:
    item = make_item(annotator_a, annotator_b)
    submit(item, annotator_a, CRASH)
    submit(item, annotator_b, HANG)
    review = Review.objects.get(item=item)
    assert (review.state, review.disagreeing_dimensions) == (ReviewState.DISAGREEMENT, ["symptom"])
    assert not Decision.objects.filter(item=item).exists()


def test_pending_on_both_sides_is_still_a_disagreement(
    make_item: MakeItem, annotator_a: User, annotator_b: User
) -> None:
    item = make_item(annotator_a, annotator_b)
    pending = [{"type": ["fault"], "symptom": "pending", "fix": ["code"]}]
    submit(item, annotator_a, pending)
    submit(item, annotator_b, pending)
    review = Review.objects.get(item=item)
    assert (review.state, review.disagreeing_dimensions) == (ReviewState.DISAGREEMENT, ["symptom"])


def test_a_strict_majority_of_three_decides_under_the_majority_rule(
    study: Study, make_item: MakeItem, annotator_a: User, annotator_b: User, annotator_c: User
) -> None:
    study.consolidation_rule = ConsolidationRule.MAJORITY
    study.save()
    item = make_item(annotator_a, annotator_b, annotator_c)
    submit(item, annotator_a, CRASH)
    submit(item, annotator_b, HANG)
    submit(item, annotator_c, CRASH)
    decision = Decision.objects.get(item=item)
    assert decision.provenance == Provenance.MAJORITY
    assert keys(decision)[0]["symptom"] == {"crash"}
    bob = next(e for e in decision.changes["annotations"] if e["annotator_id"] == annotator_b.pk)
    assert bob["dimensions"] == {"symptom": {"from": ["hang"], "to": ["crash"]}}


def test_the_same_three_labels_stay_a_disagreement_under_the_unanimous_rule(
    make_item: MakeItem, annotator_a: User, annotator_b: User, annotator_c: User
) -> None:
    item = make_item(annotator_a, annotator_b, annotator_c)
    for user, labels in ((annotator_a, CRASH), (annotator_b, HANG), (annotator_c, CRASH)):
        submit(item, user, labels)
    assert Review.objects.get(item=item).state == ReviewState.DISAGREEMENT


def test_an_edit_before_the_decision_consolidates_again(
    make_item: MakeItem, annotator_a: User, annotator_b: User
) -> None:
    item = make_item(annotator_a, annotator_b)
    submit(item, annotator_a, CRASH)
    submit(item, annotator_b, HANG)
    assert Review.objects.get(item=item).state == ReviewState.DISAGREEMENT
    submit(item, annotator_b, CRASH)
    assert Review.objects.get(item=item).state == ReviewState.DECIDED
    assert Decision.objects.get(item=item).provenance == Provenance.UNANIMOUS


def test_the_real_submission_service_feeds_consolidation(
    make_item: MakeItem, annotator_a: User, annotator_b: User
) -> None:
    from apps.annotation.services import submit_annotation

    item = make_item(annotator_a, annotator_b)
    payload = {"findings": [{"values": {"type": ["howto"]}}], "memo": ""}
    for user in (annotator_a, annotator_b):
        assignment = item.assignments.get(annotator=user)
        submit_annotation(assignment, payload, user, codebook_version=1)
    assert Decision.objects.get(item=item).provenance == Provenance.UNANIMOUS


def test_a_merge_resolves_a_disagreement_between_source_and_target(
    make_item: MakeItem, annotator_a: User, annotator_b: User, lead: User
) -> None:
    item = make_item(annotator_a, annotator_b)
    submit(item, annotator_a, CRASH)
    submit(item, annotator_b, HANG)
    hang, crash = Category.objects.get(key="hang"), Category.objects.get(key="crash")
    merge_category(hang, crash, actor=lead)
    decision = Decision.objects.get(item=item, is_current=True)
    assert decision.provenance == Provenance.UNANIMOUS
    assert keys(decision)[0]["symptom"] == {"crash"}
    assert Review.objects.get(item=item).state == ReviewState.DECIDED


def test_a_merge_turns_a_majority_into_a_unanimous_decision_and_keeps_the_old_one(
    study: Study, make_item: MakeItem, annotator_a: User, annotator_b: User, annotator_c: User, lead: User
) -> None:
    study.consolidation_rule = ConsolidationRule.MAJORITY
    study.save()
    item = make_item(annotator_a, annotator_b, annotator_c)
    for user, labels in ((annotator_a, CRASH), (annotator_b, HANG), (annotator_c, CRASH)):
        submit(item, user, labels)
    majority = Decision.objects.get(item=item)
    merge_category(Category.objects.get(key="hang"), Category.objects.get(key="crash"), actor=lead)
    current = Decision.objects.get(item=item, is_current=True)
    assert current.provenance == Provenance.UNANIMOUS
    assert current.supersedes == majority
    majority.refresh_from_db()
    assert not majority.is_current


def test_a_merge_leaves_unrelated_disagreements_and_lead_decisions_alone(
    make_item: MakeItem, annotator_a: User, annotator_b: User, lead: User
) -> None:
    other = make_item(annotator_a, annotator_b)
    submit(other, annotator_a, [{"type": ["fault"], "symptom": ["wrong-output"], "fix": ["code"]}])
    submit(other, annotator_b, [{"type": ["fault"], "symptom": ["wrong-output"], "fix": ["config"]}])
    decided = make_item(annotator_a, annotator_b)
    submit(decided, annotator_a, CRASH)
    submit(decided, annotator_b, HANG)
    lead_decision = decide(decided, HANG, actor=lead, expected_decision_id=None)
    merge_category(Category.objects.get(key="hang"), Category.objects.get(key="crash"), actor=lead)
    assert Review.objects.get(item=other).state == ReviewState.DISAGREEMENT
    assert Decision.objects.get(item=decided, is_current=True) == lead_decision
    assert keys(lead_decision)[0]["symptom"] == {"crash"}  # the gold label followed the merge


# --- Deciding --------------------------------------------------------------------------------------


@pytest.fixture
def disagreement(make_item: MakeItem, annotator_a: User, annotator_b: User) -> Item:
    item = make_item(annotator_a, annotator_b)
    submit(item, annotator_a, CRASH, memo="Stack trace shows SIGABRT.")
    submit(item, annotator_b, HANG, memo="It froze first.")
    return item


def test_a_lead_picks_one_annotators_labels_and_the_review_closes(disagreement: Item, lead: User) -> None:
    decision = decide(disagreement, HANG, actor=lead, expected_decision_id=None)
    assert decision.provenance == Provenance.ADJUDICATED
    assert decision.decided_by == lead
    assert decision.changes["override"] is False
    assert decision.source_annotations.count() == 2
    alice, bob = decision.changes["annotations"]
    assert alice["dimensions"] == {"symptom": {"from": ["crash"], "to": ["hang"]}}
    assert bob["identical"] is True
    review = Review.objects.get(item=disagreement)
    assert (review.state, review.claimed_by) == (ReviewState.DECIDED, None)


def test_overriding_everyone_needs_a_rationale_when_the_study_says_so(
    study: Study, disagreement: Item, lead: User
) -> None:
    wrong = [{"type": ["fault"], "symptom": ["wrong-output"], "fix": ["upgrade"]}]
    with pytest.raises(AdjudicationError, match="rationale"):
        decide(disagreement, wrong, actor=lead, expected_decision_id=None)
    decision = decide(
        disagreement, wrong, actor=lead, rationale="Both missed the log.", expected_decision_id=None
    )
    assert decision.changes["override"] is True
    assert decision.rationale == "Both missed the log."
    study.require_rationale_on_override = False
    study.save()
    other = decide(disagreement, HOWTO, actor=lead, expected_decision_id=decision.pk)
    assert other.rationale == ""


def test_composing_extra_findings_and_values_nobody_chose_is_recorded(disagreement: Item, lead: User) -> None:
    composed = [*CRASH, {"type": ["fault"], "symptom": ["segfault"], "fix": ["upgrade"]}]
    decision = decide(disagreement, composed, actor=lead, rationale="Two faults.", expected_decision_id=None)
    assert len(decision_findings(decision)) == 2
    alice = decision.changes["annotations"][0]
    assert alice["findings"] == [1, 2]


def test_a_reversal_supersedes_and_keeps_the_old_decision(
    disagreement: Item, lead: User, owner: User
) -> None:
    first = decide(disagreement, CRASH, actor=lead, expected_decision_id=None)
    second = decide(
        disagreement, HANG, actor=owner, rationale="The hang came first.", expected_decision_id=first.pk
    )
    first.refresh_from_db()
    assert (first.is_current, second.is_current, second.supersedes) == (False, True, first)
    assert second.changes["previous"]["dimensions"] == {"symptom": {"from": ["crash"], "to": ["hang"]}}
    assert Decision.objects.filter(item=disagreement).count() == 2


def test_a_stale_expected_decision_is_a_conflict_naming_who_decided(
    disagreement: Item, lead: User, owner: User
) -> None:
    first = decide(disagreement, CRASH, actor=lead, expected_decision_id=None)
    with pytest.raises(DecisionConflict, match="lena decided this item") as caught:
        decide(disagreement, HANG, actor=owner, expected_decision_id=None)
    assert caught.value.current == first
    second = decide(disagreement, HANG, actor=owner, expected_decision_id=first.pk)
    with pytest.raises(DecisionConflict, match="replaced by a newer one"):
        decide(disagreement, HOWTO, actor=lead, rationale="x", expected_decision_id=first.pk)
    assert Decision.objects.get(item=disagreement, is_current=True) == second


def test_repeating_the_current_decision_is_refused(disagreement: Item, lead: User) -> None:
    first = decide(disagreement, CRASH, actor=lead, expected_decision_id=None)
    with pytest.raises(AdjudicationError, match="already the current decision"):
        decide(disagreement, CRASH, actor=lead, expected_decision_id=first.pk)


def test_an_annotator_or_outsider_cannot_decide(
    disagreement: Item, annotator_a: User, outsider: User
) -> None:
    for user in (annotator_a, outsider):
        with pytest.raises(AdjudicationError, match="Only a lead or an owner"):
            decide(disagreement, CRASH, actor=user, expected_decision_id=None)
    assert not Decision.objects.exists()


def test_an_item_not_fully_annotated_cannot_be_decided(
    make_item: MakeItem, annotator_a: User, annotator_b: User, lead: User
) -> None:
    item = make_item(annotator_a, annotator_b)
    submit(item, annotator_a, CRASH)
    with pytest.raises(AdjudicationError, match="1 of 2 annotations"):
        decide(item, CRASH, actor=lead, expected_decision_id=None)
    bare = make_item()
    with pytest.raises(AdjudicationError, match="no annotations"):
        decide(bare, CRASH, actor=lead, expected_decision_id=None)


@pytest.mark.parametrize(
    ("findings", "message"),
    [
        ([{"type": ["fault"], "symptom": ["explosion"], "fix": ["code"]}], "'explosion': not a category"),
        (
            [{"type": ["fault"], "mood": ["sad"], "symptom": ["crash"], "fix": ["code"]}],
            "'mood': not a dimension",
        ),
        ([{"type": ["fault"], "symptom": "pending", "fix": ["code"]}], "cannot leave a dimension pending"),
        ([{"type": ["fault", "howto"], "symptom": ["crash"], "fix": ["code"]}], "takes one category"),
        ([{"type": ["howto"], "symptom": ["crash"]}], "does not apply"),
        ([{"type": ["fault"], "fix": ["code"]}], "'symptom': choose a category"),
        ([], "at least one finding"),
        ([{}], "the finding is empty"),
    ],
)
def test_labels_outside_the_codebook_rules_are_refused_by_name(
    disagreement: Item, lead: User, findings: list[dict[str, list[str] | str]], message: str
) -> None:
    with pytest.raises(AdjudicationError) as caught:
        decide(disagreement, findings, actor=lead, rationale="r", expected_decision_id=None)
    assert message in str(caught.value)
    assert not Decision.objects.exists()


def test_a_retired_category_is_refused(disagreement: Item, lead: User) -> None:
    retire_category(Category.objects.get(key="upgrade"), actor=lead)
    findings = [{"type": ["fault"], "symptom": ["crash"], "fix": ["upgrade"]}]
    with pytest.raises(AdjudicationError, match="'upgrade': the category is retired"):
        decide(disagreement, findings, actor=lead, rationale="r", expected_decision_id=None)


# --- Status ----------------------------------------------------------------------------------------


def test_study_status_counts_decisions_by_provenance_and_open_disagreements(
    study: Study,
    make_item: MakeItem,
    annotator_a: User,
    annotator_b: User,
    lead: User,
    capsys: pytest.CaptureFixture[str],
) -> None:
    agreed = make_item(annotator_a, annotator_b)
    submit(agreed, annotator_a, HOWTO)
    submit(agreed, annotator_b, HOWTO)
    for _ in range(2):
        item = make_item(annotator_a, annotator_b)
        submit(item, annotator_a, CRASH)
        submit(item, annotator_b, HANG)
    decide(item, CRASH, actor=lead, expected_decision_id=None)
    waiting = make_item(annotator_a, annotator_b)
    submit(waiting, annotator_a, HOWTO)
    status = study_status(study)
    assert status["decisions"] == {
        "unanimous": 1,
        "majority": 0,
        "discussed": 0,
        "adjudicated": 1,
        "imported": 0,
    }
    assert status["disagreements_open"] == 1
    assert status["assignments"] == {"open": 1, "submitted": 7}
    call_command("study_status", study.slug, "--format", "text")
    assert "disagreements open   1" in capsys.readouterr().out
