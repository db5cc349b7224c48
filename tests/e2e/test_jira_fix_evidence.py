"""Issue #23, Jira in Chromium: a lead searches a Jira replay with JQL on the import page, and an annotator
sees the issue's fix evidence from Jira's development panel and remote links beside it."""

from __future__ import annotations

import os
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import responses

from apps.accounts.models import Role
from apps.annotation import services as labelling
from apps.annotation.models import Assignment
from apps.corpus.models import ImportJob, Item, ItemLink
from apps.taxonomy.codebook_spec import codebook_from_data
from apps.taxonomy.loading import load_codebook
from tests.browser import sign_in, watched_page
from tests.corpus.test_jira import SERVER, TOKEN, serve_server_search
from tests.corpus.test_jira_links import serve_links
from tests.factories import MembershipFactory, StudyFactory, UserFactory

from .test_fix_evidence import CODEBOOK, PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
SHOTS = os.environ.get("SCREENSHOTS_DIR", "")


@pytest.fixture
def jira_replay(settings: Any, tmp_path: Path, monkeypatch: Any) -> Iterator[responses.RequestsMock]:
    """A Jira Server answering from the written samples (tests/corpus/samples/SOURCES.md), listed for the
    browser; the worker (Celery runs eagerly here) reads JIRA_TOKEN from its environment."""
    settings.UPLOAD_ROOT = tmp_path / "uploads"
    settings.JIRA_API_URLS = ["https://issues.apache.org/jira", SERVER]
    monkeypatch.setenv("JIRA_TOKEN", TOKEN)
    with responses.RequestsMock(assert_all_requests_are_fired=True) as mock:
        serve_server_search(mock)
        serve_links(mock)
        yield mock


def test_a_lead_searches_jira_and_an_annotator_sees_the_development_panels_commit(
    live_server: Any, browser: Any, jira_replay: responses.RequestsMock
) -> None:
    study = StudyFactory(slug="jira", name="Cloud faults", overlap=1)
    lead = MembershipFactory(study=study, role=Role.LEAD, user=UserFactory(username="lena")).user
    MembershipFactory(study=study, role=Role.ANNOTATOR, user=UserFactory(username="alice"))
    load_codebook(study, codebook_from_data(CODEBOOK), actor=lead)
    base = live_server.url
    page = watched_page(browser)
    page.set_default_timeout(20_000)
    log_in(page, base, "lena")

    page.goto(f"{base}/studies/jira/import/")
    page.get_by_role("link", name="Jira (REST API or export file)").click()
    page.get_by_label("JQL query").fill("project = MESOS AND resolution = Fixed")
    page.get_by_label("Jira site").fill(SERVER)
    if SHOTS:
        page.screenshot(path=f"{SHOTS}/jira-import-tab.png", full_page=True)
    page.get_by_role("button", name="Start import").click()
    page.wait_for_url("**/studies/jira/import/*/")
    page.wait_for_selector(".pill.job-succeeded")

    job = ImportJob.objects.get()
    assert (job.kind, job.created, job.params["api_url"]) == ("jira", 3, SERVER)
    assert TOKEN not in page.content()
    issue = Item.objects.get(external_id="MESOS-1")
    assert ItemLink.objects.filter(item=issue).count() == 3

    labelling.draw_round(study, number=1, size=3, seed=1, actor=lead)
    labelling.assign_round(study, 1, ["alice"], overlap=1, actor=lead)
    assignment = Assignment.objects.get(item=issue)
    log_in(page, base, "alice")
    page.goto(f"{base}/studies/jira/label/{assignment.pk}/")
    page.wait_for_selector("#workbench .dim.focused")
    page.keyboard.press("f")
    pane = page.locator(".fix-pane")
    assert pane.is_visible() and not page.locator(".item-body").is_visible()
    text = pane.inner_text()
    assert "Fixed the GPU isolator when a device disappears." in text
    assert "Jira development panel" in text and "Jira remote link" in text
    assert "MESOS-1: keep the agent up when a GPU disappears" in text and "merged" in text
    assert "isolator.cpp" in text and "+12" in text and "lists the files a commit changed" in text
    assert pane.locator("script").count() == 0  # the commit message's <script> is text
    if SHOTS:
        page.screenshot(path=f"{SHOTS}/jira-fix-pane.png", full_page=True)
    assert page.problems == []


log_in = partial(sign_in, password=PASSWORD)
