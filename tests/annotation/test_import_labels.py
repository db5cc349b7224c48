"""Importing annotators' labels: all or nothing, every problem by row, idempotent, like browser labels."""

from __future__ import annotations

from typing import Any

import pytest

from apps.accounts.models import Study, User
from apps.annotation.label_file import parse_labels_csv
from apps.annotation.models import Annotation, Assignment, AssignmentStatus, LabelValue, Round, RoundItem
from apps.annotation.services import ImportLabelsError, import_annotations, submit_annotation
from apps.annotation.signals import annotation_submitted
from apps.corpus.models import Item
from apps.taxonomy.models import CategoryStatus
from tests.annotation.conftest import FAULT_HANG, Book, make_round

pytestmark = pytest.mark.django_db

HEADER = "item,annotator,dimension,label,finding,round,memo\n"
GOOD = HEADER + (
    "https://github.com/ex/repo/issues/1,alice,issue_type,fault,1,1,two faults here\n"
    "https://github.com/ex/repo/issues/1,alice,symptom,Training & Evaluation > Hang,1,1,\n"
    "https://github.com/ex/repo/issues/1,alice,fix_pattern,fix-config,1,1,\n"
    "https://github.com/ex/repo/issues/1,alice,fix_pattern,Fix framework version,1,1,\n"
    "https://github.com/ex/repo/issues/1,alice,issue_type,fault,2,1,\n"
    "https://github.com/ex/repo/issues/1,alice,symptom,PENDING,2,1,\n"
    "https://github.com/ex/repo/issues/1,alice,fix_pattern,pending,2,1,\n"
    "https://github.com/ex/repo/issues/1,bob,issue_type,How-to question,1,1,\n"
    "https://github.com/ex/repo/issues/1,bob,howto_topic,parallel,1,1,\n"
    "http://www.github.com/ex/repo/issues/2#issuecomment-1,bob,issue_type,howto,1,1,\n"
    "https://github.com/ex/repo/issues/2,bob,howto_topic,parallel,1,1,\n"
)
HOWTO_WITHOUT_ROUND = (
    "item,annotator,dimension,label\n"
    "https://github.com/ex/repo/issues/1,alice,issue_type,howto\n"
    "https://github.com/ex/repo/issues/1,alice,howto_topic,parallel\n"
)


def _import(text: str, study: Study) -> Any:
    return import_annotations(study, parse_labels_csv(text, decisions=False))


def _labels() -> set[tuple[str, str, int, str, str | None, bool]]:
    return {
        (
            v.finding.annotation.assignment.item.url,
            v.finding.annotation.assignment.annotator.username,
            v.finding.number,
            v.dimension.key,
            v.category.key if v.category else None,
            v.pending,
        )
        for v in LabelValue.objects.select_related(
            "finding__annotation__assignment__item",
            "finding__annotation__assignment__annotator",
            "dimension",
            "category",
        )
    }


def test_a_labels_file_becomes_submitted_assignments_and_annotations(
    study: Study, book: Book, items: list[Item], annotator_a: User, annotator_b: User
) -> None:
    result = _import(GOOD, study)
    assert (result.annotations_created, result.assignments_created, result.rounds_created) == (3, 3, [1])
    assert Round.objects.get(study=study, number=1).method == "imported"
    assert set(Assignment.objects.values_list("status", flat=True)) == {AssignmentStatus.SUBMITTED}
    assert RoundItem.objects.count() == 2
    one = "https://github.com/ex/repo/issues/1"
    assert _labels() >= {
        (one, "alice", 1, "symptom", "hang", False),
        (one, "alice", 1, "fix_pattern", "fix-config", False),
        (one, "alice", 1, "fix_pattern", "fix-version", False),
        (one, "alice", 2, "symptom", None, True),
        (one, "bob", 1, "issue_type", "howto", False),
        ("https://github.com/ex/repo/issues/2", "bob", 1, "issue_type", "howto", False),
    }
    alice = Annotation.objects.get(assignment__annotator=annotator_a)
    assert alice.imported and alice.memo == "two faults here" and alice.submitted_at is not None


def test_importing_the_same_file_twice_changes_nothing(
    study: Study, book: Book, items: list[Item], annotator_a: User, annotator_b: User
) -> None:
    _import(GOOD, study)
    before = (_labels(), list(Annotation.objects.values_list("pk", "updated_at")))
    sent: list[object] = []
    annotation_submitted.connect(receiver := lambda sender, **kw: sent.append(kw))
    try:
        again = _import(GOOD, study)
    finally:
        annotation_submitted.disconnect(receiver)
    assert (again.annotations_created, again.annotations_updated, again.unchanged) == (0, 0, 3)
    assert (_labels(), list(Annotation.objects.values_list("pk", "updated_at"))) == before
    assert sent == []


def test_each_imported_annotation_sends_the_signal(
    study: Study, book: Book, items: list[Item], annotator_a: User, annotator_b: User
) -> None:
    sent: list[dict[str, Any]] = []
    annotation_submitted.connect(receiver := lambda sender, **kw: sent.append(kw))
    try:
        _import(GOOD, study)
    finally:
        annotation_submitted.disconnect(receiver)
    assert sorted(kw["item_id"] for kw in sent) == sorted([items[0].pk, items[0].pk, items[1].pk])


def test_every_problem_is_reported_by_row_and_nothing_is_written(
    study: Study, book: Book, items: list[Item], annotator_a: User, outsider: User
) -> None:
    text = HEADER + (
        "https://github.com/ex/repo/issues/1,alice,issue_type,pending,1,1,\n"
        "https://github.com/ex/repo/issues/999,alice,issue_type,fault,1,1,\n"
        "https://github.com/ex/repo/issues/3,oscar,issue_type,fault,1,1,\n"
        "https://github.com/ex/repo/issues/4,alice,symptom,Crash,1,1,\n"
        "https://github.com/ex/repo/issues/5,alice,symptom,Hnag,1,1,\n"
        "https://github.com/ex/repo/issues/6,alice,colour,red,1,1,\n"
        "https://github.com/ex/repo/issues/7,alice,issue_type,fault,1,1,\n"
        "https://github.com/ex/repo/issues/7,alice,issue_type,howto,1,1,\n"
    )
    with pytest.raises(ImportLabelsError) as caught:
        _import(text, study)
    message = str(caught.value)
    assert "row 3, item 'https://github.com/ex/repo/issues/999': no item of study ddp has this URL" in message
    assert "row 4, annotator 'oscar': not a member of study ddp (1 row: 4)" in message
    assert (
        "row 5, label 'Crash'" in message
        and "'Deployment > Crash'" in message
        and "'Training & Evaluation > Crash'" in message
    )
    assert (
        "row 6, label 'Hnag': unknown category 'Hnag'; did you mean 'Training & Evaluation > Hang'" in message
    )
    assert "row 7, dimension 'colour': no such dimension" in message
    assert "row 8" in message and "'Issue type' takes one category, got 2" in message
    assert [p.row for p in caught.value.problems] == [3, 4, 5, 6, 7, 8]
    assert not Annotation.objects.exists() and not Assignment.objects.exists() and not Round.objects.exists()


def test_a_label_for_a_dimension_that_does_not_apply_is_refused(
    study: Study, book: Book, items: list[Item], annotator_a: User
) -> None:
    text = HEADER + (
        "https://github.com/ex/repo/issues/1,alice,issue_type,howto,1,1,\n"
        "https://github.com/ex/repo/issues/1,alice,symptom,hang,1,1,\n"
    )
    with pytest.raises(ImportLabelsError) as caught:
        _import(text, study)
    assert (
        "row 3, label 'hang': item https://github.com/ex/repo/issues/1, finding 1, dimension 'symptom': "
        "'Symptom' applies only when 'issue_type' is 'fault'"
    ) in str(caught.value)


def test_labels_submitted_in_the_workbench_are_not_overwritten(
    study: Study, book: Book, items: list[Item], annotator_a: User
) -> None:
    round_ = make_round(study, 1, items[:1], {annotator_a: items[:1]})
    submit_annotation(Assignment.objects.get(round=round_), FAULT_HANG, annotator_a, codebook_version=3)
    text = HEADER + (
        "https://github.com/ex/repo/issues/1,alice,issue_type,howto,1,1,\n"
        "https://github.com/ex/repo/issues/1,alice,howto_topic,parallel,1,1,\n"
    )
    with pytest.raises(ImportLabelsError, match="in the workbench; an import does not overwrite them"):
        _import(text, study)


def test_without_a_round_labels_join_the_round_that_holds_the_item(
    study: Study, book: Book, items: list[Item], annotator_a: User
) -> None:
    make_round(study, 4, items[:1])
    text = HOWTO_WITHOUT_ROUND
    result = _import(text, study)
    assert result.rounds_created == []
    assert Assignment.objects.get().round.number == 4


def test_a_label_for_an_item_in_no_round_is_refused_unless_a_round_is_named(
    study: Study, book: Book, items: list[Item], annotator_a: User
) -> None:
    rows = parse_labels_csv(HOWTO_WITHOUT_ROUND, decisions=False)
    with pytest.raises(ImportLabelsError) as caught:
        import_annotations(study, rows)
    assert "row 2, round: item https://github.com/ex/repo/issues/1 is in no round" in str(caught.value)
    assert "--round N" in str(caught.value)
    assert not Round.objects.exists() and not Annotation.objects.exists()

    assert import_annotations(study, rows, round_number=3).rounds_created == [3]
    assert import_annotations(study, rows, round_number=3).unchanged == 1
    assert Assignment.objects.get().round.number == 3 and Round.objects.count() == 1


def test_a_merged_category_is_stored_as_its_target_keeping_the_original(
    study: Study, book: Book, items: list[Item], annotator_a: User
) -> None:
    crash = book.categories["deploy-crash"]
    crash.status, crash.merged_into = CategoryStatus.MERGED, book.categories["crash"]
    crash.save()
    text = HEADER + (
        "https://github.com/ex/repo/issues/1,alice,issue_type,fault,1,1,\n"
        "https://github.com/ex/repo/issues/1,alice,symptom,deploy-crash,1,1,\n"
        "https://github.com/ex/repo/issues/1,alice,fix_pattern,fix-config,1,1,\n"
    )
    _import(text, study)
    value = LabelValue.objects.get(dimension=book.dimensions["symptom"])
    assert (value.category, value.original_category) == (book.categories["crash"], crash)
