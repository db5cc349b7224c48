"""Fix evidence of a Jira issue: the development panel's commits and pull requests, and commit links among
its remote links. Pure module (no Django, no HTTP): the client (:mod:`.jira`) fetches, this reads.

- **Development panel** (Jira Server/Data Center with a DVCS connector or an app such as GitHub for Jira;
  Jira Cloud serves the same path): ``GET /rest/dev-status/latest/issue/summary?issueId=ID`` says, per
  kind of data (``repository`` for commits, ``pullrequest``), how many each connected application
  (``byInstanceType``: ``github``, ``githube``, ``gitlab``, ``bitbucket``, ``stash``...) holds; then
  ``GET /rest/dev-status/latest/issue/detail?issueId=ID&applicationType=TYPE&dataType=repository|pullrequest``
  for each pair with a count, answering ``{"errors": [], "detail": [{"repositories": [{"name", "url",
  "commits": [{"id", "displayId", "message", "url", "authorTimestamp", "files": [{"path", "changeType",
  "linesAdded", "linesRemoved"}]}]}], "pullRequests": [{"id", "name", "url", "status", "lastUpdate"}],
  "_instance": {...}}]}``. An issue with nothing linked costs the one summary read. The panel lists the
  files a commit changed with their line counts, not the diff: the link's note says so.
- **Remote links** (``GET /rest/api/2/issue/KEY/remotelink``, Jira's own API): ``[{"object": {"url",
  "title", "summary", "status": {"resolved"}}, "application": {...}, "relationship"}]``; those whose URL
  is a commit, a pull request or a merge request (GitHub, GitLab, Bitbucket) are kept.

Links get the provenance ``development_panel`` or ``remote_link``. A URL that is not http(s) is dropped.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from .github_links import MAX_LINK_FILES, commit_title
from .records import (
    FileChange,
    LinkKind,
    LinkRecord,
    canonical_url,
    commit_url,
    github_commit_ref,
    github_pull_ref,
    parse_timestamp,
    pull_request_url,
)

DATA_TYPES = ("repository", "pullrequest")  # the panel's names: commits come in repositories
FILES_NOTE = "Jira's development panel lists the files a commit changed, not their diff."
_COMMIT_PATH = re.compile(r"/(?:-/)?commits?/[0-9a-fA-F]{7,40}/?$")
_PULL_PATH = re.compile(r"/(?:pull|pulls|pull-requests|-/merge_requests|merge_requests)/\d+(?:/.*)?$")
_STATES = {"MERGED": "merged", "OPEN": "open", "DECLINED": "closed", "CLOSED": "closed"}


def detail_requests(summary: object) -> list[tuple[str, str]]:
    """``(applicationType, dataType)`` pairs the summary counts something for, in a stable order."""
    wanted: list[tuple[str, str]] = []
    sections = _mapping(_mapping(summary).get("summary"))
    for data_type in DATA_TYPES:
        by_type = _mapping(_mapping(sections.get(data_type)).get("byInstanceType"))
        for application, counts in sorted(by_type.items()):
            if _count(_mapping(counts).get("count")) > 0:
                wanted.append((str(application), data_type))
    return wanted


def detail_links(detail: object) -> list[LinkRecord]:
    """The commits and pull requests of one detail answer, as links (``development_panel``)."""
    links: list[LinkRecord] = []
    for block in _mapping(detail).get("detail") or []:
        if not isinstance(block, Mapping):
            continue
        for repository in block.get("repositories") or []:
            if not isinstance(repository, Mapping):
                continue
            for commit in repository.get("commits") or []:
                link = _commit_link(commit, str(repository.get("name") or ""))
                if link is not None:
                    links.append(link)
        for pull in block.get("pullRequests") or []:
            link = _pull_link(pull)
            if link is not None:
                links.append(link)
    return links


def remote_links(answer: object) -> list[LinkRecord]:
    """Remote links whose URL is a commit, pull request or merge request (``remote_link``)."""
    links: list[LinkRecord] = []
    for remote in answer if isinstance(answer, list) else []:
        target = _mapping(_mapping(remote).get("object"))
        url = _web_url(target.get("url"))
        kind = link_kind(url) if url else None
        if url is None or kind is None:
            continue
        resolved = _mapping(target.get("status")).get("resolved")
        links.append(
            LinkRecord(
                kind=kind,
                url=url,
                provenance="remote_link",
                title=str(target.get("title") or "")[:500],
                state="closed" if resolved is True else "",
                body=str(target.get("summary") or ""),
                metadata={"relationship": _mapping(remote).get("relationship"), "application": _app(remote)},
            )
        )
    return links


def link_kind(url: str) -> LinkKind | None:
    """``commit``, ``pull_request`` or ``merge_request`` for a web URL of one, else None."""
    path = urlsplit(url).path
    if _COMMIT_PATH.search(path):
        return "commit"
    if _PULL_PATH.search(path):
        return "merge_request" if "merge_requests" in path else "pull_request"
    return None


def merge(links: Iterable[LinkRecord]) -> list[LinkRecord]:
    """One link per URL: the development panel's (it has the files) wins over a remote link's."""
    kept: dict[str, LinkRecord] = {}
    for link in links:
        have = kept.get(link.url)
        if have is None or (have.provenance == "remote_link" and link.provenance == "development_panel"):
            kept[link.url] = link
    return list(kept.values())


def _commit_link(commit: object, repository: str) -> LinkRecord | None:
    data = _mapping(commit)
    url = _web_url(data.get("url"))
    if url is None:
        return None
    message = str(data.get("message") or "")
    files: list[FileChange] = []
    raw_files = [f for f in data.get("files") or [] if isinstance(f, Mapping)]
    for change in raw_files[:MAX_LINK_FILES]:
        files.append(
            FileChange(
                filename=str(change.get("path") or ""),
                additions=_count(change.get("linesAdded")),
                deletions=_count(change.get("linesRemoved")),
                status=str(change.get("changeType") or "").lower(),
            )
        )
    note = FILES_NOTE if files else ""
    left_out = max(len(raw_files), _count(data.get("fileCount"))) - len(files)
    if left_out > 0:
        note = f"{note} {left_out} more file(s) not listed.".strip()
    return LinkRecord(
        kind="commit",
        url=url,
        provenance="development_panel",
        title=commit_title(message) or str(data.get("displayId") or ""),
        state="committed",
        body=message,
        found_at=jira_time(data.get("authorTimestamp")),
        files=files,
        note=note,
        metadata={"sha": data.get("id"), "repository": repository, "merge": bool(data.get("merge"))},
    )


def _pull_link(pull: object) -> LinkRecord | None:
    data = _mapping(pull)
    url = _web_url(data.get("url"))
    if url is None:
        return None
    status = str(data.get("status") or "").upper()
    return LinkRecord(
        kind="merge_request" if "merge_requests" in urlsplit(url).path else "pull_request",
        url=url,
        provenance="development_panel",
        title=str(data.get("name") or "")[:500],
        state=_STATES.get(status, status.lower()),
        found_at=jira_time(data.get("lastUpdate")),
        metadata={"id": data.get("id"), "merged": status == "MERGED"},
    )


def _web_url(value: object) -> str | None:
    """A link's one spelling: GitHub's pull request and commit URLs as the GitHub importer writes them,
    others canonical (fragment and tracking parameters dropped); None for what is not http(s)."""
    if not isinstance(value, str) or urlsplit(value.strip()).scheme.lower() not in ("http", "https"):
        return None
    pull, commit = github_pull_ref(value), github_commit_ref(value)
    try:
        url = pull_request_url(*pull) if pull else commit_url(*commit) if commit else canonical_url(value)
    except ValueError:
        return None
    return url if len(url) <= 500 else None


def _app(remote: object) -> str | None:
    name = _mapping(_mapping(remote).get("application")).get("name")
    return str(name) if name else None


def jira_time(value: object) -> datetime | None:
    """A Jira timestamp (ISO 8601, its offset written +0000 or +00:00), or None."""
    if not isinstance(value, str) or not value:
        return None
    text = value.replace("Z", "+00:00")
    if len(text) > 5 and text[-5] in "+-" and text[-3] != ":":  # Jira's +0000
        text = f"{text[:-2]}:{text[-2:]}"
    try:
        return parse_timestamp(text)
    except ValueError:
        return None


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0
