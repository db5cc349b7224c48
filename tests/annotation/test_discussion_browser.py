"""The done-when of #20 in real Chromium: two annotators labelled blind; the lead reveals; each sees the
other's labels; they discuss in the thread (a mention, a reply, the unread badge); one revises and the item
is decided as `discussed`, another goes to the lead; the dashboard shows the round's blind and
after-discussion kappa, the blind one unchanged."""

from __future__ import annotations

from typing import Any

import pytest

from apps.adjudication.models import Decision, Review, ReviewState
from apps.agreement.ratings import load_study_ratings
from apps.agreement.services import dimension_report
from apps.annotation import services
from tests.api.world import ALICE_MEMO, BOB_LABELS, BOB_MEMO, World, build_world

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "correct-horse-battery"


def _log_in(browser: Any, base: str, username: str) -> Any:
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.errors = []
    page.on("pageerror", lambda exc: page.errors.append(str(exc)))
    page.goto(f"{base}/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", PASSWORD)
    page.press("input[name=password]", "Enter")
    page.wait_for_url(lambda url: "/login/" not in url)
    return page


def _kappa(world: World) -> Any:
    ratings = load_study_ratings(world.study, dimension="type")
    return dimension_report(ratings, "type", round_number=1)["cohen_kappa"]


def test_reveal_discuss_revise_and_report_agreement_before_and_after(
    live_server: Any, browser: Any, study: Any, owner: Any, lead: Any, annotator_a: Any, annotator_b: Any,
    outsider: Any,
) -> None:  # fmt: skip
    study.discuss_after_reveal = True
    study.save(update_fields=["discuss_after_reveal"])
    world = build_world(study, owner, lead, annotator_a, annotator_b, outsider)
    version = services.load_codebook(study).version
    # Item 2: alice says fault, bob howto (a second disagreement, which discussion will not resolve);
    # item 3: both howto (unanimous).
    services.submit_annotation(world.assignment("bob", 1), BOB_LABELS, world.bob, codebook_version=version)
    services.submit_annotation(
        world.assignment("alice", 2), BOB_LABELS, world.alice, codebook_version=version
    )
    services.submit_annotation(world.assignment("bob", 2), BOB_LABELS, world.bob, codebook_version=version)
    blind_kappa = _kappa(world)
    base, slug = live_server.url, study.slug

    # The lead reveals round 1 on its page.
    lena = _log_in(browser, base, "lena")
    lena.goto(f"{base}/studies/{slug}/rounds/1/")
    lena.click("#reveal button[type=submit]")
    lena.wait_for_selector("#round-phase:has-text('Discussion')")

    # Bob sees alice's labels and memo beside his, disagreements first.
    bob = _log_in(browser, base, "bob")
    bob.goto(f"{base}/studies/{slug}/rounds/1/discussion/")
    assert ALICE_MEMO in bob.inner_text("body") and "disagreement" in bob.inner_text("body")

    # Alice asks bob in item 1's thread; bob's queue shows the unread badge; he replies.
    alice = _log_in(browser, base, "alice")
    alice.goto(f"{base}/studies/{slug}/rounds/1/discussion/")  # and she sees his, the other way round
    assert BOB_MEMO in alice.inner_text("body")
    alice.goto(f"{base}/studies/{slug}/rounds/1/items/{world.items[0].pk}/thread/")
    alice.fill("#comment-body", "Why **howto**, @bob? The log shows a hang.")
    alice.click(".comment-form button[type=submit]")
    alice.wait_for_selector(".comment-body strong:has-text('howto')")
    bob.goto(f"{base}/studies/{slug}/queue/")
    bob.wait_for_selector("[data-testid=unread-badge]:has-text('1')")
    bob.goto(f"{base}/studies/{slug}/rounds/1/items/{world.items[0].pk}/thread/")
    assert "mentions @bob" in bob.inner_text("#thread")
    bob.fill("#comment-body", "Agreed, it is a fault. Revising.")
    bob.click(".comment-form button[type=submit]")
    bob.wait_for_selector("#thread:has-text('Revising')")
    alice.wait_for_selector("#thread:has-text('Revising')", timeout=15_000)  # polled, no reload

    # Bob says why they disagreed: he misread the trace.
    bob.select_option("#cause-key", "slip")
    bob.fill("#cause-note", "misread the trace")
    bob.click("#cause button[type=submit]:has-text('Save the cause')")
    bob.wait_for_selector("#cause-now:has-text('Slip or misreading')")

    # Bob revises item 1 on the workbench: it agrees with alice now, decided as `discussed`.
    bob.goto(f"{base}/studies/{slug}/label/{world.assignment('bob', 0).pk}/")
    assert "is in discussion" in bob.inner_text("#wb-discussion")
    bob.check("input[name='v-1-type'][value='fault']")
    bob.check("input[name='v-1-symptom'][value='hang']")
    bob.check("input[name='v-1-fix'][value='config']")
    bob.click("#workbench-form button[value=stay]")
    bob.wait_for_selector("#wb-decision:has-text('resolved by discussion')")
    assert Decision.objects.get(item=world.items[0], is_current=True).provenance == "discussed"
    assert Review.objects.get(item=world.items[1]).state == ReviewState.DISAGREEMENT  # goes to the lead
    lena.goto(f"{base}/studies/{slug}/disagreements/")
    assert "not resolved by discussion" in lena.inner_text("body")
    assert (
        lena.locator("#discussion-outcomes [data-cause=slip]").inner_text().strip() == "Slip or misreading: 1"
    )

    # The dashboard: blind kappa as before the reveal, after-discussion kappa moved.
    lena.goto(f"{base}/studies/{slug}/agreement/")
    lena.wait_for_selector("#before-after")
    row = lena.locator("#before-after tr[data-dimension=type][data-round='1']")
    assert row.locator(".blind-kappa").inner_text().strip() == f"{blind_kappa:.3f}" == "0.000"
    assert row.locator(".discussed-kappa").inner_text().strip() == "0.400"  # fault/fault/howto vs f/h/h
    assert _kappa(world) == blind_kappa
    assert bob.errors == [] and alice.errors == [] and lena.errors == []
