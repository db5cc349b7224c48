"""The GitHub client against recorded REST responses: paging, pull requests, waits, retries, failures."""

from __future__ import annotations

import copy
import dataclasses
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from email.utils import formatdate
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
import responses
from responses import matchers

from apps.corpus.github import (
    Failed,
    GitHubClient,
    GitHubError,
    GitHubUnavailable,
    InvalidResponse,
    Skipped,
    TokenRejected,
    issue_to_record,
)
from apps.corpus.records import ItemRecord

SAMPLES = Path(__file__).parent / "samples"
API = "https://api.github.com"
TOKEN = "ghp_s3cretTokenValue0123456789"
NOW = 1_700_000_000.0


def sample(name: str) -> Any:
    return json.loads((SAMPLES / name).read_text(encoding="utf-8"))


class Recorder:
    """Collects the client's sleeps and wait reports instead of sleeping."""

    def __init__(self) -> None:
        self.sleeps: list[float] = []
        self.waits: list[tuple[float, str]] = []
        self.notices: list[str] = []

    def client(self, **options: Any) -> GitHubClient:
        options.setdefault("token", TOKEN)
        return GitHubClient(
            sleep=self.sleeps.append,
            on_wait=lambda seconds, reason: self.waits.append((seconds, reason)),
            on_notice=self.notices.append,
            clock=lambda: NOW,
            **options,
        )


@pytest.fixture
def rsps() -> Iterator[responses.RequestsMock]:
    with responses.RequestsMock(assert_all_requests_are_fired=True) as mock:
        yield mock


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


def params_of(call: Any) -> dict[str, list[str]]:
    return parse_qs(urlsplit(call.request.url).query)


def records(results: list[Any]) -> list[ItemRecord]:
    return [result for result in results if isinstance(result, ItemRecord)]


ISSUE_187 = "/repos/sigmavirus24/github3.py/issues/187"
ISSUE_187_URL = "https://github.com/sigmavirus24/github3.py/issues/187"


# --- conversion --------------------------------------------------------------------------------


def test_a_modern_issue_object_becomes_a_record() -> None:
    record = issue_to_record(
        sample("pygithub_PyGithub_issue_28.json"), sample("pygithub_PyGithub_issue_28_comments.json")
    )
    assert record.url == "https://github.com/pygithub/pygithub/issues/28"
    assert (record.source, record.external_id, record.body_format) == (
        "github",
        "pygithub/pygithub#28",
        "markdown",
    )
    assert record.title == "Issue created by PyGithub"
    assert record.body == "Body edited by PyGithub\n"
    assert record.tags == ["bug", "question"]
    assert record.metadata["state"] == "closed"
    assert record.metadata["author"] == "jacquev6"
    assert record.created_at is not None and record.created_at.tzinfo is UTC
    assert [(c.external_id, c.author) for c in record.comments] == [
        ("5449237", "jacquev6"),
        ("5518272", "roskakori"),
    ]
    assert record.comments[0].created_at == datetime(2012, 5, 1, 22, 3, 59, tzinfo=UTC)
    assert record.raw["issue"]["number"] == 28
    assert len(record.raw["comments"]) == 2


def test_a_deleted_author_is_called_ghost() -> None:
    issue = sample("github3py_github3.py_issue_187.json")
    issue["user"] = None
    assert issue_to_record(issue).metadata["author"] == "ghost"


# --- listing and paging ------------------------------------------------------------------------


def test_repo_issues_follow_link_pagination_and_skip_pull_requests(
    rsps: responses.RequestsMock, recorder: Recorder
) -> None:
    next_page = f"{API}/repositories/11460675/issues?state=all&per_page=100&page=2"
    rsps.get(
        f"{API}/repos/betamaxpy/betamax/issues",
        json=sample("github3py_betamax_repo_issues_list.json"),
        headers={"Link": f'<{next_page}>; rel="next", <{next_page}>; rel="last"'},
    )
    rsps.get(
        f"{API}/repositories/11460675/issues",
        json=[sample("pygithub_PyGithub_issue_28.json")],
        match=[matchers.query_param_matcher({"page": "2"}, strict_match=False)],
    )
    results = list(recorder.client().repo_issues("betamaxpy/betamax", comments=False))

    assert [type(result).__name__ for result in results].count("ItemRecord") == 14
    skipped = [result for result in results if isinstance(result, Skipped)]
    assert skipped == [
        Skipped("https://github.com/betamaxpy/betamax/issues/123", "pull request"),
        Skipped("https://github.com/betamaxpy/betamax/issues/144", "pull request"),
        Skipped("https://github.com/betamaxpy/betamax/issues/149", "pull request"),
    ]
    assert records(results)[-1].external_id == "pygithub/pygithub#28"
    first = rsps.calls[0]
    assert params_of(first) == {
        "state": ["all"],
        "per_page": ["100"],
        "sort": ["created"],
        "direction": ["asc"],
    }
    assert first.request.headers["Authorization"] == f"Bearer {TOKEN}"
    assert first.request.headers["Accept"] == "application/vnd.github+json"
    assert params_of(rsps.calls[1])["page"] == ["2"]


def test_state_labels_and_since_go_to_github_and_excluded_labels_are_skipped_here(
    rsps: responses.RequestsMock, recorder: Recorder
) -> None:
    rsps.get(f"{API}/repos/betamaxpy/betamax/issues", json=sample("github3py_betamax_repo_issues_list.json"))
    results = list(
        recorder.client().repo_issues(
            "betamaxpy/betamax",
            state="open",
            labels=["Docs", "Enhancement"],
            since="2017-01-01",
            exclude_labels=["GOOD FIRST ISSUE"],
            comments=False,
        )
    )
    query = params_of(rsps.calls[0])
    assert (query["state"], query["labels"], query["since"]) == (
        ["open"],
        ["Docs,Enhancement"],
        ["2017-01-01T00:00:00Z"],
    )
    excluded = [result.url for result in results if isinstance(result, Skipped) and "label" in result.reason]
    assert excluded == [f"https://github.com/betamaxpy/betamax/issues/{n}" for n in (131, 134, 137, 145)]
    assert len(records(results)) == 9


def test_comments_are_fetched_through_their_own_pagination(
    rsps: responses.RequestsMock, recorder: Recorder
) -> None:
    comments = sample("github3py_github3.py_issue_187_comments.json")
    rsps.get(f"{API}{ISSUE_187}", json=sample("github3py_github3.py_issue_187.json"))
    rsps.get(
        f"{API}{ISSUE_187}/comments",
        json=comments[:2],
        headers={"Link": f'<{API}/repositories/3710711/issues/187/comments?per_page=100&page=2>; rel="next"'},
        match=[matchers.query_param_matcher({"per_page": "100"})],
    )
    rsps.get(f"{API}/repositories/3710711/issues/187/comments", json=comments[2:])
    [record] = list(recorder.client().hydrate([ISSUE_187_URL]))
    assert isinstance(record, ItemRecord)
    assert [comment.author for comment in record.comments] == ["esacteksab", "sigmavirus24", "esacteksab"]
    assert record.comments[0].body.startswith("Note to self: _Don't merge without documentation_")
    assert record.title == "Document two factor auth"


def test_an_issue_without_comments_costs_no_comment_request(
    rsps: responses.RequestsMock, recorder: Recorder
) -> None:
    issue = sample("github3py_github3.py_issue_187.json")
    issue["comments"] = 0
    rsps.get(f"{API}{ISSUE_187}", json=issue)
    [record] = list(recorder.client().hydrate([ISSUE_187_URL]))
    assert isinstance(record, ItemRecord) and record.comments == []
    assert len(rsps.calls) == 1


def test_a_search_skips_pull_requests_and_warns_about_the_1000_result_cap(
    rsps: responses.RequestsMock, recorder: Recorder
) -> None:
    pull = sample("github3py_betamax_repo_issues_list.json")[5]
    issue = sample("github3py_github3.py_issue_187.json")
    issue["comments"] = 0
    rsps.get(
        f"{API}/search/issues",
        json={"total_count": 2500, "incomplete_results": False, "items": [issue, pull]},
    )
    query = "repo:keras-team/keras multi-gpu in:title,body state:closed"
    results = list(recorder.client().search_issues(query))
    assert [type(result) for result in results] == [ItemRecord, Skipped]
    assert params_of(rsps.calls[0])["q"] == [query]
    [notice] = recorder.notices
    assert "2500" in notice and "1000" in notice


def test_hydrating_a_url_list_reports_a_missing_issue_and_goes_on(
    rsps: responses.RequestsMock, recorder: Recorder
) -> None:
    rsps.get(f"{API}/repos/horovod/horovod/issues/999999", status=404, json={"message": "Not Found"})
    issue = sample("pygithub_PyGithub_issue_28.json")
    issue["comments"] = 0
    rsps.get(f"{API}/repos/pygithub/pygithub/issues/28", json=issue)
    pull = sample("github3py_betamax_repo_issues_list.json")[5]
    rsps.get(f"{API}/repos/betamaxpy/betamax/issues/123", json=pull)
    urls = [
        "https://github.com/horovod/horovod/issues/999999",
        "https://example.org/not/github",
        "https://github.com/PyGithub/PyGithub/issues/28#issuecomment-1",
        "https://github.com/betamaxpy/betamax/pull/123",
    ]
    results = list(recorder.client().hydrate(urls))
    assert isinstance(results[0], Failed)
    assert (results[0].url, results[0].status) == (urls[0], 404)
    assert results[1] == Failed(urls[1], "not a GitHub issue URL")
    assert (
        isinstance(results[2], ItemRecord)
        and results[2].url == "https://github.com/pygithub/pygithub/issues/28"
    )
    assert results[3] == Skipped("https://github.com/betamaxpy/betamax/issues/123", "pull request")


def test_a_missing_repository_stops_a_listing(rsps: responses.RequestsMock, recorder: Recorder) -> None:
    rsps.get(f"{API}/repos/a/gone/issues", status=404, json={"message": "Not Found"})
    with pytest.raises(GitHubError, match="GET /repos/a/gone/issues: 404") as caught:
        list(recorder.client().repo_issues("a/gone"))
    assert caught.value.status == 404


def test_a_limit_caps_the_records(rsps: responses.RequestsMock, recorder: Recorder) -> None:
    rsps.get(f"{API}/repos/betamaxpy/betamax/issues", json=sample("github3py_betamax_repo_issues_list.json"))
    results = list(recorder.client().repo_issues("betamaxpy/betamax", comments=False, limit=2))
    assert [record.external_id for record in records(results)] == [
        "betamaxpy/betamax#6",
        "betamaxpy/betamax#40",
    ]
    assert params_of(rsps.calls[0])["per_page"] == ["2"]


def test_github_enterprise_paths_sit_under_its_api_root(
    rsps: responses.RequestsMock, recorder: Recorder
) -> None:
    issue = sample("github3py_github3.py_issue_187.json")
    issue["comments"] = 0
    rsps.get(f"https://ghe.example.com/api/v3{ISSUE_187}", json=issue)
    [record] = list(recorder.client(api_url="https://ghe.example.com/api/v3/").hydrate([ISSUE_187_URL]))
    assert isinstance(record, ItemRecord)


def test_a_next_link_to_another_host_is_fetched_from_the_api_host(
    rsps: responses.RequestsMock, recorder: Recorder
) -> None:
    rsps.get(
        f"{API}/repos/betamaxpy/betamax/issues",
        json=[],
        headers={"Link": '<https://evil.example/steal?page=2>; rel="next"'},
    )
    rsps.get(f"{API}/steal", json=[])
    list(recorder.client().repo_issues("betamaxpy/betamax"))
    assert [urlsplit(call.request.url).netloc for call in rsps.calls] == ["api.github.com", "api.github.com"]


def test_bad_arguments_are_refused_before_any_request(recorder: Recorder) -> None:
    client = recorder.client()
    with pytest.raises(ValueError, match="owner/name"):
        list(client.repo_issues("just-a-name"))
    with pytest.raises(ValueError, match="state"):
        list(client.repo_issues("a/b", state="merged"))
    with pytest.raises(ValueError, match="empty"):
        list(client.search_issues("  "))


# --- rate limits -------------------------------------------------------------------------------


def test_an_exhausted_rate_limit_is_waited_out_until_the_reset(
    rsps: responses.RequestsMock, recorder: Recorder
) -> None:
    rsps.get(
        f"{API}{ISSUE_187}",
        status=403,
        json={"message": "API rate limit exceeded for user ID 1."},
        headers={"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(int(NOW) + 30)},
    )
    issue = sample("github3py_github3.py_issue_187.json")
    issue["comments"] = 0
    rsps.get(f"{API}{ISSUE_187}", json=issue)
    [record] = list(recorder.client().hydrate([ISSUE_187_URL]))
    assert isinstance(record, ItemRecord)
    assert recorder.sleeps == [31.0]
    [(seconds, reason)] = recorder.waits
    assert seconds == 31.0 and "rate limit" in reason


def test_retry_after_is_obeyed_on_429(rsps: responses.RequestsMock, recorder: Recorder) -> None:
    rsps.get(
        f"{API}/repos/a/b/issues", status=429, headers={"Retry-After": "7"}, json={"message": "slow down"}
    )
    rsps.get(f"{API}/repos/a/b/issues", json=[])
    assert list(recorder.client().repo_issues("a/b")) == []
    assert recorder.sleeps == [7.0]


def test_retry_after_may_be_an_http_date(rsps: responses.RequestsMock, recorder: Recorder) -> None:
    rsps.get(
        f"{API}/repos/a/b/issues", status=403, headers={"Retry-After": formatdate(NOW + 20, usegmt=True)}
    )
    rsps.get(f"{API}/repos/a/b/issues", json=[])
    list(recorder.client().repo_issues("a/b"))
    assert recorder.sleeps == [20.0]


def test_a_secondary_rate_limit_without_headers_waits_a_minute(
    rsps: responses.RequestsMock, recorder: Recorder
) -> None:
    message = "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."
    rsps.get(f"{API}/repos/a/b/issues", status=403, json={"message": message})
    rsps.get(f"{API}/repos/a/b/issues", json=[])
    list(recorder.client().repo_issues("a/b"))
    assert recorder.sleeps == [60.0]


def test_a_plain_403_is_an_error_not_a_wait(rsps: responses.RequestsMock, recorder: Recorder) -> None:
    rsps.get(
        f"{API}/repos/a/b/issues", status=403, json={"message": "Resource not accessible by integration"}
    )
    with pytest.raises(GitHubError, match="403 Resource not accessible by integration"):
        list(recorder.client().repo_issues("a/b"))
    assert recorder.sleeps == []


def test_a_used_up_limit_makes_the_next_request_wait_first(
    rsps: responses.RequestsMock, recorder: Recorder
) -> None:
    rsps.get(
        f"{API}/repos/a/b/issues",
        json=[],
        headers={
            "X-RateLimit-Remaining": "0",
            "X-RateLimit-Reset": str(int(NOW) + 100),
            "Link": f'<{API}/repos/a/b/issues?page=2>; rel="next"',
        },
    )
    rsps.get(f"{API}/repos/a/b/issues", json=[], match=[matchers.query_param_matcher({"page": "2"})])
    list(recorder.client().repo_issues("a/b"))
    assert recorder.sleeps == [101.0]
    assert len(rsps.calls) == 2


def test_waiting_for_ever_is_bounded(rsps: responses.RequestsMock, recorder: Recorder) -> None:
    for _ in range(3):
        rsps.get(f"{API}/repos/a/b/issues", status=429, headers={"Retry-After": "1"})
    with pytest.raises(GitHubError, match="still rate limited after 2 waits"):
        list(recorder.client(max_rate_limit_waits=2).repo_issues("a/b"))


# --- retries -----------------------------------------------------------------------------------


def test_server_errors_are_retried_with_exponential_backoff(
    rsps: responses.RequestsMock, recorder: Recorder
) -> None:
    rsps.get(f"{API}/repos/a/b/issues", status=502, body="<html>Bad Gateway</html>")
    rsps.get(f"{API}/repos/a/b/issues", status=503, json={"message": "unavailable"})
    rsps.get(f"{API}/repos/a/b/issues", json=sample("github3py_betamax_repo_issues_list.json")[:1])
    results = list(recorder.client().repo_issues("a/b", comments=False))
    assert len(records(results)) == 1
    assert recorder.sleeps == [1.0, 2.0]
    assert "server error 502; retry 1 of 5" in recorder.waits[0][1]


def test_server_errors_that_outlast_the_retries_raise(
    rsps: responses.RequestsMock, recorder: Recorder
) -> None:
    for _ in range(6):
        rsps.get(f"{API}/repos/a/b/issues", status=500)
    with pytest.raises(GitHubUnavailable, match="server error 500, 5 retries exhausted"):
        list(recorder.client().repo_issues("a/b"))
    assert recorder.sleeps == [1.0, 2.0, 4.0, 8.0, 16.0]


def test_a_connection_reset_is_retried(rsps: responses.RequestsMock, recorder: Recorder) -> None:
    reset = requests.ConnectionError(ConnectionResetError(104, "Connection reset by peer"))
    rsps.get(f"{API}/repos/a/b/issues", body=reset)
    rsps.get(f"{API}/repos/a/b/issues", body=ConnectionResetError(104, "Connection reset by peer"))
    rsps.get(f"{API}/repos/a/b/issues", json=[])
    assert list(recorder.client().repo_issues("a/b")) == []
    assert recorder.sleeps == [1.0, 2.0]


def test_connection_failures_that_outlast_the_retries_raise_without_the_token(
    rsps: responses.RequestsMock, recorder: Recorder
) -> None:
    for _ in range(3):
        rsps.get(f"{API}/repos/a/b/issues", body=requests.ConnectionError("boom"))
    with pytest.raises(GitHubUnavailable) as caught:
        list(recorder.client(max_retries=2).repo_issues("a/b"))
    assert TOKEN not in str(caught.value)
    error = caught.value
    assert error.__cause__ is None and (error.__context__ is None or error.__suppress_context__)


def test_a_truncated_body_is_retried(rsps: responses.RequestsMock, recorder: Recorder) -> None:
    text = (SAMPLES / "github3py_github3.py_issue_187.json").read_text(encoding="utf-8")
    issue = json.loads(text)
    issue["comments"] = 0
    rsps.get(f"{API}{ISSUE_187}", body=text[: len(text) // 2], content_type="application/json")
    rsps.get(f"{API}{ISSUE_187}", json=issue)
    [record] = list(recorder.client().hydrate([ISSUE_187_URL]))
    assert isinstance(record, ItemRecord)
    assert recorder.sleeps == [1.0]


def test_a_body_that_stays_truncated_is_reported_and_the_rest_continue(
    rsps: responses.RequestsMock, recorder: Recorder
) -> None:
    text = (SAMPLES / "github3py_github3.py_issue_187.json").read_text(encoding="utf-8")
    for _ in range(4):
        rsps.get(f"{API}{ISSUE_187}", body=text[:300], content_type="application/json")
    issue = sample("pygithub_PyGithub_issue_28.json")
    issue["comments"] = 0
    rsps.get(f"{API}/repos/pygithub/pygithub/issues/28", json=issue)
    results = list(
        recorder.client(max_retries=3).hydrate(
            [ISSUE_187_URL, "https://github.com/PyGithub/PyGithub/issues/28"]
        )
    )
    assert isinstance(results[0], Failed)
    assert "not valid JSON" in results[0].message
    assert isinstance(results[1], ItemRecord)


def test_a_body_that_stays_truncated_in_a_listing_raises(
    rsps: responses.RequestsMock, recorder: Recorder
) -> None:
    for _ in range(2):
        rsps.get(f"{API}/repos/a/b/issues", body='[{"url": "https://api.github.com/re')
    with pytest.raises(InvalidResponse, match="not valid JSON"):
        list(recorder.client(max_retries=1).repo_issues("a/b"))


# --- the token ---------------------------------------------------------------------------------


def test_a_rejected_token_stops_the_import(rsps: responses.RequestsMock, recorder: Recorder) -> None:
    rsps.get(f"{API}{ISSUE_187}", status=401, json={"message": "Bad credentials"})
    client = recorder.client()
    with pytest.raises(TokenRejected) as caught:
        list(client.hydrate([ISSUE_187_URL, "https://github.com/a/b/issues/1"]))
    assert str(caught.value).startswith("token rejected")
    assert TOKEN not in str(caught.value) and TOKEN not in repr(caught.value)
    assert TOKEN not in repr(client)
    assert len(rsps.calls) == 1


def test_the_token_appears_nowhere_in_a_record(rsps: responses.RequestsMock, recorder: Recorder) -> None:
    rsps.get(f"{API}{ISSUE_187}", json=sample("github3py_github3.py_issue_187.json"))
    rsps.get(f"{API}{ISSUE_187}/comments", json=sample("github3py_github3.py_issue_187_comments.json"))
    [record] = list(recorder.client().hydrate([ISSUE_187_URL]))
    assert isinstance(record, ItemRecord)
    assert TOKEN not in json.dumps(dataclasses.asdict(record), default=str)


def test_without_a_token_no_authorization_header_is_sent(
    rsps: responses.RequestsMock, recorder: Recorder
) -> None:
    rsps.get(f"{API}/repos/a/b/issues", json=[])
    list(recorder.client(token=None).repo_issues("a/b"))
    assert "Authorization" not in rsps.calls[0].request.headers


def test_the_samples_are_not_mutated_by_conversion() -> None:
    issue = sample("github3py_github3.py_issue_187.json")
    before = copy.deepcopy(issue)
    issue_to_record(issue)
    assert issue == before


def test_old_api_pull_request_stubs_with_null_urls_are_issues_not_pull_requests() -> None:
    from apps.corpus.github import is_pull_request

    stub = {"number": 30, "pull_request": {"patch_url": None, "diff_url": None, "html_url": None}}
    real = {"number": 31, "pull_request": {"html_url": "https://github.com/o/r/pull/31"}}
    assert not is_pull_request(stub)
    assert is_pull_request(real)
    assert not is_pull_request({"number": 32})
