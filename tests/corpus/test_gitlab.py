"""The GitLab importer against replayed REST v4: issues, notes, merge requests, faults, command, API."""

from __future__ import annotations

import copy
import io
from pathlib import Path
from typing import Any

import pytest
import requests
import responses
from django.core.management import CommandError, call_command

from apps.accounts.models import Study
from apps.core.models import JobStatus
from apps.corpus.gitlab import Failed, GitLabClient, GitLabError, TokenRejected, changes_to_files, issue_ref
from apps.corpus.models import ImportJob, Item, ItemLink

from .conftest import sample

API = "https://gitlab.example.com/api/v4"
PROJECT = f"{API}/projects/fakeorg%2Ffakeproject"
ISSUE_URL = "https://example.com/fakeorg/fakeproject/-/issues/461536"
TOKEN = "glpat-NeverStoreThis0123456789"
NOW = 1_700_000_000.0
DIFF = (
    "@@ -1,4 +1,4 @@\n def login(user):\n-    pad = '0px'\n+    pad = '4px'\n     return render(user, pad)\n"
    " <script>alert('XSS')</script>\n"
)


def issue(iid: int = 461536, **changes: Any) -> dict[str, Any]:
    data = sample("pythongitlab_issue.json")
    data.update(iid=iid, web_url=f"https://example.com/fakeorg/fakeproject/-/issues/{iid}", **changes)
    return data


def merge_request(iid: int, state: str = "merged") -> dict[str, Any]:
    data = copy.deepcopy(sample("pythongitlab_merge_request.json"))
    data.update(
        iid=iid,
        state=state,
        web_url=f"https://example.com/fakeorg/fakeproject/-/merge_requests/{iid}",
        created_at="2024-06-12T10:00:00.000Z",
        merged_at="2024-06-13T05:29:13.000Z" if state == "merged" else None,
    )
    return data


NOTES = [
    {"id": 10, "body": "Seen on 17.0 too.", "author": {"username": "kenyatta_oconnell"},
     "created_at": "2024-05-15T08:00:00.000Z", "system": False},
    {"id": 11, "body": "mentioned in merge request !1", "author": {"username": "bot"},
     "created_at": "2024-05-16T08:00:00.000Z", "system": True},
]  # fmt: skip


def serve_issue_links(rsps: responses.RequestsMock, iid: int = 461536) -> None:
    base = f"{PROJECT}/issues/{iid}"
    rsps.get(f"{base}/notes", json=NOTES)
    rsps.get(f"{base}/closed_by", json=[merge_request(1)])
    rsps.get(f"{base}/related_merge_requests", json=[merge_request(1), merge_request(2, "opened")])
    changes = {**merge_request(1), "changes": [{"old_path": "app.py", "new_path": "app.py", "diff": DIFF}]}
    rsps.get(f"{API}/projects/3/merge_requests/1/changes", json=changes)
    rsps.get(f"{API}/projects/3/merge_requests/2/changes", status=404, json={"message": "404 Not found"})


def client(sleeps: list[float] | None = None) -> GitLabClient:
    return GitLabClient(API, TOKEN, sleep=(sleeps if sleeps is not None else []).append, clock=lambda: NOW)


@pytest.fixture
def rsps() -> Any:
    with responses.RequestsMock(assert_all_requests_are_fired=True) as mock:
        yield mock


def test_an_issue_becomes_a_record_without_system_notes_and_with_its_merge_requests(rsps: Any) -> None:
    rsps.get(f"{PROJECT}/issues/461536", json=issue())
    serve_issue_links(rsps)

    (record,) = client().hydrate([ISSUE_URL + "#note_10"])

    assert record.url == ISSUE_URL and record.source == "gitlab"  # type: ignore[union-attr]
    assert record.external_id == "fakeorg/fakeproject#461536"  # type: ignore[union-attr]
    assert record.title == "Fake Title for Merge Requests via API" and record.tags == [
        "FakeCategory",
        "fake:ml",
    ]  # type: ignore[union-attr]
    assert [c.body for c in record.comments] == ["Seen on 17.0 too."]  # type: ignore[union-attr]
    closing, related = record.links  # type: ignore[union-attr]
    assert (closing.kind, closing.provenance, closing.state) == ("merge_request", "closing_keyword", "merged")
    assert closing.files[0].filename == "app.py" and (
        closing.files[0].additions,
        closing.files[0].deletions,
    ) == (1, 1)
    assert related.provenance == "cross_reference" and "404" in related.note
    assert all(call.request.headers.get("PRIVATE-TOKEN") == TOKEN for call in rsps.calls)


def test_a_project_listing_follows_x_next_page_and_sends_the_filters(rsps: Any) -> None:
    rsps.get(f"{PROJECT}/issues", json=[issue(1, user_notes_count=0)], headers={"X-Next-Page": "2"},
             match=[responses.matchers.query_param_matcher(
                 {"per_page": "100", "order_by": "created_at", "sort": "asc", "state": "closed",
                  "labels": "bug,gpu", "updated_after": "2024-01-01T00:00:00Z"})])  # fmt: skip
    rsps.get(f"{PROJECT}/issues", json=[issue(2, user_notes_count=0)], headers={"X-Next-Page": ""},
             match=[responses.matchers.query_param_matcher({"page": "2"}, strict_match=False)])  # fmt: skip

    records = list(
        client().project_issues(
            "fakeorg/fakeproject", state="closed", labels=["bug", "gpu"], since="2024-01-01", links=False
        )
    )

    assert [r.metadata["iid"] for r in records] == [1, 2]  # type: ignore[union-attr]


def test_429_with_ratelimit_reset_502_resets_and_truncated_json_are_waited_out(rsps: Any) -> None:
    sleeps: list[float] = []
    url = f"{PROJECT}/issues/461536"
    rsps.get(
        url, status=429, headers={"RateLimit-Reset": str(int(NOW) + 20)}, json={"message": "Retry later"}
    )
    rsps.get(url, status=429, headers={"Retry-After": "3"}, json={"message": "Retry later"})
    rsps.get(url, status=502)
    rsps.get(url, body=requests.ConnectionError("reset"))
    rsps.get(url, body='{"iid": 4615')
    rsps.get(url, json=issue(user_notes_count=0))

    (record,) = client(sleeps).hydrate([ISSUE_URL], links=False)

    assert record.title  # type: ignore[union-attr]
    assert sleeps == [21.0, 3.0, 1.0, 2.0, 4.0]


def test_a_missing_issue_fails_alone_and_a_rejected_token_stops(rsps: Any) -> None:
    rsps.get(f"{PROJECT}/issues/9", status=404, json={"message": "404 Not found"})
    rsps.get(f"{API}/projects/other%2Fproject/issues", status=401, json={"message": "401 Unauthorized"})

    results = list(
        client().hydrate(["https://example.com/fakeorg/fakeproject/-/issues/9", "https://x.org/a"])
    )
    with pytest.raises(TokenRejected, match="GITLAB_TOKEN") as rejected:
        list(client().project_issues("other/project"))

    assert [type(r) for r in results] == [Failed, Failed] and results[0].status == 404  # type: ignore[union-attr]
    assert "not a GitLab issue URL" in results[1].message  # type: ignore[union-attr]
    assert TOKEN not in str(rejected.value) and TOKEN not in repr(client())


def test_urls_and_changes_are_read_as_gitlab_writes_them() -> None:
    assert issue_ref("https://gitlab.com/group/sub/name/-/issues/12") == ("gitlab.com", "group/sub/name", 12)
    assert issue_ref("https://gitlab.com/group/name/issues/12") is None
    files, left_out = changes_to_files(
        [{"new_path": "b.py", "old_path": "a.py", "renamed_file": True, "diff": ""}]
    )
    assert (files[0].filename, files[0].status, left_out) == ("b.py", "renamed", 0)


def test_bad_arguments_are_refused_before_any_request() -> None:
    with pytest.raises(ValueError, match="group/name"):
        list(client().project_issues("noslash"))
    with pytest.raises(ValueError, match="state must be"):
        list(client().project_issues("a/b", state="open"))
    with pytest.raises(ValueError, match="absolute"):
        GitLabClient("gitlab.com")
    assert issubclass(TokenRejected, GitLabError)


# --- the command -------------------------------------------------------------------------------------


@pytest.mark.django_db
@responses.activate
def test_import_gitlab_stores_issues_notes_and_merge_requests_and_a_rerun_changes_nothing(
    study: Study, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITLAB_TOKEN", TOKEN)
    urls = tmp_path / "urls.txt"
    urls.write_text(ISSUE_URL + "\n", encoding="utf-8")

    def run() -> str:
        responses.get(f"{PROJECT}/issues/461536", json=issue())
        serve_issue_links(responses.mock)  # type: ignore[arg-type]
        out = io.StringIO()
        call_command(
            "import_gitlab", "ddp", "--urls", str(urls), "--api-url", API, stdout=out, stderr=io.StringIO()
        )
        return out.getvalue()

    assert "1 created" in run()
    assert "0 created, 0 updated, 1 unchanged" in run()
    item = Item.objects.get()
    assert (item.source, item.comments.count()) == ("gitlab", 1)
    assert sorted(ItemLink.objects.values_list("url", "provenance")) == [
        ("https://example.com/fakeorg/fakeproject/-/merge_requests/1", "closing_keyword"),
        ("https://example.com/fakeorg/fakeproject/-/merge_requests/2", "cross_reference"),
    ]
    job = ImportJob.objects.order_by("-pk").first()
    assert job is not None and job.kind == "gitlab" and job.status == JobStatus.SUCCEEDED
    assert TOKEN not in str(job.params) and job.params["api_url"] == API


@pytest.mark.django_db
def test_import_gitlab_refuses_filters_without_a_project(study: Study, tmp_path: Path) -> None:
    urls = tmp_path / "u.txt"
    urls.write_text(ISSUE_URL, encoding="utf-8")
    with pytest.raises(CommandError, match="go with --project"):
        call_command("import_gitlab", "ddp", "--urls", str(urls), "--state", "closed", stderr=io.StringIO())
    assert not ImportJob.objects.exists()


@pytest.mark.django_db
@responses.activate
def test_the_api_and_the_import_page_take_a_gitlab_import_from_a_listed_instance_only(
    study: Study, lead: Any, client: Any, settings: Any, django_capture_on_commit_callbacks: Any
) -> None:
    settings.GITLAB_API_URLS = ["https://gitlab.com/api/v4", API]
    responses.get(f"{PROJECT}/issues/461536", json=issue())
    serve_issue_links(responses.mock)  # type: ignore[arg-type]
    client.force_login(lead)
    url = f"/api/v1/studies/{study.slug}/imports/"

    refused = client.post(url, {"kind": "gitlab", "urls": [ISSUE_URL], "api_url": "https://evil.test/api/v4"},
                          content_type="application/json")  # fmt: skip
    neither = client.post(url, {"kind": "gitlab", "api_url": API}, content_type="application/json")
    with django_capture_on_commit_callbacks(execute=True):
        started = client.post(
            url, {"kind": "gitlab", "urls": [ISSUE_URL], "api_url": API}, content_type="application/json"
        )

    assert refused.status_code == 400 and "api_url" in str(refused.json())
    assert neither.status_code == 400 and "project (group/name) or a list of issue URLs" in str(
        neither.json()
    )
    assert started.status_code in (201, 202), started.json()
    assert Item.objects.get().source == "gitlab" and ItemLink.objects.count() == 2
    page = client.get(f"/studies/{study.slug}/import/?source=gitlab").content.decode()
    assert "GitLab instance" in page and API in page and 'name="project"' in page
