"""The codebook editor in real Chromium: a lead renames a category and merges another into it, through
htmx, and the tree, the panel and the database follow."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from apps.accounts.models import Study, User
from apps.annotation.models import LabelValue
from apps.taxonomy.models import CategoryStatus, Codebook
from tests.browser import watched_page
from tests.taxonomy.conftest import category, put_label

pytestmark = pytest.mark.browser


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    page = watched_page(browser, viewport={"width": 1280, "height": 900})
    yield page
    assert page.problems == [], page.problems  # no script error and no CSP violation on the way


def test_lead_renames_and_merges_in_the_editor(
    live_server: Any, page: Any, study: Study, lead: User, annotator_a: User, codebook: Codebook
) -> None:
    hang, crash = category(study, "hang"), category(study, "crash")
    label = put_label(study, annotator_a, crash)

    page.goto(f"{live_server.url}/login/")
    page.fill("#id_username", "lena")
    page.fill("#id_password", "correct-horse-battery")
    page.click("button[type=submit]")
    page.goto(f"{live_server.url}/studies/{study.slug}/codebook/")

    # Rename: the panel loads without leaving the page, the tree refreshes after saving.
    page.click("#codebook-trees a.category-link:text-is('Hang')")
    page.wait_for_selector("#category-panel h2:has-text('Program Failure > Hang')")
    page.fill("#id_edit-name", "Hang or deadlock")
    page.click("#category-panel button:text-is('Save')")
    page.wait_for_selector("#category-panel [role=status]:has-text('renamed from “Hang”')")
    page.wait_for_selector("#codebook-trees a.category-link:text-is('Hang or deadlock')")
    assert page.inner_text("#codebook-version") == "2"
    assert page.url.endswith("/codebook/")  # htmx swapped regions, no navigation

    # Merge Crash into the renamed category, confirming the dialog.
    page.click("#codebook-trees a.category-link:text-is('Crash')")
    page.wait_for_selector("#category-panel h2:has-text('Program Failure > Crash')")
    page.select_option("#id_target", value=str(hang.pk))
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("#category-panel button:text-is('Merge')")
    merged = "Merged “Crash” into “Hang or deadlock”: 1 label(s)"
    page.wait_for_selector(f"#category-panel [role=status]:has-text('{merged}')")
    page.wait_for_selector("#codebook-version:text-is('3')")
    assert page.locator("#codebook-trees .category-tree a.category-link:text-is('Crash')").count() == 0
    gone = page.text_content("#codebook-trees details.gone") or ""  # a closed <details>: not inner_text
    assert "merged into Training & Evaluation > Program Failure > Hang or deadlock" in " ".join(gone.split())

    label = LabelValue.objects.get(pk=label.pk)
    assert (label.category_id, label.original_category_id) == (hang.pk, crash.pk)
    assert category(study, "crash").status == CategoryStatus.MERGED
    assert Codebook.objects.get(pk=codebook.pk).version == 3
