"""GitHub REST client: issues with their comments and fix evidence (linked pull requests and commits).

Pure module (no Django; talks HTTP through ``requests``). :class:`GitHubClient` yields, for every
issue it meets, an :class:`ItemRecord` (issue with its comments), a :class:`Skipped` (a pull
request, an excluded label) or a :class:`Failed` (a URL that could not be fetched), so an import job
can count created / updated / skipped / failed without the client knowing about the database.

Behaviour at the network boundary (docs/design.md §4):

- pagination follows the ``Link: <...>; rel="next"`` header; a next link is always sent to the
  configured ``api_url`` host (a recorded replay names api.github.com; a hostile one could name
  another host), and the token is only ever sent there;
- timeouts, retries of ``5xx`` and connection errors with exponential backoff, ``Retry-After``,
  and waiting out an exhausted limit (``403``/``429`` with ``X-RateLimit-Remaining: 0`` until
  ``X-RateLimit-Reset``) are the importers' one policy, :mod:`apps.corpus.http`; every wait is
  reported through ``on_wait(seconds, reason)`` before sleeping. Only GitHub's own rules are here:
  a secondary-limit ``403`` (or a ``429``) without either header waits 60 s; a body that is not
  valid JSON is retried like a server error, then :class:`InvalidResponse` is raised (retries that
  run out otherwise raise :class:`GitHubUnavailable`); while hydrating a URL list an issue whose
  body stays invalid, or that answers ``404``/``410``/``451``, becomes a :class:`Failed` and the
  rest continue;
- ``401`` raises :class:`TokenRejected`; any other ``4xx`` raises :class:`GitHubError`;
- with ``links=True`` each issue also costs one timeline read (paginated) and one read per linked pull
  request (its files) or commit (:meth:`GitHubClient.links_of`, :mod:`.github_links`); a linked pull
  request or commit that is gone becomes a link with a note, not a failed issue.

The token is never put in an exception message, a log line, ``repr(client)`` or a record.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import requests

from apps.corpus.records import (
    ItemRecord,
    LinkRecord,
    canonical_url,
    github_commit_ref,
    github_issue_ref,
    github_pull_ref,
    parse_timestamp,
)
from apps.corpus.screening import first_matching_label

from .github_links import (
    Candidate,
    closes_issue,
    commit_title,
    file_changes,
    timeline_candidates,
    truncation_note,
)
from .github_records import _repo_of
from .github_records import comment_to_record as comment_to_record
from .github_records import is_issue_object as is_issue_object
from .github_records import is_pull_request as is_pull_request
from .github_records import issue_to_record as issue_to_record
from .http import (
    DEFAULT_MAX_WAIT,
    DEFAULT_TIMEOUT,
    HttpPolicy,
    NoticeCallback,
    PolicyError,
    RateLimited,
    RetriesExhausted,
    ServiceError,
    Timeout,
    Transient,
    WaitCallback,
    api_base,
    new_session,
)

DEFAULT_API_URL = "https://api.github.com"
SEARCH_RESULT_CAP = 1000
_REPO = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
_SECONDARY_LIMIT_WAIT = 60.0
_NOT_FOUND_STATUSES = (404, 410, 451)
_KIND_NAMES = {"pull_request": "pull request", "commit": "commit"}


class GitHubError(ServiceError):
    """A GitHub request failed. The message names the request (method and path), never the token."""


class TokenRejected(GitHubError):
    """GitHub answered 401: the token is missing, wrong or expired."""


class GitHubUnavailable(GitHubError):
    """Server errors or connection failures outlasted the retries."""


class InvalidResponse(GitHubError):
    """The body was not valid JSON (a truncated transfer, a proxy page) on every try."""


class NotFound(GitHubError):
    """404, 410 or 451: the issue or repository does not exist (any longer) or may not be shown."""


@dataclass(frozen=True, slots=True)
class Skipped:
    """An issue deliberately not imported (a pull request, an excluded label)."""

    url: str
    reason: str


@dataclass(frozen=True, slots=True)
class Failed:
    """An issue that could not be fetched; the import goes on with the others."""

    url: str
    message: str
    status: int | None = None


GitHubResult = ItemRecord | Skipped | Failed


class GitHubClient:
    """Reads issues from the GitHub REST API v3 (github.com or an Enterprise ``/api/v3`` root).

    ``session``, ``sleep`` and ``clock`` are injectable so tests replay recorded responses without
    waiting; they and ``max_retries``, ``backoff_base``, ``max_rate_limit_waits``, ``max_wait`` and
    ``timeout`` configure the client's :class:`~apps.corpus.http.HttpPolicy`. ``on_wait(seconds,
    reason)`` hears of every wait (rate limit, retry backoff) before it starts; ``on_notice(message)``
    hears of results the API will not deliver (the Search API stops at 1,000 results).
    """

    def __init__(
        self,
        api_url: str = DEFAULT_API_URL,
        token: str | None = None,
        session: requests.Session | None = None,
        sleep: Callable[[float], None] = time.sleep,
        max_retries: int = 5,
        *,
        on_wait: WaitCallback | None = None,
        on_notice: NoticeCallback | None = None,
        clock: Callable[[], float] = time.time,
        backoff_base: float = 1.0,
        max_rate_limit_waits: int = 20,
        timeout: Timeout = DEFAULT_TIMEOUT,
        max_wait: float = DEFAULT_MAX_WAIT,
    ) -> None:
        self.api_url, self._api_origin = api_base(api_url)
        self._token = token or None
        self._session = session if session is not None else new_session()
        self._policy = HttpPolicy(
            timeout=timeout,
            max_retries=max_retries,
            backoff_base=backoff_base,
            max_wait=max_wait,
            max_rate_limit_waits=max_rate_limit_waits,
            sleep=sleep,
            clock=clock,
            on_wait=on_wait,
        )
        self._on_notice = on_notice

    def __repr__(self) -> str:
        return f"GitHubClient(api_url={self.api_url!r}, token={'<set>' if self._token else None})"

    # --- public reads --------------------------------------------------------------------------

    def repo_issues(
        self,
        repo: str,
        *,
        state: str = "all",
        labels: Sequence[str] = (),
        exclude_labels: Sequence[str] = (),
        since: str | datetime | None = None,
        comments: bool = True,
        links: bool = False,
        limit: int | None = None,
    ) -> Iterator[GitHubResult]:
        """Issues of ``owner/name`` (``GET /repos/{repo}/issues``), oldest first.

        ``labels`` must all be present (GitHub's own filter); ``exclude_labels`` (exact names or
        ``*`` patterns, case-insensitive) are applied here and yield :class:`Skipped`. ``since``
        keeps issues updated at or after that time. ``limit`` caps the number of records.
        """
        if not _REPO.match(repo):
            raise ValueError(f"repository must be written owner/name, got {repo!r}")
        if state not in ("open", "closed", "all"):
            raise ValueError(f"state must be open, closed or all, got {state!r}")
        params: dict[str, str] = {
            "state": state,
            "per_page": str(self._page_size(limit)),
            "sort": "created",
            "direction": "asc",
        }
        if labels:
            params["labels"] = ",".join(labels)
        if since is not None:
            moment = since if isinstance(since, datetime) else parse_timestamp(since)
            if moment.tzinfo is None:
                moment = moment.replace(tzinfo=UTC)
            params["since"] = moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        issues = self._paginate(f"{self.api_url}/repos/{repo}/issues", params, items_key=None)
        yield from self._records(
            issues, comments=comments, links=links, exclude_labels=exclude_labels, limit=limit
        )

    def search_issues(
        self,
        query: str,
        *,
        comments: bool = True,
        links: bool = False,
        exclude_labels: Sequence[str] = (),
        limit: int | None = None,
    ) -> Iterator[GitHubResult]:
        """Results of a Search API query (``GET /search/issues?q=...``), pull requests skipped.

        The Search API returns at most 1,000 results per query; when ``total_count`` is larger,
        ``on_notice`` is told, so the caller can split the query (by date range, for example).
        """
        if not query.strip():
            raise ValueError("the search query is empty")
        params = {"q": query, "per_page": str(self._page_size(limit))}
        issues = self._paginate(f"{self.api_url}/search/issues", params, items_key="items")
        yield from self._records(
            issues, comments=comments, links=links, exclude_labels=exclude_labels, limit=limit
        )

    def hydrate(
        self,
        urls: Iterable[str],
        *,
        comments: bool = True,
        links: bool = False,
        limit: int | None = None,
    ) -> Iterator[GitHubResult]:
        """Fetch each issue URL (``GET /repos/o/r/issues/n``) with its comments.

        A URL that is not a GitHub issue URL, or whose issue is gone (404/410/451) or keeps
        answering invalid JSON, yields :class:`Failed`; the other URLs are still fetched.
        """
        produced = 0
        for url in urls:
            if limit is not None and produced >= limit:
                return
            ref = github_issue_ref(url)
            if ref is None:
                yield Failed(url, "not a GitHub issue URL")
                continue
            owner, repo, number = ref
            try:
                issue, _ = self._get_json(f"{self.api_url}/repos/{owner}/{repo}/issues/{number}")
                if not isinstance(issue, dict) or not is_issue_object(issue):
                    yield Failed(url, "the API answered something that is not an issue")
                    continue
                if is_pull_request(issue):
                    yield Skipped(canonical_url(url), "pull request")
                    continue
                comment_objects = self._comments_of(issue, owner, repo, number) if comments else []
                record = issue_to_record(issue, comment_objects)
                if links:
                    record.links = self.links_of(owner, repo, number)
            except (NotFound, InvalidResponse) as exc:
                yield Failed(url, str(exc), exc.status)
                continue
            produced += 1
            yield record

    # --- paging and records --------------------------------------------------------------------

    def _page_size(self, limit: int | None) -> int:
        if limit is not None and limit < 1:
            raise ValueError(f"limit must be at least 1, got {limit}")
        return 100 if limit is None else min(100, limit)

    def _records(
        self,
        issues: Iterator[dict[str, Any]],
        *,
        comments: bool,
        exclude_labels: Sequence[str],
        limit: int | None,
        links: bool = False,
    ) -> Iterator[GitHubResult]:
        produced = 0
        for issue in issues:
            if limit is not None and produced >= limit:
                return
            url = str(issue.get("html_url", ""))
            if is_pull_request(issue):
                yield Skipped(canonical_url(url), "pull request")
                continue
            label_names = [
                str(label.get("name", "")) for label in issue.get("labels") or [] if isinstance(label, dict)
            ]
            excluded = first_matching_label(label_names, exclude_labels) if exclude_labels else None
            if excluded is not None:
                yield Skipped(canonical_url(url), f"excluded label {excluded!r}")
                continue
            comment_objects: list[dict[str, Any]] = []
            ref = github_issue_ref(url)
            owner, repo = _repo_of(issue).split("/", 1) if ref is None else (ref[0], ref[1])
            if comments:
                comment_objects = self._comments_of(issue, owner, repo, int(issue["number"]))
            produced += 1
            record = issue_to_record(issue, comment_objects)
            if links:
                record.links = self.links_of(owner, repo, int(issue["number"]))
            yield record

    def _comments_of(
        self, issue: Mapping[str, Any], owner: str, repo: str, number: int
    ) -> list[dict[str, Any]]:
        if issue.get("comments") == 0:
            return []  # the issue says it has none: spare the request
        url = f"{self.api_url}/repos/{owner}/{repo}/issues/{number}/comments"
        return list(self._paginate(url, {"per_page": "100"}, items_key=None))

    def links_of(self, owner: str, repo: str, number: int) -> list[LinkRecord]:
        """The pull requests and commits that fixed or referenced the issue (see :mod:`.github_links`).

        One timeline read (paginated), then one read per linked pull request (its files, paginated)
        or commit. A pull request or commit that is gone (404/410/451) or keeps answering invalid
        JSON stays a link, with a note saying why its diff is missing.
        """
        timeline = f"{self.api_url}/repos/{owner}/{repo}/issues/{number}/timeline"
        events = self._paginate(timeline, {"per_page": "100"}, items_key=None)
        candidates = timeline_candidates(events, owner, repo, number)
        return [self._link(candidate, owner, repo, number) for candidate in candidates]

    def link_for_url(self, url: str) -> LinkRecord:
        """A pull request or commit a person names by URL (provenance ``manual``), with its diff.

        Raises ``ValueError`` for a URL that is neither a GitHub pull request nor a commit; a pull
        request or commit that is gone comes back with a note instead of files.
        """
        pull, commit = github_pull_ref(url), github_commit_ref(url)
        if pull is not None:
            candidate = Candidate("pull_request", pull[0], pull[1], str(pull[2]), "manual", None)
        elif commit is not None:
            candidate = Candidate("commit", commit[0], commit[1], commit[2], "manual", None)
        else:
            raise ValueError(f"not a GitHub pull request or commit URL: {url[:200]!r}")
        return self._link(candidate, "", "", 0)

    def _pull_details(self, candidate: Candidate, base: str) -> None:
        """Title, state and body of a pull request the timeline did not describe (one added by hand)."""
        data, _ = self._get_json(f"{base}/pulls/{candidate.ref}")
        if isinstance(data, dict):
            candidate.title = str(data.get("title") or "")
            candidate.body = str(data.get("body") or "")
            candidate.merged = bool(data.get("merged_at"))
            candidate.state = "merged" if candidate.merged else str(data.get("state") or "")

    def _link(self, candidate: Candidate, owner: str, repo: str, number: int) -> LinkRecord:
        base = f"{self.api_url}/repos/{candidate.owner}/{candidate.repo}"
        if candidate.kind == "pull_request" and candidate.provenance == "manual":
            with contextlib.suppress(NotFound, InvalidResponse):  # the files read below notes it
                self._pull_details(candidate, base)
        link = LinkRecord(
            kind=candidate.kind,
            url=candidate.url,
            provenance=candidate.provenance,
            title=candidate.title,
            state=candidate.state,
            body=candidate.body,
            found_at=candidate.found_at,
            metadata={"repo": f"{candidate.owner}/{candidate.repo}", "ref": candidate.ref},
        )
        if candidate.merged is not None:
            link.metadata["merged"] = candidate.merged
        left_out = 0
        try:
            if candidate.kind == "pull_request":
                files = self._paginate(f"{base}/pulls/{candidate.ref}/files", {"per_page": "100"}, None)
                link.files, left_out = file_changes(files)
            else:
                data, _ = self._get_json(f"{base}/commits/{candidate.ref}")
                if not isinstance(data, dict):
                    raise InvalidResponse(f"GET /repos/.../commits/{candidate.ref}: not a commit object")
                commit = data["commit"] if isinstance(data.get("commit"), dict) else {}
                message = str(commit.get("message") or "")
                link.title, link.body, link.state = commit_title(message), message, "committed"
                if link.provenance == "cross_reference" and closes_issue(message, owner, repo, number):
                    link.provenance = "closing_keyword"
                link.files, left_out = file_changes(data.get("files") or [])
        except NotFound as exc:
            link.note = f"GitHub answered {exc.status}: the {_KIND_NAMES[candidate.kind]} is gone or hidden"
            return link
        except InvalidResponse:
            link.note = f"GitHub kept answering invalid JSON for this {_KIND_NAMES[candidate.kind]}"
            return link
        link.note = truncation_note(link.files, left_out)
        return link

    def _paginate(
        self, url: str, params: Mapping[str, str] | None, items_key: str | None
    ) -> Iterator[dict[str, Any]]:
        next_url: str | None = url
        query: Mapping[str, str] | None = params
        first = True
        while next_url is not None:
            data, response = self._get_json(next_url, query)
            if items_key is not None:
                if not isinstance(data, dict) or not isinstance(data.get(items_key), list):
                    raise InvalidResponse(f"GET {_path(next_url)}: expected an object with {items_key!r}")
                if first:
                    self._notice_search_limits(data)
                page = data[items_key]
            else:
                if not isinstance(data, list):
                    raise InvalidResponse(f"GET {_path(next_url)}: expected a JSON array")
                page = data
            for item in page:
                if isinstance(item, dict):
                    yield item
            link = response.links.get("next", {}).get("url")
            next_url = self._on_api_host(link) if link else None
            query = None  # a next link carries its own query
            first = False

    def _notice_search_limits(self, data: Mapping[str, Any]) -> None:
        if self._on_notice is None:
            return
        total = data.get("total_count")
        if isinstance(total, int) and total > SEARCH_RESULT_CAP:
            self._on_notice(
                f"the search matches {total} issues but GitHub returns only the first {SEARCH_RESULT_CAP}; "
                "split the query (for example by created:<date range>) to get the rest"
            )
        if data.get("incomplete_results"):
            self._on_notice(
                "GitHub reports incomplete search results (the search timed out); some may be missing"
            )

    def _on_api_host(self, url: str) -> str:
        parts = urlsplit(url)
        return urlunsplit((self._api_origin[0], self._api_origin[1], parts.path, parts.query, ""))

    # --- one request, with waits and retries ---------------------------------------------------

    def _headers(self, url: str) -> dict[str, str]:
        headers = {
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": "2022-11-28",
            "User-Agent": "taxonomist-importer",
        }
        parts = urlsplit(url)
        if self._token and (parts.scheme, parts.netloc) == self._api_origin:
            headers["Authorization"] = f"Bearer {self._token}"
        return headers

    def _get_json(self, url: str, params: Mapping[str, str] | None = None) -> tuple[Any, requests.Response]:
        label = f"GET {_path(url)}"
        try:
            return self._policy.get(
                self._session,
                url,
                label=label,
                judge=lambda response: _judge(response, label),
                params=params,
                headers=self._headers(url),
            )
        except PolicyError as exc:
            if exc.invalid_body:
                raise InvalidResponse(str(exc), exc.status) from None
            if isinstance(exc, RetriesExhausted):
                raise GitHubUnavailable(str(exc), exc.status) from None
            raise GitHubError(str(exc), exc.status) from None


def _judge(
    response: requests.Response, label: str
) -> tuple[Any, requests.Response] | Transient | RateLimited:
    """GitHub's reading of an answer the policy did not retry or wait out (see the module docstring)."""
    status = response.status_code
    if status == 401:
        raise TokenRejected(f"token rejected: GitHub answered 401 to {label}; check GITHUB_TOKEN", 401)
    if status in (403, 429) and (status == 429 or "rate limit" in _api_message(response).lower()):
        return RateLimited(_SECONDARY_LIMIT_WAIT, f"secondary rate limit ({status})")
    if status in _NOT_FOUND_STATUSES:
        raise NotFound(f"{label}: {status} {response.reason or 'Not Found'}", status)
    if status >= 400:
        raise GitHubError(f"{label}: {status} {_api_message(response)}", status)
    try:
        return response.json(), response
    except ValueError:
        return Transient("the response is not valid JSON (truncated?)", invalid_body=True)


def _path(url: str) -> str:
    return urlsplit(url).path or "/"


def _api_message(response: requests.Response) -> str:
    try:
        data = response.json()
    except ValueError:
        return response.reason or ""
    if isinstance(data, dict) and isinstance(data.get("message"), str):
        return str(data["message"])[:200]
    return response.reason or ""
