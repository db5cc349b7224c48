"""Simultaneous requests against the embedded default (SQLite) answer as PostgreSQL does.

The racers are threads with connections of their own to one database (`tests.concurrency`): on SQLite a
file in WAL mode with the project's options, the database ``make run`` serves.
"""

from __future__ import annotations

from collections import Counter

from apps.annotation.models import Annotation, Finding
from tests.api.conftest import with_token
from tests.api.world import ALICE_LABELS, World
from tests.concurrency import ConcurrentDatabase, concurrent_database, in_thread, run_in_threads  # noqa: F401


def test_eight_simultaneous_submissions_of_one_annotation_give_one_201_and_seven_200s(
    world: World,
    concurrent_database: ConcurrentDatabase,  # noqa: F811  (the fixture imported above)
) -> None:
    assignment = world.assignment("alice", 2)
    url = f"/api/v1/studies/{world.study.slug}/assignments/{assignment.pk}/annotation/"
    token = world.token(world.alice)
    concurrent_database.start()
    answers: list[tuple[int, str]] = []

    def submit() -> None:
        client = with_token(token)
        client.raise_request_exception = False  # a server error is an answer: 500, as a browser sees it
        response = client.post(url, ALICE_LABELS, format="json")
        answers.append((response.status_code, response.content.decode()[:200]))

    run_in_threads(*[submit] * 8)

    assert Counter(status for status, _ in answers) == {201: 1, 200: 7}, answers
    assert in_thread(lambda: Annotation.objects.filter(assignment=assignment).count()) == 1
    assert in_thread(lambda: Finding.objects.filter(annotation__assignment=assignment).count()) == 1
