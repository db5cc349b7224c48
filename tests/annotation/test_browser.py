"""Two annotators label a small round blind, in real Chromium, with the keyboard alone."""

from __future__ import annotations

from typing import Any

import pytest
from django.utils import timezone

from apps.accounts.models import Study, User
from apps.annotation.models import Annotation, Assignment, AssignmentStatus, LabelValue
from apps.corpus.models import Item
from tests.annotation.conftest import Book, make_round
from tests.html import steady

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "correct-horse-battery"


def _log_in(browser: Any, base: str, username: str) -> Any:
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.errors = errors
    page.goto(f"{base}/login/")
    page.focus("input[name=username]")
    page.keyboard.type(username)
    page.keyboard.press("Tab")
    page.keyboard.type(PASSWORD)
    page.keyboard.press("Enter")
    page.wait_for_url(lambda url: "/login/" not in url)
    return page


def _press(page: Any, *keys: str) -> None:
    for key in keys:
        page.keyboard.press(key)


def _next_item(page: Any, previous: str) -> None:
    page.wait_for_url(lambda url: url != previous)
    page.wait_for_selector("#workbench .dim.focused, .page-head h1")


def test_two_annotators_label_a_round_blind_with_the_keyboard(
    live_server: Any,
    browser: Any,
    study: Study,
    book: Book,
    items: list[Item],
    annotator_a: User,
    annotator_b: User,
) -> None:
    round_items = items[:3]
    Item.objects.filter(pk__in=[i.pk for i in round_items]).update(
        body_html="<p>NCCL watchdog timeout after 1800 s</p>", rendered_at=timezone.now()
    )
    make_round(study, 1, round_items, {annotator_a: round_items, annotator_b: round_items})
    base = live_server.url

    # Alice: a fault (hang, fix the configuration), a how-to question with a memo, a fault left pending.
    alice = _log_in(browser, base, "alice")
    alice.goto(f"{base}/studies/{study.slug}/label/next/")
    alice.wait_for_selector("#workbench .dim.focused")
    assert "NCCL watchdog timeout" in alice.content()
    url = alice.url
    _press(alice, "1")  # issue type: fault; the symptom dimension appears and gets the focus
    alice.wait_for_selector('.dim.focused[data-dimension="symptom"]')
    _press(alice, "/")
    alice.keyboard.type("hang")
    _press(alice, "Enter")  # the first match: Training & Evaluation > Hang; focus moves to fix pattern
    alice.wait_for_selector('.dim.focused[data-dimension="fix_pattern"]')
    _press(alice, "1", "3", "s")  # two fix patterns (multi-choice), then submit and go on
    _next_item(alice, url)
    url = alice.url
    _press(alice, "2")  # how-to question; the how-to topic appears, symptom stays hidden
    alice.wait_for_selector('.dim.focused[data-dimension="howto_topic"]')
    assert alice.is_hidden('.dim[data-dimension="symptom"]')
    _press(alice, "2", "m")
    alice.keyboard.type("ALICE-MEMO: asks how to pin GPUs")
    _press(alice, "Escape", "Control+Enter")
    _next_item(alice, url)
    url = alice.url
    _press(alice, "1", "p", "j", "p", "?")  # symptom pending, fix pattern pending, then the help overlay
    assert alice.is_visible("#wb-help")
    _press(alice, "Escape", "s")
    alice.wait_for_url(f"{base}/studies/{study.slug}/queue/")
    assert "Nothing left to label" in alice.content()
    assert alice.errors == []

    # Bob labels the same items and never sees Alice's labels or memo.
    bob = _log_in(browser, base, "bob")
    bob.goto(f"{base}/studies/{study.slug}/label/next/")
    bob.wait_for_selector("#workbench .dim.focused")
    for _ in range(3):
        html = steady(bob.content())
        assert "ALICE-MEMO" not in html and "alice" not in html
        assert bob.locator("#findings input:checked").count() == 0
        url = bob.url
        _press(bob, "2", "1", "s")  # how-to question about parallelization
        bob.wait_for_url(lambda u, previous=url: u != previous)
    assert "Nothing left to label" in bob.content()
    assert bob.errors == []

    annotations = Annotation.objects.filter(submitted_at__isnull=False)
    assert annotations.count() == 6
    assert set(Assignment.objects.values_list("status", flat=True)) == {AssignmentStatus.SUBMITTED}
    first = Annotation.objects.get(assignment__annotator=annotator_a, assignment__item=round_items[0])
    values = set(
        LabelValue.objects.filter(finding__annotation=first).values_list(
            "dimension__key", "category__key", "pending"
        )
    )
    assert values == {
        ("issue_type", "fault", False),
        ("symptom", "hang", False),
        ("fix_pattern", "fix-config", False),
        ("fix_pattern", "fix-logic", False),
    }
    second = Annotation.objects.get(assignment__annotator=annotator_a, assignment__item=round_items[1])
    assert second.memo == "ALICE-MEMO: asks how to pin GPUs"
    third = Annotation.objects.get(assignment__annotator=annotator_a, assignment__item=round_items[2])
    assert set(
        LabelValue.objects.filter(finding__annotation=third).values_list("dimension__key", "pending")
    ) == {("issue_type", False), ("symptom", True), ("fix_pattern", True)}
    assert all(a.seconds_spent is not None for a in annotations)
