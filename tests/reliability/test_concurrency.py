"""Races between real concurrent connections on PostgreSQL: double submit, two tabs, a codebook merge while
an annotator submits. (Two leads deciding one item at once: tests/adjudication/test_concurrency.py.)

Each racer runs on a thread of its own, so it has its own database connection and its own transaction;
the tests are transactional so that what one commits the other sees, as in production.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection, transaction

from apps.accounts.models import Study, User
from apps.annotation.models import Annotation, Assignment, AssignmentStatus, Finding, LabelValue
from apps.annotation.services import StaleCodebook, SubmitResult, labelling, submit_annotation
from apps.corpus.models import Item
from apps.taxonomy.models import CategoryStatus, Codebook
from apps.taxonomy.services import merge_category
from tests.annotation.conftest import FAULT_HANG, HOWTO, Book, make_round
from tests.concurrency import run_in_threads
from tests.reliability.conftest import needs_postgres, wait_for

pytestmark = [*needs_postgres, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def assignment(
    study: Study, book: Book, items: list[Item], annotator_a: User, annotator_b: User
) -> Assignment:
    round_ = make_round(study, 1, items[:2], {annotator_a: items[:2], annotator_b: items[:2]})
    return Assignment.objects.get(round=round_, annotator=annotator_a, item=items[0])


def stored(annotation: Annotation) -> set[tuple[int, str, str | None]]:
    return set(
        LabelValue.objects.filter(finding__annotation=annotation).values_list(
            "finding__number", "dimension__key", "category__key"
        )
    )


@pytest.mark.parametrize("attempt", range(3))
def test_a_double_submit_stores_one_annotation_and_one_set_of_labels(
    attempt: int, assignment: Assignment, annotator_a: User
) -> None:
    barrier = threading.Barrier(2)
    results: list[SubmitResult] = []

    def click() -> None:
        barrier.wait()
        results.append(submit_annotation(assignment, FAULT_HANG, annotator_a, codebook_version=3))

    run_in_threads(click, click, together=False)

    assert sorted((r.created, r.changed) for r in results) == [(False, False), (True, True)]
    annotation = Annotation.objects.get(assignment=assignment)
    assert Finding.objects.filter(annotation=annotation).count() == 1
    assert stored(annotation) == {
        (1, "issue_type", "fault"),
        (1, "symptom", "hang"),
        (1, "fix_pattern", "fix-config"),
    }
    assignment.refresh_from_db()
    assert assignment.status == AssignmentStatus.SUBMITTED


@pytest.mark.parametrize("attempt", range(3))
def test_two_tabs_submitting_different_labels_leave_exactly_one_of_them_whole(
    attempt: int, assignment: Assignment, annotator_a: User
) -> None:
    barrier = threading.Barrier(2)

    def tab(payload: dict[str, Any]) -> Any:
        def run() -> None:
            barrier.wait()
            submit_annotation(assignment, payload, annotator_a, codebook_version=3)

        return run

    run_in_threads(tab(FAULT_HANG), tab(HOWTO), together=False)

    annotation = Annotation.objects.get(assignment=assignment)  # one annotation, never two
    fault = {(1, "issue_type", "fault"), (1, "symptom", "hang"), (1, "fix_pattern", "fix-config")}
    howto = {(1, "issue_type", "howto"), (1, "howto_topic", "parallel")}
    assert stored(annotation) in (fault, howto)  # the later tab's labels, whole; never a mix
    assert Finding.objects.filter(annotation=annotation).count() == 1
    assert annotation.memo == ("asks about DDP" if stored(annotation) == howto else "")


def test_a_merge_committed_while_an_annotator_submits_leaves_no_label_on_the_merged_category(
    book: Book, assignment: Assignment, annotator_a: User, lead: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worst interleaving, forced: the annotator's submit has read the codebook (Hang is active)
    when the lead merges Hang into Crash. Either the merge waits for the submit and then moves its new
    label, or the submit waits for the merge and is told the codebook changed; never a label left on
    a merged category."""
    loaded, merged = threading.Event(), threading.Event()

    def then_let_the_merge_run(real: Callable[..., Any]) -> Callable[..., Any]:
        def load(*args: Any, **kwargs: Any) -> Any:
            result = real(*args, **kwargs)
            if threading.current_thread().name == "annotator":
                loaded.set()
                merged.wait(timeout=3)  # a merge that has to wait for this submit cannot finish: go on
            return result

        return load

    # The ORM path reads the codebook with `load_codebook`, the short path (PostgreSQL, a first
    # submission) with `loaded_codebook`, each after taking the codebook's share lock.
    for name in ("load_codebook", "loaded_codebook"):
        monkeypatch.setattr(labelling, name, then_let_the_merge_run(getattr(labelling, name)))
    outcome: dict[str, Any] = {}

    def annotator() -> None:
        threading.current_thread().name = "annotator"
        try:
            outcome["submit"] = submit_annotation(assignment, FAULT_HANG, annotator_a, codebook_version=3)
        except StaleCodebook as exc:
            outcome["submit"] = exc

    def lead_merges() -> None:
        assert loaded.wait(timeout=10)
        merge_category(book.categories["hang"], book.categories["crash"], actor=lead)
        merged.set()

    run_in_threads(annotator, lead_merges, together=False)

    hang = book.categories["hang"]
    hang.refresh_from_db()
    assert hang.status == CategoryStatus.MERGED
    assert not LabelValue.objects.filter(category=hang).exists(), "a label was left on the merged category"
    if isinstance(outcome["submit"], StaleCodebook):
        assert not Annotation.objects.filter(assignment=assignment, submitted_at__isnull=False).exists()
    else:
        value = LabelValue.objects.get(finding__annotation__assignment=assignment, dimension__key="symptom")
        assert (value.category_id, value.original_category_id) == (book.categories["crash"].pk, hang.pk)


def test_a_submit_that_waits_for_a_merge_validates_against_the_merged_codebook(
    book: Book, assignment: Assignment, annotator_a: User, lead: User
) -> None:
    """The other interleaving, forced: the lead's merge holds the codebook row when the annotator submits.
    The submission's lock statement waits for it and then reads the codebook as the merge left it (the
    row it waited for, re-read under the lock): the labels naming the merged category are refused as
    stale, and nothing is stored."""
    locked = threading.Event()
    outcome: dict[str, Any] = {}

    def lead_merges() -> None:
        with transaction.atomic():
            Codebook.objects.select_for_update().get(pk=book.codebook.pk)
            locked.set()
            wait_for(_someone_waits_for_a_lock, timeout=10, what="the submission to wait for the codebook")
            merge_category(book.categories["hang"], book.categories["crash"], actor=lead)

    def annotator() -> None:
        assert locked.wait(timeout=10)
        try:
            outcome["submit"] = submit_annotation(assignment, FAULT_HANG, annotator_a, codebook_version=3)
        except StaleCodebook as exc:
            outcome["submit"] = exc

    run_in_threads(lead_merges, annotator, together=False)

    assert isinstance(outcome["submit"], StaleCodebook), outcome["submit"]
    assert not Annotation.objects.filter(assignment=assignment, submitted_at__isnull=False).exists()
    assert not LabelValue.objects.filter(category=book.categories["hang"]).exists()
    assert Assignment.objects.get(pk=assignment.pk).status == AssignmentStatus.OPEN


def _someone_waits_for_a_lock() -> bool:
    """Whether a backend of this database waits for a lock. From inside a transaction too: activity is
    read from a snapshot kept until the transaction ends unless it is cleared first."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity "
            "WHERE datname = current_database() AND wait_event_type = 'Lock'"
        )
        (waiting,) = cursor.fetchone()
    return bool(waiting)
