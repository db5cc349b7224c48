"""Jira: Server and Cloud searches, export files, wiki markup and ADF through the sanitizer, the command."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path
from typing import Any

import pytest
import requests
import responses
from django.core.management import CommandError, call_command
from responses import matchers

from apps.accounts.models import Study
from apps.core.models import JobStatus
from apps.corpus.jira import ExportError, JiraClient, TokenRejected, read_export
from apps.corpus.jira_markup import adf_to_markdown, wiki_to_markdown
from apps.corpus.models import ImportJob, Item
from apps.corpus.rendering import render_markdown

from .conftest import SAMPLES, sample

SERVER = "https://issues.example.org/jira"
CLOUD = "https://acme.atlassian.net"
TOKEN = "jira-NeverStoreThisToken"
NOW = 1_700_000_000.0


def server_client(sleeps: list[float] | None = None) -> JiraClient:
    return JiraClient(SERVER, TOKEN, sleep=(sleeps if sleeps is not None else []).append, clock=lambda: NOW)


def serve_server_search(mock: Any) -> None:
    url = f"{SERVER}/rest/api/2/search"
    mock.get(url, json=sample("jira_server_search_page1.json"),
             match=[matchers.query_param_matcher({"startAt": "0"}, strict_match=False)])  # fmt: skip
    mock.get(url, json=sample("jira_server_search_page2.json"),
             match=[matchers.query_param_matcher({"startAt": "2"}, strict_match=False)])  # fmt: skip
    mock.get(f"{SERVER}/rest/api/2/issue/MESOS-2/comment", json=sample("jira_server_comments_mesos2.json"))


# --- markup ------------------------------------------------------------------------------------------------


def test_wiki_markup_becomes_markdown_and_its_html_stays_text() -> None:
    text = (
        "h2. Steps\n* *bold* _it_ {{mono}}\n** [link|https://x.org] [~bob]\n"
        "{code:java}\nint *x*;\n{code}\n<script>alert(1)</script>"
    )

    markdown = wiki_to_markdown(text)
    html = render_markdown(markdown)

    assert markdown.startswith("## Steps\n- **bold** *it* `mono`\n   - [link](https://x.org) @bob")
    assert "```java\nint *x*;\n```" in markdown  # code is left alone
    assert "<h2>Steps</h2>" in html and '<a href="https://x.org"' in html and "<script>" not in html


def test_adf_becomes_markdown_with_text_escaped_and_bad_links_inert() -> None:
    document = {"type": "doc", "content": [
        {"type": "heading", "attrs": {"level": 2}, "content": [{"type": "text", "text": "Crash"}]},
        {"type": "paragraph", "content": [
            {"type": "text", "text": "<img src=x onerror=alert(1)> *not bold*"},
            {"type": "text", "text": "link",
             "marks": [{"type": "link", "attrs": {"href": "javascript:alert(1)"}}]},
            {"type": "mention", "attrs": {"text": "@ana"}},
        ]},
        {"type": "bulletList", "content": [{"type": "listItem", "content": [
            {"type": "paragraph",
             "content": [{"type": "text", "text": "one", "marks": [{"type": "strong"}]}]}]}]},
    ]}  # fmt: skip

    markdown = adf_to_markdown(document)
    html = render_markdown(markdown)

    assert markdown.startswith("## Crash\n\n")
    assert "<img" not in html and "onerror" not in html.replace("onerror=alert(1)", "")  # shown as text only
    assert "&lt;img src=x onerror=alert(1)&gt; *not bold*" in html
    assert 'href="javascript' not in html and "@ana" in html and "<strong>one</strong>" in html


# --- the REST API ----------------------------------------------------------------------------------------


def test_a_server_search_pages_by_start_at_and_fetches_the_comments_it_did_not_embed(rsps: Any) -> None:
    serve_server_search(rsps)

    records = list(server_client().search("project = MESOS", links=False))

    assert [r.external_id for r in records] == ["MESOS-1", "MESOS-2", "MESOS-3"]
    first = records[0]
    assert first.url == "https://issues.example.org/browse/MESOS-1" and first.source == "jira"
    assert first.tags == ["gpu", "isolation", "component:agent"]
    assert first.metadata["issue_links"] == [{"type": "is duplicated by", "key": "MESOS-500"}]
    assert first.body.startswith("### Steps\n- start the agent with `--isolation=gpu/nvidia`")
    assert "**1.0**" in first.comments[0].body
    assert [c.body for c in records[1].comments] == ["first", "second, fetched on its own"]
    assert all(call.request.headers["Authorization"] == f"Bearer {TOKEN}" for call in rsps.calls)


def test_a_cloud_search_pages_by_next_page_token_with_basic_auth_and_adf(rsps: Any) -> None:
    url = f"{CLOUD}/rest/api/3/search/jql"
    rsps.get(url, json=sample("jira_cloud_search_jql_page1.json"))
    token = matchers.query_param_matcher({"nextPageToken": "CAEaAggD"}, strict_match=False)
    rsps.get(url, json=sample("jira_cloud_search_jql_page2.json"), match=[token])

    client = JiraClient(CLOUD, TOKEN, "ana@example.org", sleep=lambda _s: None)
    records = list(client.search("project = ML", links=False))

    assert client.cloud and [r.external_id for r in records] == ["ML-7", "ML-8"]
    assert records[0].body.startswith("Crash in `allreduce` on **8 GPUs**") and "```python" in records[0].body
    assert records[0].comments[0].body.strip() == "Fixed by upgrading NCCL"
    expected = "Basic " + base64.b64encode(f"ana@example.org:{TOKEN}".encode()).decode()
    assert all(call.request.headers["Authorization"] == expected for call in rsps.calls)


def test_rate_limits_server_errors_resets_and_truncated_json_are_waited_out(rsps: Any) -> None:
    sleeps: list[float] = []
    url = f"{SERVER}/rest/api/2/search"
    rsps.get(url, status=429, headers={"Retry-After": "5"})
    rsps.get(url, status=502)
    rsps.get(url, body=requests.ConnectionError("reset"))
    rsps.get(url, body='{"issues": [')
    page = sample("jira_server_search_page2.json")
    page["startAt"], page["total"] = 0, 1
    rsps.get(url, json=page)

    (record,) = server_client(sleeps).search("key = MESOS-3", links=False)

    assert record.external_id == "MESOS-3" and sleeps == [5.0, 1.0, 2.0, 4.0]


def test_a_rejected_token_stops_without_showing_it(rsps: Any) -> None:
    rsps.get(f"{SERVER}/rest/api/2/search", status=401, json={"errorMessages": ["unauthorized"]})

    with pytest.raises(TokenRejected, match="JIRA_TOKEN") as rejected:
        list(server_client().search("project = MESOS"))

    assert TOKEN not in str(rejected.value) and TOKEN not in repr(server_client())


# --- export files ----------------------------------------------------------------------------------------


def test_an_xml_export_is_read_with_html_bodies_comments_labels_and_links() -> None:
    first, second = read_export(str(SAMPLES / "jira_export_mesos.xml"))

    assert (first.url, first.external_id, first.body_format) == (
        "https://issues.example.org/browse/MESOS-4001", "MESOS-4001", "html",
    )  # fmt: skip
    assert first.title == "Agent crashes when a GPU disappears" and first.tags == ["gpu", "crash"]
    assert first.metadata["status"] == "Resolved" and first.metadata["issue_links"] == [
        {"type": "Duplicate", "key": "MESOS-500"}
    ]
    assert first.comments[0].author == "kim" and first.comments[0].created_at is not None
    assert second.external_id == "MESOS-4002" and second.comments == []


def test_a_json_export_is_the_search_answer(tmp_path: Path) -> None:
    path = tmp_path / "export.json"
    path.write_text(json.dumps(sample("jira_server_search_page1.json")), encoding="utf-8")

    assert [r.external_id for r in read_export(str(path))] == ["MESOS-1", "MESOS-2"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"issues": [{"fields": {}}]}', "issue 1 has no 'key'"),
        ("not json at all", "neither Jira XML nor JSON"),
        ('<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "b">]><rss/>', "declares a DOCTYPE"),
        (
            "<rss><channel><item><key>A-1</key></item></channel></rss>",
            "item 1 lacks <key> or an http(s) <link>",
        ),
        ("<rss><channel><item>", "the XML cannot be read"),
    ],
)
def test_a_bad_export_is_refused_naming_the_problem(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / ("bad.xml" if content.startswith("<") else "bad.json")
    path.write_text(content, encoding="utf-8")

    with pytest.raises(ExportError, match=message.replace("(", r"\(").replace(")", r"\)")):
        list(read_export(str(path)))


# --- the command -----------------------------------------------------------------------------------------


@pytest.mark.django_db
@responses.activate
def test_import_jira_searches_a_server_and_a_rerun_changes_nothing(study: Study, monkeypatch: Any) -> None:
    monkeypatch.setenv("JIRA_TOKEN", TOKEN)

    def run() -> str:
        serve_server_search(responses.mock)
        out = io.StringIO()
        call_command("import_jira", "ddp", "--jql", "project = MESOS", "--api-url", SERVER, "--no-links",
                     stdout=out, stderr=io.StringIO())  # fmt: skip
        return out.getvalue()

    assert "3 created" in run()
    assert "0 created, 0 updated, 3 unchanged" in run()
    item = Item.objects.get(external_id="MESOS-1")
    assert item.source == "jira" and item.url == "https://issues.example.org/browse/MESOS-1"
    job = ImportJob.objects.order_by("-pk").first()
    assert job is not None and job.kind == "jira" and TOKEN not in json.dumps(job.params)


@pytest.mark.django_db
def test_import_jira_reads_an_export_file_and_renders_its_html_safely(study: Study) -> None:
    call_command("import_jira", "ddp", "--file", str(SAMPLES / "jira_export_mesos.xml"), stdout=io.StringIO(),
                 stderr=io.StringIO())  # fmt: skip

    item = Item.objects.get(external_id="MESOS-4001")
    assert "<b>aborts</b>" in item.body_html or "<strong>aborts</strong>" in item.body_html
    assert "<script>" not in item.body_html and item.comments.count() == 1


@pytest.mark.django_db
def test_a_jira_file_with_nan_is_refused_naming_where_and_writes_nothing(
    study: Study, tmp_path: Path
) -> None:
    bad = tmp_path / "bad.json"
    issue = {"key": "A-1", "self": "https://jira.example.org/rest/api/2/issue/1", "fields": {"points": 1}}
    text = json.dumps({"issues": [issue, {**issue, "key": "A-2", "fields": {"points": float("nan")}}]})
    bad.write_text(text, encoding="utf-8")

    with pytest.raises(
        CommandError, match=r"bad\.json: at issues\[1\]\.fields\.points: NaN is not valid JSON: write null"
    ):
        call_command("import_jira", "ddp", "--file", str(bad), stdout=io.StringIO(), stderr=io.StringIO())

    assert not Item.objects.exists()


@pytest.mark.django_db
def test_import_jira_with_a_bad_file_writes_nothing_and_a_query_needs_a_site(
    study: Study, tmp_path: Path
) -> None:
    bad = tmp_path / "bad.json"
    first = {"key": "A-1", "self": "https://jira.example.org/rest/api/2/issue/1", "fields": {}}
    bad.write_text(json.dumps({"issues": [first, {"fields": {}}]}), encoding="utf-8")

    with pytest.raises(CommandError, match=r"nothing was imported\. bad\.json: issue 2 has no 'key'"):
        call_command("import_jira", "ddp", "--file", str(bad), stdout=io.StringIO(), stderr=io.StringIO())
    with pytest.raises(CommandError, match="--jql needs --api-url"):
        call_command("import_jira", "ddp", "--jql", "project = X", stderr=io.StringIO())

    assert not Item.objects.exists()
    assert ImportJob.objects.get().status == JobStatus.FAILED


@pytest.fixture
def rsps() -> Any:
    with responses.RequestsMock(assert_all_requests_are_fired=True) as mock:
        yield mock


@pytest.mark.django_db
def test_a_lead_uploads_a_jira_export_on_the_import_page(
    study: Study, lead: Any, client: Any, upload_root: Path, django_capture_on_commit_callbacks: Any
) -> None:
    client.force_login(lead)
    page = client.get(f"/studies/{study.slug}/import/?source=jira").content.decode()
    assert "Jira export" in page

    with (
        (SAMPLES / "jira_export_mesos.xml").open("rb") as handle,
        django_capture_on_commit_callbacks(execute=True),
    ):
        response = client.post(f"/studies/{study.slug}/import/", {"kind": "jira", "file": handle})

    assert response.status_code == 302
    job = ImportJob.objects.get()
    assert (job.kind, job.status, job.created, job.params["filename"]) == (
        "jira", JobStatus.SUCCEEDED, 2, "jira_export_mesos.xml",
    )  # fmt: skip


@pytest.mark.django_db
def test_the_api_takes_a_jira_export_upload(
    study: Study, lead: Any, client: Any, upload_root: Path, django_capture_on_commit_callbacks: Any
) -> None:
    client.force_login(lead)
    url = f"/api/v1/studies/{study.slug}/imports/"
    with (
        (SAMPLES / "jira_export_mesos.xml").open("rb") as handle,
        django_capture_on_commit_callbacks(execute=True),
    ):
        response = client.post(url, {"kind": "jira", "file": handle})
    refused = client.post(url, {"kind": "jira"})

    assert response.status_code in (201, 202), response.json()
    assert Item.objects.filter(source="jira").count() == 2
    assert refused.status_code == 400 and "file" in str(refused.json())
