"""Issue #24's done-when for gold checks and training rounds, in real Chromium: a lead marks decided items
as gold checks and seeds them into a round, an annotator labels her queue (gold checks among her items),
and the lead sees her accuracy on gold; then a training round shows its feedback after each submission."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from apps.accounts.models import Role, Study, User
from apps.annotation.models import Assignment, AssignmentStatus, GoldItem
from apps.corpus.models import Item
from tests.browser import browser, sign_in, watched_page  # noqa: F401  (browser is a fixture)
from tests.factories import ItemFactory, MembershipFactory, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "correct-horse-battery"  # tests/factories.py
SHOTS = Path(__file__).resolve().parents[2] / "var" / "screenshots"


@pytest.fixture
def decided(codebook: Any, annotate: Any, study: Study) -> list[Item]:
    """Carol and dave agree on four items (bug, bug, question, bug: decided unanimously)."""
    carol = MembershipFactory(study=study, role=Role.ANNOTATOR, user=UserFactory(username="carol")).user
    dave = MembershipFactory(study=study, role=Role.ANNOTATOR, user=UserFactory(username="dave")).user
    items = [ItemFactory(study=study, title=f"Decided {n}") for n in range(4)]
    for item, kind in zip(items, ["bug", "bug", "question", "bug"], strict=True):
        for user in (carol, dave):
            annotate(1, item, user, [{"kind": [kind], "symptom": ["segfault"], "fix": ["code"]}])
    return items


def _label(page: Any, kind: str) -> None:
    """Choose the kind, Segfault and Code in the workbench, and submit."""
    for dimension, key in (("kind", kind), ("symptom", "segfault"), ("fix", "code")):
        page.locator(f'.dim[data-dimension="{dimension}"] input[value="{key}"]').first.check()
    page.get_by_role("button", name="Submit & next").click()
    page.wait_for_load_state()


def test_a_lead_seeds_gold_checks_an_annotator_labels_them_and_the_lead_sees_her_accuracy(
    live_server: Any,
    browser: Any,  # noqa: F811
    study: Study,
    decided: list[Item],
    annotate: Any,
    annotator_a: User,
    lead: User,
) -> None:
    fresh = [ItemFactory(study=study, title=f"Fresh {n}") for n in range(2)]
    for item in fresh:
        annotate(2, item, annotator_a, [], submitted=False)
    base = live_server.url
    page = watched_page(browser)
    sign_in(page, base, lead.username, PASSWORD)
    page.goto(f"{base}/studies/{study.slug}/quality/")
    page.fill("#gold-items", "\n".join(str(i.pk) for i in decided))
    page.get_by_role("button", name="Mark as gold").click()
    page.wait_for_url("**/quality/#gold")
    assert GoldItem.objects.count() == 4
    page.select_option("#seed-round", "2")
    page.fill("#seed-n", "2")
    page.get_by_role("button", name="Seed gold checks").click()
    page.wait_for_url("**/quality/#gold")
    assert "Seeded gold checks into Round 2: alice 2" in page.content()
    assert Assignment.objects.filter(annotator=annotator_a, gold=True).count() == 2

    sign_in(page, base, annotator_a.username, PASSWORD)
    page.goto(f"{base}/studies/{study.slug}/label/next/")
    labelled = 0
    while "/label/" in page.url:
        page.wait_for_selector("#workbench")
        _label(page, "bug")  # right on the three bugs, wrong on the question
        labelled += 1
    assert labelled == 4
    assert not Assignment.objects.filter(annotator=annotator_a, status=AssignmentStatus.OPEN).exists()

    sign_in(page, base, lead.username, PASSWORD)
    page.goto(f"{base}/studies/{study.slug}/quality/?dimension=kind")
    cell = page.locator('tr[data-annotator="alice"][data-round="2"] td[data-metric="gold"]')
    gold_kinds = Assignment.objects.filter(annotator=annotator_a, gold=True).values_list(
        "item__title", flat=True
    )
    expected = "0.50" if "Decided 2" in gold_kinds else "1.00"
    assert cell.inner_text().startswith(expected) and "n=2" in cell.inner_text()
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.locator("#gold").screenshot(path=str(SHOTS / "quality-gold.png"))
    assert page.problems == []


def test_a_training_round_shows_its_feedback_after_each_submission(
    live_server: Any,
    browser: Any,  # noqa: F811
    study: Study,
    decided: list[Item],
    annotator_a: User,
    lead: User,
) -> None:
    base = live_server.url
    page = watched_page(browser)
    sign_in(page, base, lead.username, PASSWORD)
    page.goto(f"{base}/studies/{study.slug}/quality/")
    page.fill("#gold-items", "\n".join(str(i.pk) for i in decided))
    page.get_by_role("button", name="Mark as gold").click()
    page.fill("#training-annotators", "alice")
    page.fill("#training-size", "2")
    page.fill("#training-pass", "80")
    page.get_by_role("button", name="Create training round").click()
    page.wait_for_url("**/quality/#training")
    assert "Created Training 2 for alice" in page.content()

    sign_in(page, base, annotator_a.username, PASSWORD)
    page.goto(f"{base}/studies/{study.slug}/queue/")
    assert page.locator("#training-lock").is_visible()
    page.goto(f"{base}/studies/{study.slug}/label/next/")
    for n in range(2):
        page.wait_for_selector("#workbench")
        url = page.url
        _label(page, "question")
        assert page.url == url  # the same item, now with its gold answer
        feedback = page.locator("#wb-feedback")
        assert feedback.is_visible()
        assert "the gold answer" in feedback.inner_text()
        if n == 0:
            SHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SHOTS / "training-feedback.png"), full_page=True)
        page.get_by_role("link", name="Next item →").click()
        page.wait_for_load_state()
    page.goto(f"{base}/studies/{study.slug}/my-work/")
    assert page.locator("#training tbody tr").count() == 1
    page.screenshot(path=str(SHOTS / "my-work.png"), full_page=True)
    assert page.problems == []
