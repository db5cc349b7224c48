"""GitHub REST issue objects as records: the conversion half of the GitHub importer.

Pure module (no Django). :mod:`apps.corpus.github` fetches; these functions turn what it fetched
(an issue object and its comment objects) into an :class:`ItemRecord`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from .records import (
    SOURCE_GITHUB,
    CommentRecord,
    ItemRecord,
    canonical_url,
    github_issue_ref,
    parse_timestamp,
)


def is_issue_object(data: Mapping[str, Any]) -> bool:
    """True for a GitHub REST issue (or pull request) object."""
    return "html_url" in data and "number" in data and ("repository_url" in data or "user" in data)


def is_pull_request(issue: Mapping[str, Any]) -> bool:
    """GitHub returns pull requests among issues, marked by a ``pull_request`` object with URLs.

    The 2012-era API put a ``pull_request`` stub with null URLs on *every* issue, so the key alone
    does not make a pull request: one of its URLs must be set.
    """
    marker = issue.get("pull_request")
    if not isinstance(marker, Mapping):
        return marker is not None
    return any(marker.get(k) for k in ("html_url", "url", "diff_url", "patch_url"))


def _login(user: object) -> str:
    if isinstance(user, Mapping) and isinstance(user.get("login"), str):
        return str(user["login"])
    return "ghost"  # GitHub's name for a deleted account


def _timestamp(value: object) -> datetime | None:
    if isinstance(value, str | int | float) and not isinstance(value, bool) and value != "":
        return parse_timestamp(value)
    return None


def _repo_of(issue: Mapping[str, Any]) -> str:
    ref = github_issue_ref(str(issue["html_url"]))
    if ref is not None:
        return f"{ref[0]}/{ref[1]}"
    # GitHub Enterprise: html_url is on another host; repository_url ends with /repos/<owner>/<repo>.
    parts = str(issue.get("repository_url", "")).rstrip("/").split("/")
    if len(parts) >= 2 and parts[-2] and parts[-1]:
        return f"{parts[-2]}/{parts[-1]}".lower()
    raise ValueError(f"cannot tell the repository of {issue['html_url']!r}")


def comment_to_record(comment: Mapping[str, Any]) -> CommentRecord:
    """A GitHub issue comment object as a :class:`CommentRecord` (Markdown body)."""
    return CommentRecord(
        external_id=str(comment["id"]),
        author=_login(comment.get("user")),
        body=str(comment.get("body") or ""),
        body_format="markdown",
        created_at=_timestamp(comment.get("created_at")),
    )


def issue_to_record(issue: Mapping[str, Any], comments: Iterable[Mapping[str, Any]] = ()) -> ItemRecord:
    """A GitHub REST issue object (and its comment objects) as an :class:`ItemRecord`.

    ``tags`` are the label names; ``raw`` is ``{"issue": issue, "comments": [...]}``.
    Raises ``KeyError``/``ValueError`` when ``html_url`` or ``number`` is missing or unusable.
    """
    html_url = str(issue["html_url"])
    number = int(issue["number"])
    repo = _repo_of(issue)
    labels = [
        str(label["name"]) if isinstance(label, Mapping) else str(label)
        for label in issue.get("labels") or []
    ]
    comment_list = [dict(comment) for comment in comments]
    milestone = issue.get("milestone")
    metadata: dict[str, Any] = {
        "repo": repo,
        "number": number,
        "state": issue.get("state"),
        "state_reason": issue.get("state_reason"),
        "author": _login(issue.get("user")),
        "author_association": issue.get("author_association"),
        "labels": labels,
        "comments_count": issue.get("comments"),
        "updated_at": issue.get("updated_at"),
        "closed_at": issue.get("closed_at"),
        "locked": issue.get("locked"),
        "milestone": milestone.get("title") if isinstance(milestone, Mapping) else None,
        "assignees": [_login(user) for user in issue.get("assignees") or []],
    }
    return ItemRecord(
        url=canonical_url(html_url),
        source=SOURCE_GITHUB,
        external_id=f"{repo}#{number}",
        title=str(issue.get("title") or "").strip(),
        body=str(issue.get("body") or ""),
        body_format="markdown",
        created_at=_timestamp(issue.get("created_at")),
        tags=labels,
        metadata=metadata,
        raw={"issue": dict(issue), "comments": comment_list},
        comments=[comment_to_record(comment) for comment in comment_list],
    )
