"""Two leads deciding one item at once, on PostgreSQL with real concurrent connections.

SQLite serialises every write, so these races cannot happen there; the tests skip with the reason. Run:
``DATABASE_URL=postgres://postgres@127.0.0.1:5432/test_adjudication .venv/bin/pytest tests/adjudication``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest
from django.db import connection, transaction

from apps.accounts.models import User
from apps.adjudication.models import Decision, Provenance, Review, ReviewState
from apps.adjudication.services import DecisionConflict, decide
from apps.corpus.models import Item
from tests.adjudication.conftest import CRASH, HANG, submit
from tests.concurrency import run_in_threads

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.skipif(
        connection.vendor != "postgresql",
        reason="needs PostgreSQL: SQLite serialises all writes, so two leads can never race there",
    ),
    pytest.mark.django_db(transaction=True),
]

MakeItem = Callable[..., Item]


@pytest.mark.parametrize("attempt", range(5))
def test_two_leads_saving_at_once_make_exactly_one_decision(
    attempt: int, make_item: MakeItem, annotator_a: User, annotator_b: User, lead: User, owner: User
) -> None:
    item = make_item(annotator_a, annotator_b)
    submit(item, annotator_a, CRASH)
    submit(item, annotator_b, HANG)
    barrier = threading.Barrier(2)
    outcomes: dict[str, object] = {}

    def save(user: User, labels: object) -> Callable[[], None]:
        def run() -> None:
            barrier.wait()
            try:
                outcomes[user.username] = decide(item, labels, actor=user, expected_decision_id=None)  # type: ignore[arg-type]
            except DecisionConflict as exc:
                outcomes[user.username] = exc

        return run

    run_in_threads(save(lead, CRASH), save(owner, HANG), together=False)
    won = [o for o in outcomes.values() if isinstance(o, Decision)]
    lost = [o for o in outcomes.values() if isinstance(o, DecisionConflict)]
    assert (len(won), len(lost)) == (1, 1)
    assert Decision.objects.filter(item=item).count() == 1
    current = Decision.objects.get(item=item, is_current=True)
    assert current.pk == won[0].pk and current.provenance == Provenance.ADJUDICATED
    winner = current.decided_by.username  # type: ignore[union-attr]
    assert f"{winner} decided this item" in lost[0].message
    assert lost[0].current is not None and lost[0].current.pk == current.pk
    assert Review.objects.get(item=item).state == ReviewState.DECIDED


def test_the_partial_unique_constraint_turns_a_racing_insert_into_a_conflict(
    make_item: MakeItem, annotator_a: User, annotator_b: User, lead: User, owner: User
) -> None:
    """A writer that bypasses the Review lock (here: a raw insert held open in another transaction) still
    cannot make a second current decision: `decide` waits on the unique index, then reports a conflict."""
    item = make_item(annotator_a, annotator_b)
    submit(item, annotator_a, CRASH)
    submit(item, annotator_b, HANG)
    inserted = threading.Event()
    outcome: dict[str, object] = {}

    def sneak_in() -> None:
        with transaction.atomic():
            Decision.objects.create(
                study_id=item.study_id, item=item, provenance=Provenance.ADJUDICATED, decided_by=owner
            )
            inserted.set()
            deadline = time.monotonic() + 10
            with connection.cursor() as cursor:  # hold the row until the other insert waits on it
                while time.monotonic() < deadline:
                    cursor.execute("SELECT count(*) FROM pg_locks WHERE NOT granted")
                    if cursor.fetchone()[0]:
                        break
                    time.sleep(0.02)
            outcome["waited"] = time.monotonic() < deadline

    def lead_saves() -> None:
        inserted.wait(10)
        try:
            outcome["lead"] = decide(item, CRASH, actor=lead, expected_decision_id=None)
        except DecisionConflict as exc:
            outcome["lead"] = exc

    run_in_threads(sneak_in, lead_saves, together=False)
    assert outcome["waited"] is True
    conflict = outcome["lead"]
    assert isinstance(conflict, DecisionConflict)
    assert "olivia decided this item" in conflict.message
    assert Decision.objects.filter(item=item).count() == 1
    assert Decision.objects.get(item=item).decided_by == owner
