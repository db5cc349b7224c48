"""Issue #26 point 4 and #24 point 5 in Chromium: a lead edits the study's settings (an invalid overlap comes
back under its field without a page load, then saves) and requires the guidelines; publishes them; an
annotator opening their queue is sent to the guidelines and acknowledges them; the owner archives the study,
after which the lead's write is refused with the way out, and unarchives it.

With ``TAXONOMIST_E2E_SHOTS=DIR`` the screenshots are kept in DIR (else in the test's tmp_path).
"""

from __future__ import annotations

import os
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from apps.accounts.models import Membership, Role, Study, User
from apps.annotation.models import Assignment
from apps.annotation.services import assign_round, draw_round
from apps.corpus.models import Item, Source
from apps.taxonomy.codebook_spec import codebook_from_data
from apps.taxonomy.loading import load_codebook
from apps.taxonomy.models import GuidelinesAcknowledgement
from tests.browser import sign_in, watched_page

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SLUG = "settings-check"
PASSWORD = "a-long-study-password"
CODEBOOK = {
    "name": "Issue kinds",
    "dimensions": [
        {
            "key": "kind",
            "name": "Issue kind",
            "categories": [
                {
                    "key": "bug",
                    "name": "Bug",
                    "definition": "Something is broken.",
                    "include": "Crashes, wrong results.",
                    "exclude": "Questions about usage.",
                    "examples": ["https://github.com/example/trainer/issues/1"],
                },
                {"key": "question", "name": "Question", "definition": "Asks how to do something."},
            ],
        }
    ],
}

log_in = partial(sign_in, password=PASSWORD)


@pytest.fixture
def shots(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("TAXONOMIST_E2E_SHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def shoot(page: Any, folder: Path, name: str) -> None:
    page.screenshot(path=str(folder / f"{name}.png"), full_page=True, caret="initial")


def build_study() -> Study:
    study = Study.objects.create(slug=SLUG, name="Settings check", overlap=2)
    users = {}
    for name, role in (("olivia", Role.OWNER), ("lena", Role.LEAD), ("alice", Role.ANNOTATOR)):
        users[name] = User.objects.create_user(name, password=PASSWORD)
        Membership.objects.create(user=users[name], study=study, role=role)
    load_codebook(study, codebook_from_data(CODEBOOK), actor=users["lena"])
    for n in range(2):
        Item.objects.create(
            study=study,
            url=f"https://github.com/example/trainer/issues/{n + 1}",
            source=Source.GITHUB,
            external_id=str(n + 1),
            title=f"Rank {n} hangs",
            body="The all-reduce never returns.",
        )
    draw_round(study, number=1, size=2, seed=1, actor=users["lena"])
    assign_round(study, 1, ["alice"], overlap=1, actor=users["lena"])
    return study


def new_page(browser: Any) -> Any:
    # Chromium (and htmx) log each deliberate refusal (422 form errors, the 403 of an archived study)
    page = watched_page(
        browser, expected_console=("status of 422", "status of 403", "Response Status Error Code 403")
    )
    page.set_default_timeout(15_000)
    return page


def test_settings_guidelines_acknowledgement_and_archive(live_server: Any, browser: Any, shots: Path) -> None:
    study = build_study()
    base = live_server.url
    settings_url = f"{base}/studies/{SLUG}/settings/"

    lead = new_page(browser)
    log_in(lead, base, "lena")
    lead.goto(settings_url)
    lead.get_by_label("Overlap").fill("0")
    lead.get_by_role("button", name="Save settings").click()
    expect(lead.locator("#settings-form .has-error")).to_contain_text("greater than or equal to 1")
    assert lead.url == settings_url  # swapped in place by htmx
    lead.get_by_label("Overlap").fill("3")
    lead.get_by_label("Annotators must read the guidelines before they label").check()
    lead.get_by_role("button", name="Save settings").click()
    expect(lead.get_by_test_id("settings-saved")).to_contain_text("Overlap")
    shoot(lead, shots, "settings")
    study.refresh_from_db()
    assert (study.overlap, study.require_guidelines) == (3, True)

    lead.get_by_role("link", name="Guidelines").click()
    lead.get_by_label("Introduction").fill("Read the **whole** thread before you label.")
    lead.get_by_label("Note").fill("First version")
    lead.get_by_role("button", name="Publish").click()
    expect(lead.get_by_test_id("guidelines-introduction")).to_contain_text("Read the whole thread")
    expect(lead.get_by_test_id("guidelines-codebook")).to_contain_text("Crashes, wrong results.")
    shoot(lead, shots, "guidelines-lead")

    annotator = new_page(browser)
    log_in(annotator, base, "alice")
    annotator.goto(f"{base}/studies/{SLUG}/queue/")
    expect(annotator).to_have_url(f"{base}/studies/{SLUG}/guidelines/")
    expect(annotator.locator(".messages")).to_contain_text("Read the guidelines")
    shoot(annotator, shots, "guidelines-annotator")
    annotator.get_by_role("button", name="I have read the guidelines").click()
    expect(annotator).to_have_url(f"{base}/studies/{SLUG}/queue/")
    assert GuidelinesAcknowledgement.objects.filter(user__username="alice", version__number=1).exists()
    first = Assignment.objects.filter(annotator__username="alice").order_by("position").first()
    assert first is not None
    annotator.goto(f"{base}/studies/{SLUG}/label/{first.pk}/")  # open before the archive, saved after it

    owner = new_page(browser)
    log_in(owner, base, "olivia")
    owner.goto(settings_url)
    owner.get_by_role("button", name="Archive this study").click()
    expect(owner.get_by_test_id("archived-banner")).to_be_visible()
    shoot(owner, shots, "settings-archived")

    lead.goto(f"{base}/studies/{SLUG}/guidelines/")
    expect(lead.get_by_test_id("archived-banner")).to_be_visible()
    lead.get_by_role("button", name="Publish").click()
    expect(lead.get_by_test_id("error-page")).to_contain_text(
        f"Study {SLUG} is archived: unarchive it in Settings to change it."
    )
    shoot(lead, shots, "archived-refusal")
    # an htmx request the archive refuses (the workbench's autosave) says why at the top of the page
    annotator.locator("#memo").fill("Looks like a deadlock in the all-reduce.")
    expect(annotator.locator("ul.messages[data-request-errors]")).to_contain_text(
        f"Study {SLUG} is archived: unarchive it in Settings to change it."
    )
    shoot(annotator, shots, "archived-autosave")

    owner.get_by_role("button", name="Unarchive").click()
    expect(owner.get_by_test_id("archived-banner")).to_have_count(0)
    for page in (lead, annotator, owner):
        assert page.problems == []
