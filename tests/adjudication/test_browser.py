"""A lead resolves a disagreement in real Chromium: the queue by keyboard, a refused save, one click to take
an annotator's value, Ctrl+Enter to save. Also checks the pages run under the CSP (no inline code)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client

from apps.accounts.models import User
from apps.adjudication.models import Decision, Provenance
from apps.adjudication.queries import decision_findings
from apps.corpus.models import Item
from apps.taxonomy.models import Category
from tests.adjudication.conftest import CRASH, HANG, submit

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

MakeItem = Callable[..., Item]


def drive(browser: Any, base_url: str, session: str, item_id: int, claims: list[int]) -> list[str]:
    """The lead's clicks and keys in `browser` (the shared fixture). No ORM call in here: the database
    is checked once the lead is done. Returns console errors; `claims` gets the status of the claim."""
    from playwright.sync_api import expect

    problems: list[str] = []
    context = browser.new_context(base_url=base_url)
    context.add_cookies([{"name": "sessionid", "value": session, "url": base_url}])
    page = context.new_page()
    # the refused save answers 422 on purpose; Chromium logs every 4xx as a console error
    expected = "the server responded with a status of 422"
    page.on(
        "console",
        lambda m: problems.append(m.text) if m.type == "error" and expected not in m.text else None,
    )
    page.on("pageerror", lambda e: problems.append(str(e)))

    page.goto("/studies/ddp/disagreements/")
    expect(page.get_by_text("NCCL watchdog timeout")).to_be_visible()
    page.keyboard.press("j")
    # the page claims the item once loaded: a POST of its own, answered 204
    with page.expect_response(lambda r: r.url.endswith(f"/{item_id}/claim/")) as claimed:
        page.keyboard.press("Enter")
    claims.append(claimed.value.status)
    page.wait_for_url(f"**/studies/ddp/disagreements/{item_id}/")
    expect(page.get_by_text("It froze first.")).to_be_visible()
    expect(page.get_by_text("Nothing happens, forever.")).to_be_visible()  # a definition in conflict

    # a value nobody chose, saved without a rationale: refused (422), the form swapped in with the reason
    symptom = page.get_by_test_id("decide-1-symptom")
    symptom.select_option("wrong-output")
    symptom.press("Control+Enter")
    expect(page.get_by_test_id("refusal")).to_contain_text("write a rationale")

    # take bob's symptom (annotator 2, finding 1): htmx swaps the form in with "hang" selected
    page.locator('button[value="take:1:0:symptom"]').click()
    expect(page.get_by_test_id("decide-1-symptom")).to_have_value("hang")
    page.get_by_label("Rationale").fill("The hang came before the abort.")
    page.get_by_label("Rationale").press("Control+Enter")
    page.wait_for_url("**/studies/ddp/disagreements/")
    expect(page.get_by_text("Decision saved")).to_be_visible()
    context.close()
    return problems


def test_a_lead_resolves_a_disagreement_with_the_keyboard(
    live_server: Any, browser: Any, make_item: MakeItem, annotator_a: User, annotator_b: User, lead: User
) -> None:
    item = make_item(annotator_a, annotator_b, title="NCCL watchdog timeout")
    submit(item, annotator_a, CRASH, memo="Saw SIGABRT.")
    submit(item, annotator_b, HANG, memo="It froze first.")
    client = Client()
    client.force_login(lead)

    claims: list[int] = []
    problems = drive(browser, live_server.url, client.cookies["sessionid"].value, item.pk, claims)

    assert not problems, problems  # a CSP violation or a script error shows up here
    assert claims == [204]  # opening the page claimed it (the decision then released the claim)
    decision = Decision.objects.get(item=item)  # exactly one: the refused save wrote nothing
    assert (decision.provenance, decision.decided_by, decision.is_current) == (
        Provenance.ADJUDICATED,
        lead,
        True,
    )
    assert decision.rationale == "The hang came before the abort."
    assert decision_findings(decision)[0]["symptom"] == frozenset({Category.objects.get(key="hang").pk})
