"""Fix evidence from GitHub: timelines, linked pull requests and commits, their files, faults on the way.

Recorded bodies (tests/corpus/samples/SOURCES.md): the timeline of PyGithub#28, the files of PyGithub pull
request #31, commit 1292bf0 of jacquev6/PyGithub. Events the recording lacks are written after GitHub's
documented shapes on top of copies of the recorded objects.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import requests
import responses

from apps.corpus.github import GitHubClient, GitHubUnavailable
from apps.corpus.github_links import MAX_PATCH_CHARS, closes_issue, cut_patch, timeline_candidates

SAMPLES = Path(__file__).parent / "samples"
API = "https://api.github.com"
NOW = 1_700_000_000.0
TIMELINE = f"{API}/repos/pygithub/pygithub/issues/28/timeline"
SHA = "1292bf0e22c796e91cc3d6e24b544aece8c21f2a"


def sample(name: str) -> Any:
    return json.loads((SAMPLES / name).read_text(encoding="utf-8"))


@pytest.fixture
def rsps() -> Iterator[responses.RequestsMock]:
    with responses.RequestsMock(assert_all_requests_are_fired=True) as mock:
        yield mock


def client(sleeps: list[float] | None = None) -> GitHubClient:
    return GitHubClient(
        token="ghp_links",
        sleep=(sleeps if sleeps is not None else []).append,
        clock=lambda: NOW,
    )


def recorded_cross_reference() -> dict[str, Any]:
    return copy.deepcopy(
        next(
            e for e in sample("pygithub_PyGithub_issue_28_timeline.json") if e["event"] == "cross-referenced"
        )
    )


def fixing_timeline() -> list[dict[str, Any]]:
    """The recorded timeline, plus a merged pull request #31 that says "Fixes #28", the closing commit
    (recorded as commit 1292bf0 of the fork jacquev6/PyGithub) and a `referenced` event of that commit."""
    events = sample("pygithub_PyGithub_issue_28_timeline.json")
    pull = recorded_cross_reference()
    issue = pull["source"]["issue"]
    issue.update(
        number=31,
        title="Fix the labels of issues",
        html_url="https://github.com/PyGithub/PyGithub/pull/31",
        body="This fixes #28: labels are read again.",
    )
    issue["pull_request"]["merged_at"] = "2012-05-26T14:50:00Z"
    commit_event = {
        "event": "closed",
        "commit_id": SHA,
        "commit_url": f"{API}/repos/jacquev6/PyGithub/commits/{SHA}",
        "created_at": "2012-05-26T14:59:34Z",
    }
    referenced = {**commit_event, "event": "referenced", "created_at": "2012-05-26T14:58:00Z"}
    return [*events, pull, referenced, commit_event]


# --- reading the timeline ------------------------------------------------------------------------------


def test_the_recorded_timeline_links_the_cross_referenced_pull_request_only() -> None:
    candidates = timeline_candidates(
        sample("pygithub_PyGithub_issue_28_timeline.json"), "pygithub", "pygithub", 28
    )

    assert [(c.kind, c.url, c.provenance, c.state) for c in candidates] == [
        ("pull_request", "https://github.com/pygithub/pygithub/pull/857", "cross_reference", "closed")
    ]  # "See Issue #855" is no closing keyword; the `closed` event has no commit
    assert candidates[0].found_at == datetime(2018, 8, 24, 15, 42, 24, tzinfo=UTC)
    assert candidates[0].title == "Adding new attributes to IssueEvent"


def test_a_closing_commit_and_a_closing_keyword_are_told_apart_and_one_url_is_one_link() -> None:
    candidates = timeline_candidates(fixing_timeline(), "pygithub", "pygithub", 28)

    assert [(c.kind, c.url, c.provenance) for c in candidates] == [
        ("pull_request", "https://github.com/pygithub/pygithub/pull/857", "cross_reference"),
        ("pull_request", "https://github.com/pygithub/pygithub/pull/31", "closing_keyword"),
        ("commit", f"https://github.com/jacquev6/pygithub/commit/{SHA}", "closed_by_commit"),
    ]
    commit = candidates[2]
    assert commit.found_at == datetime(2012, 5, 26, 14, 58, tzinfo=UTC)  # the earlier of its two events
    assert candidates[1].state == "merged" and candidates[1].merged is True


@pytest.mark.parametrize(
    ("text", "closes"),
    [
        ("Fixes #28", True),
        ("this closes #28.", True),
        ("Resolved: #28", True),
        ("fix pygithub/pygithub#28", True),
        ("Closes https://github.com/pygithub/pygithub/issues/28", True),
        ("Fixes #280", False),
        ("See issue #28", False),
        ("prefixes #28", False),
    ],
)
def test_closing_keywords(text: str, closes: bool) -> None:
    assert closes_issue(text, "pygithub", "pygithub", 28) is closes


def test_a_pull_request_of_another_repository_closes_only_by_naming_the_issue_in_full() -> None:
    event = recorded_cross_reference()
    event["source"]["issue"]["repository"]["full_name"] = "someone/fork"
    event["source"]["issue"]["body"] = "Fixes #28"
    short = timeline_candidates([event], "pygithub", "pygithub", 28)
    event["source"]["issue"]["body"] = "Fixes PyGithub/PyGithub#28"
    full = timeline_candidates([event], "pygithub", "pygithub", 28)

    assert short[0].provenance == "cross_reference" and short[0].url.startswith(
        "https://github.com/someone/fork/"
    )
    assert full[0].provenance == "closing_keyword"


def test_a_long_patch_is_cut_at_a_line_end() -> None:
    patch = "@@ -1,1 +1,1 @@\n" + "+x = 1\n" * (MAX_PATCH_CHARS // 4)

    cut, truncated = cut_patch(patch)

    assert truncated and len(cut) <= MAX_PATCH_CHARS and cut.endswith("+x = 1")
    assert cut_patch("+a\n") == ("+a\n", False)


# --- fetching the links ---------------------------------------------------------------------------------


def serve_fixing_issue(rsps: responses.RequestsMock) -> None:
    rsps.get(TIMELINE, json=fixing_timeline())
    rsps.get(f"{API}/repos/pygithub/pygithub/pulls/857/files", status=404, json={"message": "Not Found"})
    rsps.get(
        f"{API}/repos/pygithub/pygithub/pulls/31/files", json=sample("pygithub_PyGithub_pull_31_files.json")
    )
    rsps.get(
        f"{API}/repos/jacquev6/pygithub/commits/{SHA}",
        json=sample("pygithub_jacquev6_PyGithub_commit_1292bf0.json"),
    )


def test_links_carry_their_files_and_a_gone_pull_request_keeps_a_note(rsps: responses.RequestsMock) -> None:
    serve_fixing_issue(rsps)

    links = client().links_of("pygithub", "pygithub", 28)

    gone, pull, commit = links
    assert gone.files == [] and "404" in gone.note and "gone" in gone.note
    assert pull.provenance == "closing_keyword" and pull.metadata["merged"] is True
    assert len(pull.files) == 45 and pull.files[0].filename == "codegen/templates/GithubObject.py"
    assert sum(f.additions for f in pull.files) == 511 and sum(f.deletions for f in pull.files) == 384
    assert pull.files[0].patch.startswith("@@") and pull.note == ""
    assert commit.title == "Remove completion functions from GitAuthor" and commit.state == "committed"
    assert commit.files[0].filename == "github/GithubObjects/GitAuthor.py" and commit.files[0].deletions == 20
    # one timeline read plus one read per link
    assert len(rsps.calls) == 1 + len(links)


def test_the_timeline_and_the_files_follow_their_pages(rsps: responses.RequestsMock) -> None:
    events = fixing_timeline()[-3:-1]  # the pull request and the referenced commit
    page2 = f"{TIMELINE}?per_page=100&page=2"
    rsps.get(TIMELINE, json=events[:1], headers={"Link": f'<{page2}>; rel="next"'})
    rsps.get(page2, json=events[1:])
    files = sample("pygithub_PyGithub_pull_31_files.json")
    url = f"{API}/repos/pygithub/pygithub/pulls/31/files"
    rsps.get(url, json=files[:40], headers={"Link": f'<{url}?per_page=100&page=2>; rel="next"'})
    rsps.get(f"{url}?per_page=100&page=2", json=files[40:])
    rsps.get(
        f"{API}/repos/jacquev6/pygithub/commits/{SHA}",
        json=sample("pygithub_jacquev6_PyGithub_commit_1292bf0.json"),
    )

    pull, commit = client().links_of("pygithub", "pygithub", 28)

    assert len(pull.files) == 45 and commit.provenance == "cross_reference"


def test_a_very_large_diff_is_truncated_with_a_note(rsps: responses.RequestsMock) -> None:
    files = sample("pygithub_PyGithub_pull_31_files.json")[:2]
    files[0]["patch"] = "@@ -1,1 +1,100000 @@\n" + "+<script>alert(1)</script>\n" * 100_000
    rsps.get(TIMELINE, json=fixing_timeline()[-3:-2])
    rsps.get(f"{API}/repos/pygithub/pygithub/pulls/31/files", json=files)

    (pull,) = client().links_of("pygithub", "pygithub", 28)

    assert pull.files[0].truncated and len(pull.files[0].patch) <= MAX_PATCH_CHARS
    assert not pull.files[1].truncated
    assert "cut at 64,000 characters" in pull.note and files[0]["filename"] in pull.note


def test_rate_limits_server_errors_and_resets_on_the_way_are_waited_out_and_retried(
    rsps: responses.RequestsMock,
) -> None:
    sleeps: list[float] = []
    rsps.get(TIMELINE, status=502)
    rsps.get(TIMELINE, body=requests.ConnectionError("connection reset by peer"))
    rsps.get(TIMELINE, json=fixing_timeline()[-3:-2])
    files = f"{API}/repos/pygithub/pygithub/pulls/31/files"
    rsps.get(files, status=429, headers={"Retry-After": "7"}, json={"message": "slow down"})
    rsps.get(
        files,
        status=403,
        json={"message": "API rate limit exceeded"},
        headers={"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(int(NOW) + 30)},
    )
    rsps.get(files, body='[{"filename": "trunc')  # a transfer cut short: retried like a server error
    rsps.get(files, json=sample("pygithub_PyGithub_pull_31_files.json"))

    (pull,) = client(sleeps).links_of("pygithub", "pygithub", 28)

    assert len(pull.files) == 45
    assert sleeps == [1.0, 2.0, 7.0, 31.0, 1.0]


def test_a_commit_that_keeps_answering_invalid_json_stays_a_link_with_a_note(
    rsps: responses.RequestsMock,
) -> None:
    rsps.get(TIMELINE, json=fixing_timeline()[-1:])
    for _ in range(6):
        rsps.get(f"{API}/repos/jacquev6/pygithub/commits/{SHA}", body="{not json")

    (commit,) = client().links_of("pygithub", "pygithub", 28)

    assert commit.files == [] and "invalid JSON" in commit.note


def test_a_timeline_that_stays_down_stops_the_import(rsps: responses.RequestsMock) -> None:
    for _ in range(6):
        rsps.get(TIMELINE, status=502)

    with pytest.raises(GitHubUnavailable, match="timeline"):
        client().links_of("pygithub", "pygithub", 28)


def test_hydrating_with_links_puts_them_on_the_record_and_without_asks_nothing(
    rsps: responses.RequestsMock,
) -> None:
    issue = sample("pygithub_PyGithub_issue_28.json")
    rsps.get(f"{API}/repos/pygithub/pygithub/issues/28", json=issue)
    rsps.get(f"{API}/repos/pygithub/pygithub/issues/28", json=issue)
    serve_fixing_issue(rsps)

    (with_links,) = client().hydrate(
        ["https://github.com/PyGithub/PyGithub/issues/28"], comments=False, links=True
    )
    (without,) = client().hydrate(
        ["https://github.com/PyGithub/PyGithub/issues/28"], comments=False, links=False
    )

    assert [link.kind for link in with_links.links] == ["pull_request", "pull_request", "commit"]  # type: ignore[union-attr]
    assert without.links is None  # type: ignore[union-attr]
    assert sum("/timeline" in str(call.request.url) for call in rsps.calls) == 1


def test_a_pull_request_added_by_url_is_read_with_its_details(rsps: responses.RequestsMock) -> None:
    pull = {
        "number": 31,
        "title": "Fix labels",
        "state": "closed",
        "merged_at": "2012-05-26T14:50:00Z",
        "body": "b",
    }
    rsps.get(f"{API}/repos/pygithub/pygithub/pulls/31", json=pull)
    rsps.get(
        f"{API}/repos/pygithub/pygithub/pulls/31/files", json=sample("pygithub_PyGithub_pull_31_files.json")
    )

    link = client().link_for_url("https://github.com/PyGithub/PyGithub/pull/31/files")

    assert (link.kind, link.url, link.provenance, link.title, link.state) == (
        "pull_request", "https://github.com/pygithub/pygithub/pull/31", "manual", "Fix labels", "merged",
    )  # fmt: skip
    assert len(link.files) == 45
    with pytest.raises(ValueError, match="not a GitHub pull request or commit URL"):
        client().link_for_url("https://github.com/PyGithub/PyGithub/issues/31")
