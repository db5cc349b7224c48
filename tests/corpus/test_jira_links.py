"""Jira fix evidence: the development panel's commits and pull requests and the remote links, as ItemLinks;
a site without them imports its issues anyway, saying so once; faults are waited out or reported."""

from __future__ import annotations

import io
from typing import Any

import pytest
import requests
import responses
from django.core.management import call_command

from apps.accounts.models import Study
from apps.corpus.jira import JiraClient
from apps.corpus.jira_links import FILES_NOTE, detail_links, detail_requests, merge, remote_links
from apps.corpus.models import ImportJob, ItemLink

from .conftest import sample
from .test_jira import NOW, SERVER, TOKEN, serve_server_search

DEV = f"{SERVER}/rest/dev-status/latest/issue"
COMMIT = "https://github.com/apache/mesos/commit/3f1e2d9c0b8a7f6e5d4c3b2a1908f7e6d5c4b3a2"
PULL = "https://github.com/apache/mesos/pull/97"
GITLAB_COMMIT = "https://gitlab.example.org/mesos/mesos-ci/-/commit/0badc0ffee0badc0ffee0badc0ffee0badc0ffee"


def serve_links(mock: Any, *, summary_status: int = 200) -> None:
    """MESOS-1 (issue id 12990001) has a commit and a pull request in its development panel and three remote
    links; MESOS-2 and MESOS-3 have nothing linked."""
    summary = responses.matchers.query_param_matcher({"issueId": "12990001"})
    if summary_status == 200:
        mock.get(f"{DEV}/summary", json=sample("jira_devstatus_summary_mesos1.json"), match=[summary])
        mock.get(f"{DEV}/summary", json=sample("jira_devstatus_summary_empty.json"))
        for data_type in ("repository", "pullrequest"):
            mock.get(
                f"{DEV}/detail",
                json=sample(f"jira_devstatus_detail_{data_type}_mesos1.json"),
                match=[
                    responses.matchers.query_param_matcher(
                        {"issueId": "12990001", "applicationType": "github", "dataType": data_type}
                    )
                ],
            )
    else:
        mock.get(f"{DEV}/summary", status=summary_status, json={"errorMessages": ["not found"]})
    mock.get(f"{SERVER}/rest/api/2/issue/MESOS-1/remotelink", json=sample("jira_remotelinks_mesos1.json"))
    mock.get(f"{SERVER}/rest/api/2/issue/MESOS-2/remotelink", json=[])
    mock.get(f"{SERVER}/rest/api/2/issue/MESOS-3/remotelink", json=[])


def client(notices: list[str], sleeps: list[float] | None = None) -> JiraClient:
    return JiraClient(
        SERVER, TOKEN, sleep=(sleeps if sleeps is not None else []).append, clock=lambda: NOW,
        on_notice=notices.append,
    )  # fmt: skip


@pytest.fixture
def rsps() -> Any:
    with responses.RequestsMock(assert_all_requests_are_fired=True) as mock:
        yield mock


# --- reading the answers ---------------------------------------------------------------------------------


def test_the_summary_names_the_detail_reads_worth_making() -> None:
    assert detail_requests(sample("jira_devstatus_summary_mesos1.json")) == [
        ("github", "repository"),
        ("github", "pullrequest"),
    ]
    assert detail_requests(sample("jira_devstatus_summary_empty.json")) == []
    assert detail_requests({"summary": "nonsense"}) == [] and detail_requests(None) == []


def test_a_panel_commit_keeps_its_files_and_counts_and_a_non_web_url_is_dropped() -> None:
    (commit,) = detail_links(sample("jira_devstatus_detail_repository_mesos1.json"))

    assert (commit.kind, commit.url, commit.provenance, commit.state) == (
        "commit", COMMIT, "development_panel", "committed",
    )  # fmt: skip
    assert commit.title == "Fixed the GPU isolator when a device disappears."
    assert [(f.filename.rsplit("/", 1)[-1], f.additions, f.deletions, f.patch) for f in commit.files] == [
        ("isolator.cpp", 12, 3, ""),
        ("nvidia_gpu_isolator_tests.cpp", 40, 0, ""),
    ]
    assert commit.note == FILES_NOTE and commit.found_at is not None and commit.found_at.year == 2016


def test_a_panel_pull_request_is_merged_and_remote_links_keep_only_changes() -> None:
    (pull,) = detail_links(sample("jira_devstatus_detail_pullrequest_mesos1.json"))
    remote = remote_links(sample("jira_remotelinks_mesos1.json"))

    assert (pull.kind, pull.url, pull.state, pull.metadata["merged"]) == (
        "pull_request",
        PULL,
        "merged",
        True,
    )
    assert [(link.kind, link.url, link.provenance) for link in remote] == [
        ("pull_request", PULL, "remote_link"),
        ("commit", GITLAB_COMMIT, "remote_link"),
    ]  # the blog post is no change
    assert remote[0].state == "closed" and remote[1].metadata["relationship"] == "fixed by"
    assert [link.provenance for link in merge([*remote, pull])] == ["development_panel", "remote_link"]
    assert remote_links({"not": "a list"}) == []


# --- the client ------------------------------------------------------------------------------------------


def test_a_search_reads_each_issues_panel_and_remote_links(rsps: Any) -> None:
    serve_server_search(rsps)
    serve_links(rsps)
    notices: list[str] = []

    first, second, third = client(notices).search("project = MESOS")

    assert first.links is not None and sorted(link.url for link in first.links) == sorted(
        [COMMIT, PULL, GITLAB_COMMIT]
    )
    assert {link.url: link.provenance for link in first.links}[PULL] == "development_panel"
    assert second.links == [] and third.links == [] and notices == []
    dev_reads = [c for c in rsps.calls if "/dev-status/" in c.request.url]
    assert len(dev_reads) == 3 + 2  # one summary per issue, a detail per kind the summary counts
    assert all(c.request.headers["Authorization"] == f"Bearer {TOKEN}" for c in rsps.calls)


@pytest.mark.parametrize("status", [404, 403, 401])
def test_a_site_without_a_development_panel_is_told_once_and_not_asked_again(rsps: Any, status: int) -> None:
    serve_server_search(rsps)
    serve_links(rsps, summary_status=status)
    notices: list[str] = []

    records = list(client(notices).search("project = MESOS"))

    assert [r.external_id for r in records] == ["MESOS-1", "MESOS-2", "MESOS-3"]
    assert records[0].links is not None and {link.provenance for link in records[0].links} == {"remote_link"}
    assert len([c for c in rsps.calls if "/dev-status/" in c.request.url]) == 1
    assert len(notices) == 1 and f"answered {status}" in notices[0] and "development panel" in notices[0]
    assert TOKEN not in notices[0]


def test_rate_limits_server_errors_and_truncated_json_from_the_panel_are_waited_out(rsps: Any) -> None:
    rsps.get(f"{DEV}/summary", status=429, headers={"Retry-After": "7"})
    rsps.get(f"{DEV}/summary", status=502)
    rsps.get(f"{DEV}/summary", body=requests.ConnectionError("reset"))
    rsps.get(f"{DEV}/summary", body='{"summary": {"repository": ')
    rsps.get(f"{DEV}/summary", json=sample("jira_devstatus_summary_empty.json"))
    rsps.get(f"{SERVER}/rest/api/2/issue/MESOS-1/remotelink", json=[])
    sleeps: list[float] = []
    notices: list[str] = []

    links = client(notices, sleeps).links_of({"key": "MESOS-1", "id": "12990001"})

    assert links == [] and sleeps == [7.0, 1.0, 2.0, 4.0] and notices == []


def test_a_panel_that_keeps_failing_keeps_the_issues_stored_links_and_says_so(rsps: Any) -> None:
    for _ in range(6):
        rsps.get(f"{DEV}/summary", status=502)
    notices: list[str] = []

    links = client(notices).links_of({"key": "MESOS-1", "id": "12990001"})

    assert links is None  # None: the upsert leaves the item's links as they are
    assert len(notices) == 1 and notices[0].startswith("MESOS-1: the development panel could not be read")


# --- the import job --------------------------------------------------------------------------------------


@pytest.mark.django_db
@responses.activate
def test_import_jira_stores_the_links_with_provenance_and_a_rerun_changes_nothing(
    study: Study, monkeypatch: Any
) -> None:
    monkeypatch.setenv("JIRA_TOKEN", TOKEN)

    def run(*extra: str) -> str:
        responses.mock.reset()
        serve_server_search(responses.mock)
        serve_links(responses.mock, summary_status=404)
        out = io.StringIO()
        call_command("import_jira", "ddp", "--jql", "project = MESOS", "--api-url", SERVER, *extra,
                     stdout=out, stderr=io.StringIO())  # fmt: skip
        return out.getvalue()

    assert "3 created" in run()
    links = ItemLink.objects.filter(item__external_id="MESOS-1").order_by("url")
    assert [(link.kind, link.provenance) for link in links] == [
        ("pull_request", "remote_link"),
        ("commit", "remote_link"),
    ]
    job = ImportJob.objects.latest("pk")
    assert [e["message"] for e in job.errors if "development panel" in e["message"]] == [
        "This Jira site answered 404 to GET /jira/rest/dev-status/latest/issue/summary: no development "
        "panel is read for this import (the issues are imported without it)"
    ]
    assert "0 created, 0 updated, 3 unchanged" in run()
    assert ItemLink.objects.count() == 2


@pytest.mark.django_db
@responses.activate
def test_import_jira_with_no_links_reads_neither_panel_nor_remote_links(study: Study) -> None:
    serve_server_search(responses.mock)

    call_command("import_jira", "ddp", "--jql", "project = MESOS", "--api-url", SERVER, "--no-links",
                 stdout=io.StringIO(), stderr=io.StringIO())  # fmt: skip

    assert not ItemLink.objects.exists()
    assert not [c for c in responses.calls if "remotelink" in c.request.url or "dev-status" in c.request.url]
    assert ImportJob.objects.get().params["no_links"] is True


# --- a query from the browser and the API ----------------------------------------------------------------


@pytest.fixture
def listed(settings: Any, upload_root: Any) -> None:
    settings.JIRA_API_URLS = ["https://issues.apache.org/jira", SERVER]


@pytest.mark.django_db
def test_a_lead_searches_a_listed_jira_site_from_the_import_page(
    study: Study, lead: Any, client: Any, listed: None, monkeypatch: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:  # fmt: skip
    monkeypatch.setenv("JIRA_TOKEN", TOKEN)
    client.force_login(lead)
    page = client.get(f"/studies/{study.slug}/import/?source=jira").content.decode()
    assert "JQL query" in page and f'<option value="{SERVER}">' in page and TOKEN not in page

    with responses.RequestsMock() as mock, django_capture_on_commit_callbacks(execute=True):
        serve_server_search(mock)
        serve_links(mock)
        response = client.post(
            f"/studies/{study.slug}/import/",
            {
                "kind": "jira",
                "jql": "project = MESOS",
                "api_url": f"{SERVER.upper().replace('/JIRA', '/jira')}/",
            },
        )

    assert response.status_code == 302
    job = ImportJob.objects.get()
    assert (job.status, job.created, job.params["api_url"], job.params["jql"]) == (
        "succeeded", 3, SERVER, "project = MESOS",
    )  # fmt: skip
    assert (
        TOKEN not in str(job.params) and ItemLink.objects.filter(provenance="development_panel").count() == 2
    )


@pytest.mark.django_db
def test_a_site_the_operator_did_not_list_is_refused_before_any_request(
    study: Study, lead: Any, client: Any, listed: None
) -> None:
    client.force_login(lead)
    evil = {"kind": "jira", "jql": "project = X", "api_url": "http://169.254.169.254/latest"}

    with responses.RequestsMock(assert_all_requests_are_fired=False):  # any request would raise
        page = client.post(f"/studies/{study.slug}/import/", evil)
        api = client.post(f"/api/v1/studies/{study.slug}/imports/", evil, content_type="application/json")
        neither = client.post(f"/studies/{study.slug}/import/", {"kind": "jira"})
        no_site = client.post(f"/studies/{study.slug}/import/", {"kind": "jira", "jql": "project = X"})

    assert page.status_code == 400 and "is not a Jira site this server may search" in page.content.decode()
    assert api.status_code == 400 and "JIRA_API_URLS lists: https://issues.apache.org/jira" in str(api.json())
    assert "a JQL query (with its Jira site) or an export file" in neither.content.decode()
    assert "A query needs the Jira site to search." in no_site.content.decode()
    assert not ImportJob.objects.exists()


@pytest.mark.django_db
def test_the_api_starts_a_jql_import_of_a_listed_site(
    study: Study, lead: Any, client: Any, listed: None, django_capture_on_commit_callbacks: Any
) -> None:
    client.force_login(lead)
    body = {"kind": "jira", "jql": "project = MESOS", "api_url": SERVER, "no_links": True, "limit": 2}

    with responses.RequestsMock() as mock, django_capture_on_commit_callbacks(execute=True):
        serve_server_search(mock)
        response = client.post(
            f"/api/v1/studies/{study.slug}/imports/", body, content_type="application/json"
        )

    assert response.status_code == 202, response.json()
    job = ImportJob.objects.get()
    assert (job.status, job.created, job.params["no_links"], job.params["limit"]) == ("succeeded", 2, True, 2)
