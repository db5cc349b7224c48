"""The items grid's labelling columns (apps/adjudication/progress.py): a submission writes one item's
columns through the statement compiled once, and that path writes what the whole-study recompute writes."""

from __future__ import annotations

from collections.abc import Callable

from apps.accounts.models import Study, User
from apps.adjudication.progress import refresh_progress
from apps.annotation.models import Round, RoundItem
from apps.corpus.models import Item, Progress
from tests.factories import ItemFactory

from .conftest import CRASH, HANG, HOWTO, submit


def columns(study: Study) -> dict[int, tuple[int, str, str]]:
    rows = study.items.values_list("id", "round_number", "progress", "decision")
    return {i: (n, p, d) for i, n, p, d in rows}


def test_one_item_at_a_time_writes_what_the_whole_study_recompute_writes(
    study: Study, round1: Round, make_item: Callable[..., Item], annotator_a: User, annotator_b: User
) -> None:
    agreed, disputed, half, unassigned = (make_item(annotator_a, annotator_b) for _ in range(4))
    unassigned.assignments.all().delete()
    for item in (agreed, disputed, half, unassigned):
        RoundItem.objects.create(round=round1, item=item)
    ItemFactory(study=study)  # in no round
    submit(agreed, annotator_a, HOWTO)
    submit(agreed, annotator_b, HOWTO)
    submit(disputed, annotator_a, CRASH)
    submit(disputed, annotator_b, HANG)
    submit(half, annotator_a, CRASH)
    refresh_progress([unassigned.pk])

    by_submissions = columns(study)
    assert {progress for _, progress, _ in by_submissions.values()} == {
        Progress.DECIDED, Progress.DISAGREEMENT, Progress.LABELLING, Progress.WAITING, Progress.UNSAMPLED,
    }  # fmt: skip
    Item.objects.update(round_number=7, progress=Progress.LABELLED, decision="x")
    assert refresh_progress(study=study) == 5
    assert columns(study) == by_submissions

    Item.objects.update(round_number=7, progress=Progress.LABELLED, decision="x")
    assert [refresh_progress([pk]) for pk in sorted(by_submissions)] == [1] * 5
    assert columns(study) == by_submissions
    assert refresh_progress([max(by_submissions) + 1000]) == 0


def test_an_item_whose_columns_already_hold_their_values_is_not_written(
    study: Study, round1: Round, make_item: Callable[..., Item], annotator_a: User, annotator_b: User
) -> None:
    """Every index of the item table (full-text and trigram ones among them) takes an entry per row
    written: a refresh that changes nothing writes nothing, one item or the whole study."""
    item = make_item(annotator_a, annotator_b)
    RoundItem.objects.create(round=round1, item=item)
    assert refresh_progress([item.pk]) == 1  # waiting → labelling
    assert refresh_progress([item.pk]) == 0
    assert refresh_progress(study=study) == 0
    submit(item, annotator_a, CRASH)  # the first of two: still labelling
    assert refresh_progress([item.pk]) == 0
    Item.objects.filter(pk=item.pk).update(decision="x")
    assert refresh_progress(study=study) == 1
