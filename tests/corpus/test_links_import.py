"""Fix evidence through the import: one row per URL, updated on re-import, kept by --no-links, in the API."""

from __future__ import annotations

import copy
import io
from pathlib import Path
from typing import Any

import pytest
import responses
from django.core.management import call_command
from django.test import Client

from apps.accounts.models import Study, User
from apps.corpus.models import ImportJob, Item, ItemLink
from apps.corpus.services.links import LinkError, add_manual_link, fix_evidence, remove_link

from .conftest import sample
from .test_github_links import API, SHA, fixing_timeline

pytestmark = pytest.mark.django_db

ISSUE = f"{API}/repos/pygithub/pygithub/issues/28"
ISSUE_URL = "https://github.com/pygithub/pygithub/issues/28"


def serve(timeline: list[dict[str, Any]]) -> None:
    responses.get(ISSUE, json=sample("pygithub_PyGithub_issue_28.json"))
    responses.get(f"{ISSUE}/comments", json=sample("pygithub_PyGithub_issue_28_comments.json"))
    responses.get(f"{ISSUE}/timeline", json=timeline)
    responses.get(f"{API}/repos/pygithub/pygithub/pulls/857/files", status=404, json={"message": "Not Found"})
    responses.get(
        f"{API}/repos/pygithub/pygithub/pulls/31/files", json=sample("pygithub_PyGithub_pull_31_files.json")
    )
    responses.get(
        f"{API}/repos/jacquev6/pygithub/commits/{SHA}",
        json=sample("pygithub_jacquev6_PyGithub_commit_1292bf0.json"),
    )


def import_issue(tmp_path: Path, *extra: str) -> str:
    urls = tmp_path / "urls.txt"
    urls.write_text(ISSUE_URL + "\n", encoding="utf-8")
    out = io.StringIO()
    call_command("import_github", "ddp", "--urls", str(urls), *extra, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def links() -> list[tuple[str, str, str]]:
    return [(link.kind, link.url, link.provenance) for link in ItemLink.objects.order_by("url")]


@responses.activate
def test_an_import_stores_each_link_once_and_a_second_import_changes_nothing(
    study: Study, tmp_path: Path
) -> None:
    serve(fixing_timeline())
    import_issue(tmp_path)
    serve(fixing_timeline())

    out = import_issue(tmp_path)

    assert "0 created, 0 updated, 1 unchanged" in out
    assert links() == [
        ("commit", f"https://github.com/jacquev6/pygithub/commit/{SHA}", "closed_by_commit"),
        ("pull_request", "https://github.com/pygithub/pygithub/pull/31", "closing_keyword"),
        ("pull_request", "https://github.com/pygithub/pygithub/pull/857", "cross_reference"),
    ]
    pull = ItemLink.objects.get(url__endswith="/pull/31")
    assert len(pull.files) == 45 and pull.additions == 511 and pull.deletions == 384
    assert pull.found_at is not None and pull.metadata["merged"] is True
    gone = ItemLink.objects.get(url__endswith="/pull/857")
    assert gone.files == [] and "404" in gone.note


@responses.activate
def test_a_re_import_updates_links_drops_the_unfound_and_keeps_manual_ones(
    study: Study, lead: User, tmp_path: Path
) -> None:
    serve(fixing_timeline())
    import_issue(tmp_path)
    item = Item.objects.get()
    responses.get(f"{API}/repos/pygithub/pygithub/pulls/31", json={"title": "Fix labels", "state": "closed"})
    responses.get(f"{API}/repos/pygithub/pygithub/pulls/31/files", json=[])
    manual = add_manual_link(item, "https://github.com/PyGithub/PyGithub/pull/31", lead, read_with_replay)
    assert manual.provenance == "manual" and ItemLink.objects.count() == 3  # the same URL: one row
    timeline = fixing_timeline()
    renamed = copy.deepcopy(timeline[-3])
    timeline = [event for event in timeline if event.get("event") != "closed" or not event.get("commit_id")]
    timeline = [e for e in timeline if e.get("event") != "referenced"]
    renamed["source"]["issue"]["title"] = "Fix the labels of issues, take two"
    timeline[-1] = renamed
    serve(timeline)

    out = import_issue(tmp_path)

    assert "1 updated" in out
    assert links() == [
        ("pull_request", "https://github.com/pygithub/pygithub/pull/31", "manual"),
        ("pull_request", "https://github.com/pygithub/pygithub/pull/857", "cross_reference"),
    ]  # the commit is no longer found; the lead's link stays theirs, its title refreshed
    assert ItemLink.objects.get(url__endswith="/pull/31").title == "Fix the labels of issues, take two"


def read_with_replay(url: str) -> Any:
    from apps.corpus.github import GitHubClient

    return GitHubClient(sleep=lambda _s: None).link_for_url(url)


@responses.activate
def test_no_links_reads_no_timeline_and_leaves_the_stored_links_alone(study: Study, tmp_path: Path) -> None:
    serve(fixing_timeline())
    import_issue(tmp_path)
    responses.calls.reset()
    responses.get(ISSUE, json=sample("pygithub_PyGithub_issue_28.json"))
    responses.get(f"{ISSUE}/comments", json=sample("pygithub_PyGithub_issue_28_comments.json"))

    import_issue(tmp_path, "--no-links")

    assert not any("/timeline" in str(call.request.url) for call in responses.calls)
    assert ItemLink.objects.count() == 3
    assert ImportJob.objects.order_by("-pk").first().params["no_links"] is True  # type: ignore[union-attr]


@responses.activate
def test_the_item_api_lists_links_with_their_files(
    study: Study, lead: User, client: Client, tmp_path: Path
) -> None:
    serve(fixing_timeline())
    import_issue(tmp_path)
    item = Item.objects.get()
    client.force_login(lead)

    data = client.get(f"/api/v1/studies/{study.slug}/items/{item.pk}/").json()

    by_url = {link["url"]: link for link in data["links"]}
    pull = by_url["https://github.com/pygithub/pygithub/pull/31"]
    assert (pull["kind"], pull["provenance"], pull["state"]) == ("pull_request", "closing_keyword", "merged")
    assert pull["files"][0] == {
        "filename": "codegen/templates/GithubObject.py",
        "additions": 1,
        "deletions": 1,
        "patch": sample("pygithub_PyGithub_pull_31_files.json")[0]["patch"],
        "truncated": False,
    }
    assert by_url[f"https://github.com/jacquev6/pygithub/commit/{SHA}"]["title"] == (
        "Remove completion functions from GitAuthor"
    )


def test_a_stack_overflow_question_shows_its_accepted_answer_as_fix_evidence(study: Study) -> None:
    item = Item.objects.create(
        study=study, url="https://stackoverflow.com/questions/1", source="stackoverflow"
    )
    item.comments.create(position=1, external_id="11", author="ann", body="no", is_answer=True)
    item.comments.create(
        position=2,
        external_id="12",
        author="bo",
        body="yes",
        body_html="<p>yes</p>",
        is_answer=True,
        is_accepted=True,
    )

    (answer,) = fix_evidence(item)

    assert (answer.kind, answer.url, answer.provenance, answer.body_html) == (
        "answer", "https://stackoverflow.com/a/12", "accepted_answer", "<p>yes</p>",
    )  # fmt: skip


def test_removing_a_link_twice_says_it_is_gone(study: Study) -> None:
    item = Item.objects.create(study=study, url=ISSUE_URL, source="github")
    link = ItemLink.objects.create(
        item=item, kind="commit", url=f"https://github.com/a/b/commit/{SHA}", provenance="manual"
    )

    remove_link(item, link.pk)

    with pytest.raises(LinkError, match="not on this item"):
        remove_link(item, link.pk)


def test_a_url_that_is_no_pull_request_or_commit_is_refused_by_name(study: Study, lead: User) -> None:
    item = Item.objects.create(study=study, url=ISSUE_URL, source="github")

    with pytest.raises(LinkError, match="not a GitHub pull request or commit URL"):
        add_manual_link(item, "https://example.org/x", lead, read_with_replay)
    assert not ItemLink.objects.exists()
