"""GitLab REST API v4 client: a project's issues (or issue URLs) with their notes and fix evidence.

Pure module (no Django; talks HTTP through ``requests``). Works against gitlab.com or a self-managed
instance (``api_url`` such as ``https://gitlab.example.org/api/v4``). Yields, per issue, an
:class:`ItemRecord`, or a :class:`Failed` for a URL that could not be fetched.

- **issues**: ``GET /projects/:id/issues`` (``state`` opened/closed, ``labels``, ``updated_after``),
  oldest first; the project id is its URL-encoded path (``group%2Fname``);
- **comments**: ``GET /projects/:id/issues/:iid/notes``; system notes ("changed the description",
  "mentioned in merge request !3") are left out;
- **fix evidence**: ``GET .../issues/:iid/closed_by`` (merge requests that close the issue when merged:
  provenance ``closing_keyword``) and ``GET .../issues/:iid/related_merge_requests`` (``cross_reference``),
  then ``GET /projects/:id/merge_requests/:iid/changes`` for each merge request's diff (two list reads
  plus one read per merge request);
- **pagination**: the ``Link: rel="next"`` header, else ``X-Next-Page``; a next link always goes to the
  configured API host, and the token (``PRIVATE-TOKEN``) only ever goes there;
- **waits and retries**: the importers' policy (:mod:`apps.corpus.http`); a ``429`` that names
  ``RateLimit-Reset`` (epoch seconds) without ``Retry-After`` waits until then;
- ``401`` raises :class:`TokenRejected`; ``404`` on a listing raises :class:`NotFound`, on one issue
  of a URL list it becomes a :class:`Failed`; an unreadable merge request stays a link with a note.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

import requests

from .github_links import MAX_LINK_FILES, cut_patch, truncation_note
from .http import (
    HttpPolicy,
    PolicyError,
    RateLimited,
    RetriesExhausted,
    ServiceError,
    Transient,
    WaitCallback,
    api_base,
    new_session,
)
from .records import CommentRecord, FileChange, ItemRecord, LinkRecord, canonical_url, parse_timestamp

SOURCE_GITLAB = "gitlab"
DEFAULT_API_URL = "https://gitlab.com/api/v4"
STATES = ("opened", "closed", "all")
_ISSUE_PATH = re.compile(r"^/(?P<project>.+?)/-/(?:issues|work_items)/(?P<iid>\d+)/?$")
_PROJECT = re.compile(r"^[A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)+$")


class GitLabError(ServiceError):
    """A GitLab request failed; the message names the request, never the token."""


class TokenRejected(GitLabError):
    """401: GITLAB_TOKEN is missing, wrong, expired or lacks the read_api scope."""


class NotFound(GitLabError):
    """404: the project, issue or merge request does not exist or is not visible with this token."""


class InvalidResponse(GitLabError):
    """The body was not valid JSON on every try."""


@dataclass(frozen=True, slots=True)
class Failed:
    url: str
    message: str
    status: int | None = None


GitLabResult = ItemRecord | Failed


def issue_ref(url: str) -> tuple[str, str, int] | None:
    """``(host, project path, iid)`` of a GitLab issue URL (``https://host/group/name/-/issues/12``)."""
    parts = urlsplit(url.strip())
    match = _ISSUE_PATH.match(parts.path) if parts.scheme in ("http", "https") and parts.hostname else None
    if match is None:
        return None
    return str(parts.hostname).lower(), match.group("project"), int(match.group("iid"))


def changes_to_files(changes: Iterable[Mapping[str, Any]]) -> tuple[list[FileChange], int]:
    """A merge request's ``changes`` as :class:`FileChange` objects (+/- counted from the diff lines)."""
    files: list[FileChange] = []
    left_out = 0
    for change in changes:
        if not isinstance(change, Mapping):
            continue
        if len(files) >= MAX_LINK_FILES:
            left_out += 1
            continue
        diff = str(change.get("diff") or "")
        lines = diff.splitlines()
        patch, truncated = cut_patch(diff)
        status = (
            "added" if change.get("new_file") else "removed" if change.get("deleted_file")
            else "renamed" if change.get("renamed_file") else "modified"
        )  # fmt: skip
        files.append(
            FileChange(
                filename=str(change.get("new_path") or change.get("old_path") or ""),
                additions=sum(1 for line in lines if line.startswith("+") and not line.startswith("+++")),
                deletions=sum(1 for line in lines if line.startswith("-") and not line.startswith("---")),
                patch=patch,
                status=status,
                truncated=truncated,
            )
        )
    return files, left_out


def note_to_comment(note: Mapping[str, Any]) -> CommentRecord:
    author = note.get("author")
    return CommentRecord(
        external_id=str(note.get("id", "")),
        author=str(author.get("username")) if isinstance(author, Mapping) else "ghost",
        body=str(note.get("body") or ""),
        created_at=_time(note.get("created_at")),
    )


def issue_to_record(
    issue: Mapping[str, Any], project: str, notes: Iterable[Mapping[str, Any]] = ()
) -> ItemRecord:
    """A GitLab issue object (and its notes; system notes dropped) as an :class:`ItemRecord`."""
    kept = [dict(note) for note in notes if not note.get("system")]
    author = issue.get("author")
    labels = [str(label) for label in issue.get("labels") or []]
    iid = int(issue["iid"])
    return ItemRecord(
        url=canonical_url(str(issue["web_url"])),
        source=SOURCE_GITLAB,
        external_id=f"{project}#{iid}",
        title=str(issue.get("title") or "").strip(),
        body=str(issue.get("description") or ""),
        body_format="markdown",
        created_at=_time(issue.get("created_at")),
        tags=labels,
        metadata={
            "project": project,
            "iid": iid,
            "state": issue.get("state"),
            "author": author.get("username") if isinstance(author, Mapping) else None,
            "labels": labels,
            "updated_at": issue.get("updated_at"),
            "closed_at": issue.get("closed_at"),
            "comments_count": issue.get("user_notes_count"),
        },
        raw={"issue": dict(issue), "notes": kept},
        comments=[note_to_comment(note) for note in kept],
    )


class GitLabClient:
    """Reads issues from GitLab's REST API v4 (see the module docstring). ``session``, ``sleep`` and
    ``clock`` are injectable so tests replay recorded answers without waiting."""

    def __init__(
        self,
        api_url: str = DEFAULT_API_URL,
        token: str | None = None,
        session: requests.Session | None = None,
        sleep: Callable[[float], None] = time.sleep,
        *,
        max_retries: int = 5,
        on_wait: WaitCallback | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.api_url, self._origin = api_base(api_url)
        self._token = token or None
        self._session = session if session is not None else new_session()
        self._clock = clock
        self._policy = HttpPolicy(max_retries=max_retries, sleep=sleep, clock=clock, on_wait=on_wait)

    def __repr__(self) -> str:
        return f"GitLabClient(api_url={self.api_url!r}, token={'<set>' if self._token else None})"

    def project_issues(
        self,
        project: str,
        *,
        state: str = "all",
        labels: Sequence[str] = (),
        since: str | None = None,
        comments: bool = True,
        links: bool = True,
        limit: int | None = None,
    ) -> Iterator[GitLabResult]:
        """Issues of ``group/name`` oldest first, with notes and linked merge requests."""
        if not _PROJECT.match(project):
            raise ValueError(f"the project must be written group/name, got {project!r}")
        if state not in STATES:
            raise ValueError(f"state must be one of {', '.join(STATES)}, got {state!r}")
        params = {"per_page": str(min(100, limit or 100)), "order_by": "created_at", "sort": "asc"}
        if state != "all":
            params["state"] = state
        if labels:
            params["labels"] = ",".join(labels)
        if since:
            moment = parse_timestamp(since)
            params["updated_after"] = moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        for produced, issue in enumerate(self._paginate(f"{self._project_url(project)}/issues", params)):
            if limit is not None and produced >= limit:
                return
            yield self._record(issue, project, comments=comments, links=links)

    def hydrate(
        self, urls: Iterable[str], *, comments: bool = True, links: bool = True, limit: int | None = None
    ) -> Iterator[GitLabResult]:
        """Fetch each issue URL; one that is no GitLab issue, or whose issue is gone, is a :class:`Failed`."""
        produced = 0
        for url in urls:
            if limit is not None and produced >= limit:
                return
            ref = issue_ref(url)
            if ref is None:
                yield Failed(url, "not a GitLab issue URL (https://HOST/GROUP/NAME/-/issues/N)")
                continue
            _host, project, iid = ref
            try:
                issue, _ = self._get(f"{self._project_url(project)}/issues/{iid}")
                if not isinstance(issue, dict) or "iid" not in issue or "web_url" not in issue:
                    yield Failed(url, "the API answered something that is not an issue")
                    continue
                record = self._record(issue, project, comments=comments, links=links)
            except (NotFound, InvalidResponse) as exc:
                yield Failed(url, str(exc), exc.status)
                continue
            produced += 1
            yield record

    def _record(self, issue: Mapping[str, Any], project: str, *, comments: bool, links: bool) -> ItemRecord:
        base = f"{self._project_url(project)}/issues/{int(issue['iid'])}"
        notes: list[dict[str, Any]] = []
        if comments and issue.get("user_notes_count") != 0:
            notes = list(self._paginate(f"{base}/notes", {"per_page": "100", "sort": "asc"}))
        record = issue_to_record(issue, project, notes)
        if links:
            record.links = self.merge_requests_of(base)
        return record

    def merge_requests_of(self, issue_api_url: str) -> list[LinkRecord]:
        """Merge requests that close the issue (``closing_keyword``) or mention it (``cross_reference``)."""
        found: dict[str, tuple[dict[str, Any], str]] = {}
        for mr in self._paginate(f"{issue_api_url}/closed_by", {"per_page": "100"}):
            found.setdefault(str(mr.get("web_url")), (mr, "closing_keyword"))
        for mr in self._paginate(f"{issue_api_url}/related_merge_requests", {"per_page": "100"}):
            found.setdefault(str(mr.get("web_url")), (mr, "cross_reference"))
        return [self._merge_request(mr, provenance) for mr, provenance in found.values() if mr.get("web_url")]

    def _merge_request(self, mr: Mapping[str, Any], provenance: str) -> LinkRecord:
        state = str(mr.get("state") or "")
        link = LinkRecord(
            kind="merge_request",
            url=canonical_url(str(mr["web_url"])),
            provenance="closing_keyword" if provenance == "closing_keyword" else "cross_reference",
            title=str(mr.get("title") or ""),
            state=state,
            body=str(mr.get("description") or ""),
            found_at=_time(mr.get("merged_at")) or _time(mr.get("created_at")),
            metadata={"iid": mr.get("iid"), "project_id": mr.get("project_id"), "merged": state == "merged"},
        )
        url = f"{self.api_url}/projects/{mr.get('project_id')}/merge_requests/{mr.get('iid')}/changes"
        try:
            data, _ = self._get(url)
        except NotFound as exc:
            link.note = f"GitLab answered {exc.status}: the merge request is gone or hidden"
            return link
        except InvalidResponse:
            link.note = "GitLab kept answering invalid JSON for this merge request"
            return link
        changes = data.get("changes") if isinstance(data, dict) else None
        link.files, left_out = changes_to_files(changes if isinstance(changes, list) else [])
        link.note = truncation_note(link.files, left_out)
        return link

    # --- requests ----------------------------------------------------------------------------------

    def _project_url(self, project: str) -> str:
        return f"{self.api_url}/projects/{quote(project, safe='')}"

    def _paginate(self, url: str, params: Mapping[str, str]) -> Iterator[dict[str, Any]]:
        next_url: str | None = f"{url}?{urlencode(params)}"
        while next_url is not None:
            data, response = self._get(next_url)
            if not isinstance(data, list):
                raise InvalidResponse(f"GET {urlsplit(next_url).path}: expected a JSON array")
            yield from (item for item in data if isinstance(item, dict))
            link = response.links.get("next", {}).get("url")
            page = response.headers.get("X-Next-Page", "").strip()
            if link:
                parts = urlsplit(link)
                next_url = urlunsplit((*self._origin, parts.path, parts.query, ""))
            elif page.isdigit():
                parts = urlsplit(next_url)
                query = [(k, v) for k, v in _query(parts.query) if k != "page"] + [("page", page)]
                next_url = urlunsplit((parts.scheme, parts.netloc, parts.path, urlencode(query), ""))
            else:
                next_url = None

    def _get(self, url: str) -> tuple[Any, requests.Response]:
        label = f"GET {urlsplit(url).path}"
        headers = {"Accept": "application/json"}
        if self._token and (urlsplit(url).scheme, urlsplit(url).netloc) == self._origin:
            headers["PRIVATE-TOKEN"] = self._token
        try:
            return self._policy.get(
                self._session, url, label=label, judge=lambda r: self._judge(r, label), headers=headers
            )
        except PolicyError as exc:
            if exc.invalid_body:
                raise InvalidResponse(str(exc), exc.status) from None
            kind = "unavailable" if isinstance(exc, RetriesExhausted) else "stopped"
            raise GitLabError(f"GitLab {kind}: {exc}", exc.status) from None

    def _judge(
        self, response: requests.Response, label: str
    ) -> tuple[Any, requests.Response] | Transient | RateLimited:
        status = response.status_code
        if status == 401:
            raise TokenRejected(f"token rejected: GitLab answered 401 to {label}; check GITLAB_TOKEN", 401)
        reset = response.headers.get("RateLimit-Reset", "")
        if status == 429:
            seconds = max(int(reset) - self._clock(), 0.0) + 1.0 if reset.isdigit() else 60.0
            return RateLimited(seconds, f"rate limited (429); RateLimit-Reset {reset or 'not sent'}")
        if status in (404, 410):
            raise NotFound(f"{label}: {status} Not Found", status)
        if status >= 400:
            raise GitLabError(f"{label}: {status} {response.reason or ''}".rstrip(), status)
        try:
            return response.json(), response
        except ValueError:
            return Transient("the response is not valid JSON (truncated?)", invalid_body=True)


def _query(query: str) -> list[tuple[str, str]]:
    return parse_qsl(query, keep_blank_values=True)


def _time(value: object) -> datetime | None:
    if isinstance(value, str) and value:
        try:
            return parse_timestamp(value.replace("Z", "+00:00"))
        except ValueError:
            return None
    return None
