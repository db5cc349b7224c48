"""Issue #26 point 7 in Chromium: a lead whose study holds only URLs (as the TOSEM 2023 package publishes
them) fetches their text from the import page; the annotator then reads the issue, not a bare link."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import responses

from apps.accounts.models import Role
from apps.corpus.models import ImportJob, Item
from apps.corpus.records import ItemRecord
from apps.corpus.services import upsert_records
from tests.browser import sign_in, watched_page
from tests.factories import MembershipFactory, StudyFactory, UserFactory

from .conftest import API, GITHUB_ISSUES, _sample
from .test_fix_evidence import PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
SHOTS = os.environ.get("SCREENSHOTS_DIR", "")


@pytest.fixture
def replay(settings: Any, tmp_path: Path) -> Iterator[responses.RequestsMock]:
    settings.UPLOAD_ROOT = tmp_path / "uploads"
    with responses.RequestsMock(assert_all_requests_are_fired=True) as mock:
        for path, issue, comments in GITHUB_ISSUES.values():
            mock.get(re.compile(re.escape(f"{API}{path}") + "$", re.I), json=_sample(issue))
            mock.get(
                re.compile(re.escape(f"{API}{path}/comments") + r"(\?.*)?$", re.I), json=_sample(comments)
            )
        mock.get(f"{API}/repos/octo/gone/issues/9", status=404, json={"message": "Not Found"})
        yield mock


def test_a_lead_fetches_the_text_of_a_url_only_study_from_the_import_page(
    live_server: Any, browser: Any, replay: responses.RequestsMock
) -> None:
    study = StudyFactory(slug="urls", name="URL-only study")
    MembershipFactory(study=study, role=Role.LEAD, user=UserFactory(username="lena"))
    urls = [*GITHUB_ISSUES, "https://github.com/octo/gone/issues/9"]
    upsert_records(study, [ItemRecord(url=u, source="github", external_id="") for u in urls])
    base = live_server.url
    page = watched_page(browser, expected_console=("404",))
    page.set_default_timeout(20_000)
    sign_in(page, base, "lena", password=PASSWORD)

    page.goto(f"{base}/studies/urls/import/")
    page.get_by_role("link", name="Fetch URL-only items").click()
    assert "3 items of this study have only a URL" in page.locator(".import-form").inner_text()
    if SHOTS:
        page.screenshot(path=f"{SHOTS}/hydrate-tab.png", full_page=True)
    page.get_by_role("button", name="Start import").click()
    page.wait_for_url("**/studies/urls/import/*/")
    page.wait_for_selector(".pill.job-succeeded")
    if SHOTS:
        page.screenshot(path=f"{SHOTS}/hydrate-job.png", full_page=True)

    job = ImportJob.objects.get()
    assert (job.kind, job.updated, job.failed) == ("hydrate", 2, 1)
    assert "https://github.com/octo/gone/issues/9" in page.locator("main").inner_text()
    issue = Item.objects.get(url="https://github.com/sigmavirus24/github3.py/issues/187")
    page.goto(f"{base}/studies/urls/items/{issue.pk}/")
    assert "Document two factor auth" in page.locator("h1").inner_text()
    assert page.problems == []
