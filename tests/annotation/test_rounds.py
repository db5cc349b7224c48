"""Rounds on the database: reproducible recorded samples, balanced assignment with exactly k, rebalancing."""

from __future__ import annotations

from collections import Counter

import pytest

from apps.accounts.models import Study, User
from apps.annotation.models import Annotation, Assignment, AssignmentStatus, Round, RoundItem
from apps.annotation.services import (
    RoundError,
    add_items_to_round,
    assign_round,
    draw_round,
    reassign,
    screen_items,
)
from apps.corpus.models import Item, Relevance
from tests.annotation.conftest import make_round
from tests.factories import StudyFactory

pytestmark = pytest.mark.django_db


def _round_items(round_: Round) -> list[int]:
    return list(RoundItem.objects.filter(round=round_).order_by("position").values_list("item_id", flat=True))


def test_sampling_is_reproducible_and_recorded_on_the_round(
    study: Study, items: list[Item], lead: User
) -> None:
    first = draw_round(study, number=1, size=5, seed=42, actor=lead)
    drawn = _round_items(first.round)
    RoundItem.objects.filter(round=first.round).delete()
    first.round.delete()
    again = draw_round(study, number=1, size=5, seed=42, actor=lead)
    assert _round_items(again.round) == drawn
    round_ = Round.objects.get(study=study, number=1)
    assert (round_.method, round_.seed, round_.requested_size, round_.stratify_field) == (
        "uniform",
        42,
        5,
        "",
    )
    assert round_.params["population"] == 12
    assert round_.created_by == lead


def test_another_seed_draws_another_sample(study: Study, items: list[Item]) -> None:
    a = _round_items(draw_round(study, number=1, size=6, seed=1).round)
    RoundItem.objects.all().delete()
    b = _round_items(draw_round(study, number=2, size=6, seed=2).round)
    assert a != b


def test_a_second_round_never_redraws_items_of_the_first(study: Study, items: list[Item]) -> None:
    first = set(_round_items(draw_round(study, number=1, size=6, seed=7).round))
    second = set(_round_items(draw_round(study, number=2, size=6, seed=7).round))
    assert first.isdisjoint(second)
    assert first | second == {i.pk for i in items}


def test_irrelevant_items_are_never_drawn(study: Study, items: list[Item], lead: User) -> None:
    screen_items(study, [i.pk for i in items[:4]], Relevance.IRRELEVANT, reason="not distributed", actor=lead)
    drawn = set(_round_items(draw_round(study, number=1, size=8, seed=3).round))
    assert drawn.isdisjoint({i.pk for i in items[:4]})
    with pytest.raises(RoundError, match="only 0 items"):
        draw_round(study, number=2, size=1, seed=3)


def test_screening_irrelevant_needs_a_reason(study: Study, items: list[Item]) -> None:
    with pytest.raises(RoundError, match="why"):
        screen_items(study, [items[0].pk], Relevance.IRRELEVANT, reason=" ")


def test_stratified_sample_is_proportional_and_records_the_strata(study: Study, items: list[Item]) -> None:
    result = draw_round(study, number=1, size=6, seed=11, stratify_field="source")
    sources = Counter(Item.objects.filter(pk__in=_round_items(result.round)).values_list("source", flat=True))
    assert sources == {"github": 3, "stackoverflow": 3}
    assert result.round.method == "stratified"
    assert result.round.params["strata"]["github"] == {"population": 6, "drawn": 3}


def test_stratifying_by_a_metadata_key(study: Study, items: list[Item]) -> None:
    result = draw_round(study, number=1, size=6, seed=5, stratify_field="framework")
    frameworks = Counter(
        Item.objects.filter(pk__in=_round_items(result.round)).values_list("metadata__framework", flat=True)
    )
    assert frameworks == {"horovod": 2, "pytorch": 4}


def test_stratifying_by_an_absent_field_is_refused_by_name(study: Study, items: list[Item]) -> None:
    with pytest.raises(RoundError, match="'nothing-here'"):
        draw_round(study, number=1, size=2, seed=1, stratify_field="nothing-here")


def test_drawing_again_with_the_same_parameters_changes_nothing(study: Study, items: list[Item]) -> None:
    first = draw_round(study, number=1, size=4, seed=9)
    again = draw_round(study, number=1, size=4, seed=9)
    assert not again.created
    assert _round_items(again.round) == _round_items(first.round)
    with pytest.raises(RoundError, match="already holds 4 items"):
        draw_round(study, number=1, size=4, seed=10)


def test_a_sample_larger_than_the_population_is_refused(study: Study, items: list[Item]) -> None:
    with pytest.raises(RoundError, match="Cannot draw 13 items"):
        draw_round(study, number=1, size=13, seed=1)
    assert not Round.objects.exists()


def test_every_item_goes_to_exactly_k_annotators_with_balanced_loads(
    study: Study, items: list[Item], annotator_a: User, annotator_b: User, carol: User
) -> None:
    draw_round(study, number=1, size=10, seed=4)
    result = assign_round(study, 1, ["alice", "bob", "carol"], overlap=2)
    per_item = Counter(Assignment.objects.values_list("item_id", flat=True))
    assert set(per_item.values()) == {2}
    assert len(per_item) == 10
    loads = sorted(result.loads.values())
    assert sum(loads) == 20 and loads[-1] - loads[0] <= 1
    assert all(len(set(a)) == 2 for a in _holders().values())


def _holders() -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for item_id, user_id in Assignment.objects.values_list("item_id", "annotator_id"):
        out.setdefault(item_id, []).append(user_id)
    return out


def test_overlap_defaults_to_the_study_overlap(
    study: Study, items: list[Item], annotator_a: User, annotator_b: User
) -> None:
    draw_round(study, number=1, size=4, seed=4)
    assign_round(study, 1, ["alice", "bob"])
    assert Assignment.objects.count() == 4 * study.overlap


def test_assigning_twice_changes_nothing(
    study: Study, items: list[Item], annotator_a: User, annotator_b: User
) -> None:
    draw_round(study, number=1, size=4, seed=4)
    assign_round(study, 1, ["alice", "bob"])
    before = set(Assignment.objects.values_list("item_id", "annotator_id"))
    result = assign_round(study, 1, ["alice", "bob"])
    assert (result.created, result.moved) == (0, 0)
    assert set(Assignment.objects.values_list("item_id", "annotator_id")) == before


def test_adding_an_annotator_rebalances_only_open_work(
    study: Study, items: list[Item], annotator_a: User, annotator_b: User, carol: User
) -> None:
    draw_round(study, number=1, size=9, seed=4)
    assign_round(study, 1, ["alice", "bob"], overlap=1)
    done = list(Assignment.objects.filter(annotator=annotator_a)[:3])
    Assignment.objects.filter(pk__in=[a.pk for a in done]).update(status=AssignmentStatus.SUBMITTED)
    submitted_before = set(Assignment.objects.submitted().values_list("pk", "item_id", "annotator_id"))
    result = assign_round(study, 1, ["alice", "bob", "carol"], overlap=1)
    assert result.moved > 0
    assert (
        set(Assignment.objects.submitted().values_list("pk", "item_id", "annotator_id")) == submitted_before
    )
    open_loads = sorted(result.open_loads.get(n, 0) for n in ("alice", "bob", "carol"))
    assert open_loads[-1] - open_loads[0] <= 1
    assert Counter(Assignment.objects.values_list("item_id", flat=True)) == Counter(
        {i: 1 for i in RoundItem.objects.values_list("item_id", flat=True)}
    )


def test_moving_open_work_deletes_the_previous_annotators_draft(
    study: Study, items: list[Item], annotator_a: User, annotator_b: User
) -> None:
    round_ = make_round(study, 1, items[:2], {annotator_a: items[:2]})
    assignment = Assignment.objects.filter(round=round_, annotator=annotator_a).first()
    assert assignment is not None
    Annotation.objects.create(assignment=assignment, draft={"memo": "alice's private thought"})
    reassign(assignment, annotator_b)
    assignment.refresh_from_db()
    assert assignment.annotator == annotator_b
    assert not Annotation.objects.filter(assignment=assignment).exists()


def test_a_submitted_assignment_cannot_be_reassigned(
    study: Study, items: list[Item], annotator_a: User, annotator_b: User
) -> None:
    round_ = make_round(study, 1, items[:1], {annotator_a: items[:1]})
    Assignment.objects.filter(round=round_).update(status=AssignmentStatus.SUBMITTED)
    with pytest.raises(RoundError, match="submitted"):
        reassign(Assignment.objects.get(round=round_), annotator_b)


def test_annotators_must_be_members_of_the_study(
    study: Study, items: list[Item], annotator_a: User, outsider: User
) -> None:
    draw_round(study, number=1, size=4, seed=4)
    with pytest.raises(RoundError, match="'oscar' is not a member of study ddp"):
        assign_round(study, 1, ["alice", "oscar"], overlap=1)
    with pytest.raises(RoundError, match="No user named 'nobody'"):
        assign_round(study, 1, ["alice", "nobody"], overlap=1)
    assert not Assignment.objects.exists()


def test_overlap_above_the_number_of_annotators_is_refused(
    study: Study, items: list[Item], annotator_a: User
) -> None:
    draw_round(study, number=1, size=4, seed=4)
    with pytest.raises(RoundError, match="overlap of 2 needs at least 2"):
        assign_round(study, 1, ["alice"], overlap=2)


def test_items_added_by_hand_are_assigned_on_the_next_run(
    study: Study, items: list[Item], annotator_a: User, annotator_b: User
) -> None:
    draw_round(study, number=1, size=4, seed=4)
    assign_round(study, 1, ["alice", "bob"])
    extra = [i.pk for i in items if not RoundItem.objects.filter(item=i).exists()][:2]
    added = add_items_to_round(study, 1, extra)
    assert added.added == 2
    result = assign_round(study, 1, ["alice", "bob"])
    assert result.created == 4
    assert Assignment.objects.count() == 12


def test_adding_items_of_another_study_is_refused(study: Study, items: list[Item]) -> None:
    other = Item.objects.create(study=StudyFactory(), url="https://example.org/x")
    with pytest.raises(RoundError, match=str(other.pk)):
        add_items_to_round(study, 1, [items[0].pk, other.pk])
    assert not Round.objects.exists()


def test_adding_skips_irrelevant_items(study: Study, items: list[Item]) -> None:
    Item.objects.filter(pk=items[0].pk).update(relevance=Relevance.IRRELEVANT)
    result = add_items_to_round(study, 3, [items[0].pk, items[1].pk])
    assert (result.added, result.irrelevant, result.round_created) == (1, 1, True)
    assert result.round.method == "manual"


def test_items_can_be_added_by_a_filter_on_tag_and_source(study: Study, items: list[Item]) -> None:
    from apps.annotation.services import matching_items

    chosen = list(matching_items(study, source="stackoverflow", tag="DDP").values_list("pk", flat=True))
    expected = [i.pk for i in items if i.source == "stackoverflow" and i.tags == ["ddp"]]
    assert chosen == expected and len(expected) == 3
    result = add_items_to_round(study, 2, chosen, method="filter", description={"filter": {"tag": "DDP"}})
    assert result.round.method == "filter" and result.round.params["added"][0]["filter"] == {"tag": "DDP"}
