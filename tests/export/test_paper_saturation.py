"""Saturation after Guest, Namey and Chen (2020): the pure assessment, and the command on a study."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from apps.accounts.models import Study, User
from apps.annotation.models import Annotation, Round
from apps.export.paper import data
from apps.export.paper import saturation as sat
from tests.export.conftest import Labeller, small_codebook
from tests.factories import ItemFactory


def test_new_codes_count_each_code_on_its_first_item_only() -> None:
    assert sat.new_code_counts([{"a", "b"}, {"a"}, {"c", "b"}, set(), {"d", "a", "c"}]) == [2, 0, 1, 0, 1]


def test_saturation_is_reached_at_the_end_of_the_first_run_under_the_threshold() -> None:
    # 4 codes in the base (items 1-3); runs of 2 with threshold 0.25 allow at most 1 new code.
    items = [{"a", "b"}, {"c"}, {"d"}, {"e"}, {"f"}, {"g"}, set(), {"a"}, set()]
    result = sat.assess(items, base=3, run=2, threshold=0.25)
    assert result.codes_in_base == 4
    # k=3: items 4-5 bring e, f (2 > 1); k=4: 5-6 bring f, g (2); k=5: 6-7 bring g (1): reached at 7.
    assert result.saturation_item == 7
    assert result.cumulative == [2, 3, 4, 5, 6, 7, 7, 7, 7]


def test_saturation_is_not_reached_without_a_full_quiet_run() -> None:
    items = [{"a"}, {"b"}, {"c"}, {"d"}]
    assert sat.assess(items, base=2, run=2, threshold=0.0).saturation_item is None
    # Fewer items than base + run: no run to judge at all.
    assert sat.assess([{"a"}], base=2, run=2, threshold=1.0).saturation_item is None


def test_renaming_codes_changes_nothing() -> None:
    items = [{"a", "b"}, {"c"}, set(), {"a"}, {"d"}, set(), set()]
    renamed = [{code.upper() for code in codes} for codes in items]
    assert sat.assess(items, base=2, run=2, threshold=0.34) == sat.assess(
        renamed, base=2, run=2, threshold=0.34
    )


@pytest.mark.parametrize(("base", "run", "threshold"), [(0, 1, 0.1), (1, 0, 0.1), (1, 1, 1.5)])
def test_bad_parameters_are_refused_by_name(base: int, run: int, threshold: float) -> None:
    with pytest.raises(ValueError, match=r"base|run|threshold"):
        sat.assess([], base=base, run=run, threshold=threshold)


def test_events_fall_on_the_number_of_items_first_submitted_by_then() -> None:
    assert sat.positions([1.0, 2.0, 3.0], [0.5, 2.0, 9.0]) == [0, 2, 3]


@pytest.fixture
def timed(study: Study, annotator_a: User, annotator_b: User) -> Study:
    """Six items labelled on symptom; created in an order unlike that of their first submission."""
    small_codebook(study)
    labeller = Labeller(study)
    round1 = Round.objects.create(study=study, number=1, seed=1, requested_size=6)
    start = datetime(2024, 3, 1, tzinfo=UTC)
    plan = [  # (item, annotator, symptom, hour of submission)
        (6, annotator_a, "segfault", 6),
        (1, annotator_a, "segfault", 1),
        (2, annotator_b, "oom", 2),
        (3, annotator_a, "segfault", 3),
        (3, annotator_b, "hang", 9),
        (4, annotator_a, "segfault", 4),
        (5, annotator_b, "oom", 5),
    ]
    items = {
        n: ItemFactory(study=study, url=f"https://github.com/o/r/issues/{n}") for n in (6, 1, 2, 3, 4, 5)
    }
    for n, user, symptom, hour in plan:
        assignment = labeller.annotate(items[n], user, round1, [{"type": ["fault"], "symptom": [symptom]}])
        Annotation.objects.filter(assignment=assignment).update(submitted_at=start + timedelta(hours=hour))
    return study


def run(*args: str) -> str:
    out = StringIO()
    call_command("saturation", *args, stdout=out)
    return out.getvalue()


@pytest.mark.django_db
def test_the_command_orders_items_by_first_submission_and_reports_the_contract(timed: Study) -> None:
    result = json.loads(
        run(
            timed.slug,
            "--dimension",
            "symptom",
            "--base",
            "2",
            "--run",
            "2",
            "--threshold",
            "0",
            "--format",
            "json",
        )
    )
    assert set(result) == {"dimension", "items", "order", "new_codes", "base", "run", "threshold",
                           "codes_in_base", "saturation_item"}  # fmt: skip
    assert result["order"] == "first_submission"
    # Items by first submission: segfault, oom, segfault + hang (b's, later), segfault, oom, segfault.
    assert result["new_codes"] == [1, 1, 1, 0, 0, 0]
    assert result["codes_in_base"] == 2
    # k=2: items 3-4 bring hang (1 > 0); k=3: items 4-5 bring nothing: reached at item 5.
    assert result["saturation_item"] == 5
    assert result["items"] == 6


@pytest.mark.django_db
def test_the_text_report_gives_each_annotators_own_curve(timed: Study) -> None:
    text = run(timed.slug, "--dimension", "symptom", "--format", "text")
    assert "saturation not reached" in text  # 6 items < base 50 + run 25
    assert "alice: 4 items, 1 codes" in text
    assert "bob: 3 items, 2 codes" in text


@pytest.mark.django_db
def test_the_command_names_an_unknown_dimension(timed: Study) -> None:
    with pytest.raises(CommandError, match="no dimension 'nope'"):
        run(timed.slug, "--dimension", "nope", "--format", "json")


@pytest.mark.django_db
def test_only_categories_created_after_labelling_began_are_events_not_the_starting_codebook(
    timed: Study,
) -> None:
    """The demo's saturation listed its whole starting codebook as "created during the study": every
    category its first load added. Labelling started on version 1 here; version 2 added a code."""
    from apps.taxonomy.models import ChangeKind, Codebook, CodebookChange, Dimension

    book = Codebook.objects.get(study=timed)
    symptom = Dimension.objects.get(codebook=book, key="symptom")
    Annotation.objects.filter(assignment__study=timed).update(codebook_version=1)
    at = datetime(2024, 3, 1, 3, 30, tzinfo=UTC)  # after items 1, 2 and 3 were first submitted
    CodebookChange.objects.create(codebook=book, version=1, kind=ChangeKind.ADD, dimension=symptom,
                                  after={"key": "segfault"}, at=datetime(2024, 2, 1, tzinfo=UTC))  # fmt: skip
    CodebookChange.objects.create(codebook=book, version=2, kind=ChangeKind.ACCEPT, dimension=symptom,
                                  after={"key": "deadlock"}, at=at)  # fmt: skip

    result = data.saturation(timed, "symptom")

    assert [(e.category, e.how, e.position) for e in result.events] == [("deadlock", "proposal", 3)]
