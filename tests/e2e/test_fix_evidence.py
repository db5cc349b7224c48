"""Issue #23's done-when, in Chromium: a lead imports issues with their fixes from replays of GitHub, GitLab
and Jira through the import page, and an annotator labels the fix pattern with the diff beside the issue."""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import responses

from apps.accounts.models import Role
from apps.annotation import services as labelling
from apps.annotation.models import Annotation, Assignment, LabelValue
from apps.corpus.models import Item, ItemLink
from apps.taxonomy.codebook_spec import codebook_from_data
from apps.taxonomy.loading import load_codebook
from tests.browser import sign_in, watched_page
from tests.corpus.test_github_links import SHA, fixing_timeline
from tests.corpus.test_gitlab import API as GITLAB_API
from tests.corpus.test_gitlab import ISSUE_URL as GITLAB_ISSUE
from tests.corpus.test_gitlab import issue as gitlab_issue
from tests.corpus.test_gitlab import serve_issue_links
from tests.factories import MembershipFactory, StudyFactory, UserFactory

from .conftest import SAMPLES, _sample

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

GITHUB = "https://api.github.com/repos/pygithub/pygithub"
GITHUB_ISSUE = "https://github.com/PyGithub/PyGithub/issues/28"
PASSWORD = "correct-horse-battery"
CODEBOOK = {
    "name": "Fix patterns",
    "dimensions": [
        {
            "key": "fix",
            "name": "Fix pattern",
            "multiple": False,
            "categories": [
                {
                    "key": "api",
                    "name": "Change the API use",
                    "definition": "The fix calls the library differently.",
                },
                {
                    "key": "config",
                    "name": "Change the configuration",
                    "definition": "The fix changes settings.",
                },
            ],
        }
    ],
}


@pytest.fixture
def replays(settings: Any, tmp_path: Path) -> Iterator[responses.RequestsMock]:
    """GitHub and GitLab answered from the recorded samples (tests/corpus/samples/SOURCES.md)."""
    settings.UPLOAD_ROOT = tmp_path / "uploads"
    settings.GITLAB_API_URLS = ["https://gitlab.com/api/v4", GITLAB_API]
    with responses.RequestsMock(assert_all_requests_are_fired=True) as mock:
        mock.get(f"{GITHUB}/issues/28", json=_sample("pygithub_PyGithub_issue_28.json"))
        mock.get(f"{GITHUB}/issues/28/comments", json=_sample("pygithub_PyGithub_issue_28_comments.json"))
        mock.get(f"{GITHUB}/issues/28/timeline", json=fixing_timeline())
        mock.get(f"{GITHUB}/pulls/857/files", status=404, json={"message": "Not Found"})
        mock.get(f"{GITHUB}/pulls/31/files", json=_sample("pygithub_PyGithub_pull_31_files.json"))
        mock.get(
            f"https://api.github.com/repos/jacquev6/pygithub/commits/{SHA}",
            json=_sample("pygithub_jacquev6_PyGithub_commit_1292bf0.json"),
        )
        mock.get(f"{GITLAB_API}/projects/fakeorg%2Ffakeproject/issues/461536", json=gitlab_issue())
        serve_issue_links(mock)
        yield mock


def start_import(page: Any, base: str, tab: str) -> None:
    page.goto(f"{base}/studies/fix/import/")
    page.get_by_role("link", name=tab).click()
    page.wait_for_load_state()


def finish_import(page: Any) -> None:
    page.get_by_role("button", name="Start import").click()
    page.wait_for_url("**/studies/fix/import/*/")
    page.wait_for_selector(".pill.job-succeeded")


def test_a_lead_imports_fixes_from_three_trackers_and_an_annotator_labels_beside_the_diff(
    live_server: Any, browser: Any, replays: responses.RequestsMock
) -> None:
    study = StudyFactory(slug="fix", name="Fix patterns", overlap=1)
    lead = MembershipFactory(study=study, role=Role.LEAD, user=UserFactory(username="lena")).user
    MembershipFactory(study=study, role=Role.ANNOTATOR, user=UserFactory(username="alice"))
    load_codebook(study, codebook_from_data(CODEBOOK), actor=lead)
    base = live_server.url
    page = watched_page(browser, expected_console=("404",))
    page.set_default_timeout(20_000)
    log_in(page, base, "lena")

    start_import(page, base, "GitHub REST API")
    page.get_by_label("Issue URLs", exact=False).first.check()
    page.locator("#id_urls").fill(GITHUB_ISSUE)
    finish_import(page)
    start_import(page, base, "GitLab REST API")
    page.get_by_label("GitLab instance").select_option(GITLAB_API)
    page.locator("#id_urls").fill(GITLAB_ISSUE)
    finish_import(page)
    start_import(page, base, "Jira (REST API or export file)")
    page.get_by_label("Jira export").set_input_files(str(SAMPLES / "jira_export_mesos.xml"))
    finish_import(page)

    assert sorted(Item.objects.values_list("source", flat=True)) == ["github", "gitlab", "jira", "jira"]
    assert ItemLink.objects.filter(item__source="github").count() == 3
    assert ItemLink.objects.filter(item__source="gitlab", kind="merge_request").count() == 2
    github_item = Item.objects.get(source="github")
    page.goto(f"{base}/studies/fix/items/{github_item.pk}/")
    page.get_by_role("tab", name="Fix (3)").click()
    assert page.locator(".fix-pane").is_visible() and not page.locator(".item-body").is_visible()

    labelling.draw_round(study, number=1, size=4, seed=1, actor=lead)
    labelling.assign_round(study, 1, ["alice"], overlap=1, actor=lead)
    assignment = Assignment.objects.get(item=github_item)
    log_in(page, base, "alice")
    page.goto(f"{base}/studies/fix/label/{assignment.pk}/")
    page.wait_for_selector("#workbench .dim.focused")
    assert page.locator(".item-body").is_visible() and not page.locator(".fix-pane").is_visible()
    page.keyboard.press("f")  # the diff beside the issue
    pane = page.locator(".fix-pane")
    assert pane.is_visible() and not page.locator(".item-body").is_visible()
    assert "Fix the labels of issues" in pane.inner_text() and "Closing keyword" in pane.inner_text()
    added = pane.locator(".fix-file .gi").first
    assert added.is_visible() and added.inner_text().startswith("+")
    assert "codegen/templates/GithubObject.py" in pane.inner_text()
    page.locator(".fix-file summary").first.click()  # collapsible
    page.keyboard.press("1")  # the first fix pattern, with the diff in view
    url = page.url
    page.keyboard.press("s")
    page.wait_for_url(lambda u: u != url)

    annotation = Annotation.objects.get(assignment=assignment)
    chosen = LabelValue.objects.filter(finding__annotation=annotation).values_list("category__key", flat=True)
    assert annotation.submitted_at is not None and list(chosen) == ["api"]
    assert page.problems == []


log_in = partial(sign_in, password=PASSWORD)
