"""Jira issues from the REST API (Server / Data Center or Cloud) or from an export file, as records.

Pure module (no Django; talks HTTP through ``requests``).

- **Server / Data Center**: ``GET /rest/api/2/search?jql=...&startAt=N&maxResults=50``, paged by
  ``startAt`` until ``total``; text in wiki markup. The token (``JIRA_TOKEN``) goes as a bearer token
  (a personal access token).
- **Cloud** (a host under ``atlassian.net``, or ``cloud=True``): ``GET /rest/api/3/search/jql?jql=...``,
  paged by ``nextPageToken`` until ``isLast``; text in the Atlassian Document Format. ``JIRA_USER`` (the
  account's e-mail) and ``JIRA_TOKEN`` (an API token) go as HTTP basic authentication.
- **Export files**: a JSON export (a search answer ``{"issues": [...]}`` or a list of issues) or the
  XML (RSS) export of an issue search (``<rss><channel><item>``, text in HTML); a file that declares a
  DOCTYPE or entities is refused (no entity expansion, as for the Stack Overflow dump).

Each issue becomes an :class:`ItemRecord` with ``source="jira"``, ``external_id`` the issue key and the
canonical URL ``https://HOST/browse/KEY-123``; comments become its thread (the ones the search did not
embed are fetched from ``/issue/KEY/comment``); issue links ("is duplicated by MESOS-12") go into
``metadata["issue_links"]``. Wiki markup and ADF are turned into Markdown (:mod:`.jira_markup`) and
rendered through the one sanitizer. The HTTP policy is the importers' one (:mod:`apps.corpus.http`):
``429``/``503`` with ``Retry-After`` are waited out, ``5xx`` and resets retried, bodies that are not JSON
retried then reported; ``401``/``403`` raise :class:`TokenRejected`.

With ``links=True`` (the default) each issue's fix evidence is read too (:meth:`JiraClient.links_of`,
:mod:`.jira_links`): the development panel (``/rest/dev-status/latest/issue/summary``, then one detail
read per application and kind it counts) and the remote links (``/rest/api/2/issue/KEY/remotelink``).
Those endpoints are optional: a ``401``/``403``/``404`` (no development panel on this site, remote links
off) is told once through ``on_notice`` and the endpoint is not asked again; an answer that stays
unreadable (server errors, invalid JSON) is told for that issue, whose stored links are then kept.
"""

from __future__ import annotations

import base64
import os
import re
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import urlencode, urlsplit

import requests

from apps.core.files import JsonReader, NonJsonNumber

from .http import (
    HttpPolicy,
    NoticeCallback,
    PolicyError,
    RateLimited,
    ServiceError,
    Transient,
    WaitCallback,
    api_base,
    new_session,
)
from .jira_links import detail_links, detail_requests, jira_time, merge, remote_links
from .jira_markup import adf_to_markdown, wiki_to_markdown
from .records import BodyFormat, CommentRecord, ItemRecord, LinkRecord

SOURCE_JIRA = "jira"
PAGE_SIZE = 50
_FIELDS = ",".join(
    ("summary", "description", "comment", "labels", "components", "status", "resolution", "issuetype",
     "priority", "created", "updated", "resolutiondate", "issuelinks", "project", "reporter")
)  # fmt: skip


class JiraError(ServiceError):
    pass


class TokenRejected(JiraError):
    """401/403: JIRA_TOKEN (and JIRA_USER for Cloud) are missing, wrong or not allowed to read."""


class NotFound(JiraError):
    """404/410: the issue does not exist, or this account cannot see it."""


class ExportError(ValueError):
    """An export file that is neither Jira's JSON nor its XML; the message says what is wrong, and where."""


def browse_url(base: str, key: str) -> str:
    parts = urlsplit(base)
    return f"https://{parts.netloc.lower()}/browse/{key}"


def _text(value: object, cloud: bool) -> str:
    if isinstance(value, Mapping):
        return adf_to_markdown(value)
    if isinstance(value, str):
        return wiki_to_markdown(value) if not cloud else value
    return ""


def _name(user: object) -> str:
    if isinstance(user, Mapping):
        return str(user.get("displayName") or user.get("name") or user.get("accountId") or "unknown")
    return "unknown"


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def issue_to_record(
    issue: Mapping[str, Any],
    base_url: str,
    *,
    cloud: bool,
    comments: Iterable[Mapping[str, Any]] | None = None,
) -> ItemRecord:
    """A Jira REST issue object as an :class:`ItemRecord` (``comments`` replace the embedded ones)."""
    key = str(issue["key"])
    fields = _mapping(issue.get("fields"))
    embedded = _mapping(fields.get("comment"))
    thread = list(comments) if comments is not None else list(embedded.get("comments") or [])
    labels = [str(label) for label in fields.get("labels") or []]
    components = [str(c.get("name")) for c in fields.get("components") or [] if isinstance(c, Mapping)]
    links = []
    for link in fields.get("issuelinks") or []:
        if not isinstance(link, Mapping):
            continue
        kind = _mapping(link.get("type"))
        for direction, other in (("outward", link.get("outwardIssue")), ("inward", link.get("inwardIssue"))):
            if isinstance(other, Mapping) and other.get("key"):
                links.append({"type": kind.get(direction) or kind.get("name"), "key": other["key"]})

    def named(field: str) -> str | None:
        value = fields.get(field)
        return str(value.get("name")) if isinstance(value, Mapping) and value.get("name") else None

    return ItemRecord(
        url=browse_url(base_url, key),
        source=SOURCE_JIRA,
        external_id=key,
        title=str(fields.get("summary") or "").strip(),
        body=_text(fields.get("description"), cloud),
        body_format="markdown",
        created_at=jira_time(fields.get("created")),
        tags=labels + [f"component:{c}" for c in components],
        metadata={
            "key": key,
            "project": key.rsplit("-", 1)[0],
            "status": named("status"),
            "resolution": named("resolution"),
            "type": named("issuetype"),
            "priority": named("priority"),
            "updated_at": fields.get("updated"),
            "resolved_at": fields.get("resolutiondate"),
            "issue_links": links,
        },
        raw={"issue": dict(issue)},
        comments=[
            CommentRecord(
                external_id=str(c.get("id", "")),
                author=_name(c.get("author")),
                body=_text(c.get("body"), cloud),
                created_at=jira_time(c.get("created")),
            )
            for c in thread
            if isinstance(c, Mapping)
        ],
    )


class JiraClient:
    """Issues of a JQL query from Jira Server/Data Center or Cloud (see the module docstring)."""

    def __init__(
        self,
        api_url: str,
        token: str | None = None,
        user: str | None = None,
        *,
        cloud: bool | None = None,
        session: requests.Session | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.time,
        on_wait: WaitCallback | None = None,
        on_notice: NoticeCallback | None = None,
        max_retries: int = 5,
    ) -> None:
        self.base_url, self._origin = api_base(api_url, "Jira")
        self._on_notice = on_notice
        self._absent: set[str] = set()  # optional endpoints this site answered 401/403/404 to
        self.cloud = self._origin[1].lower().endswith(".atlassian.net") if cloud is None else cloud
        self._auth: str | None = None
        if token and user:
            self._auth = "Basic " + base64.b64encode(f"{user}:{token}".encode()).decode()
        elif token:
            self._auth = f"Bearer {token}"
        self._session = session if session is not None else new_session()
        self._policy = HttpPolicy(max_retries=max_retries, sleep=sleep, clock=clock, on_wait=on_wait)

    def __repr__(self) -> str:
        auth = "<set>" if self._auth else None
        return f"JiraClient(base_url={self.base_url!r}, cloud={self.cloud}, auth={auth})"

    @property
    def _api(self) -> str:
        return f"{self.base_url}/rest/api/{3 if self.cloud else 2}"

    def search(self, jql: str, *, limit: int | None = None, links: bool = True) -> Iterator[ItemRecord]:
        if not jql.strip():
            raise ValueError("the JQL query is empty")
        for produced, issue in enumerate(self._pages(jql)):
            if limit is not None and produced >= limit:
                return
            yield self._record(issue, links)

    def issue(self, key: str, *, links: bool = True) -> ItemRecord:
        """One issue by its key (``GET /issue/KEY``), with its comments and fix evidence.

        Raises :class:`NotFound` when the issue is gone or hidden, :class:`TokenRejected`, :class:`JiraError`.
        """
        if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*-\d+", key):
            raise ValueError(f"not a Jira issue key: {key!r}")
        issue = self._get(f"{self._api}/issue/{key}", {"fields": _FIELDS})
        if not issue.get("key"):
            raise JiraError(f"GET /issue/{key}: the answer is not an issue")
        return self._record(issue, links)

    def _record(self, issue: Mapping[str, Any], links: bool) -> ItemRecord:
        record = issue_to_record(issue, self.base_url, cloud=self.cloud, comments=self._all_comments(issue))
        if links:
            record.links = self.links_of(issue)
        return record

    def links_of(self, issue: Mapping[str, Any]) -> list[LinkRecord] | None:
        """The commits and pull requests the development panel and the remote links name (see the module
        docstring); None when an endpoint the site has kept failing for this issue (its links stay)."""
        key, issue_id = str(issue.get("key") or ""), str(issue.get("id") or "")
        found: list[LinkRecord] = []
        dev_status = f"{self.base_url}/rest/dev-status/latest/issue"
        summary = (
            self._optional(f"{dev_status}/summary", {"issueId": issue_id}, "development panel", key)
            if issue_id
            else None
        )
        if isinstance(summary, _Unreadable):
            return None
        for application, data_type in detail_requests(summary) if issue_id else []:
            params = {"issueId": issue_id, "applicationType": application, "dataType": data_type}
            detail = self._optional(f"{dev_status}/detail", params, "development panel", key)
            if isinstance(detail, _Unreadable):
                return None
            found.extend(detail_links(detail))
        answer = self._optional(f"{self._api}/issue/{key}/remotelink", {}, "remote links", key)
        if isinstance(answer, _Unreadable):
            return None
        found.extend(remote_links(answer))
        return merge(found)

    def _optional(
        self, url: str, params: Mapping[str, str], what: str, key: str
    ) -> dict[str, Any] | list[Any] | _Unreadable | None:
        """An optional endpoint's JSON; None when the site does not serve it (told once, not asked again)."""
        if what in self._absent:
            return None
        label = f"GET {urlsplit(url).path}"
        target = f"{url}?{urlencode(params)}" if params else url
        try:
            data = self._policy.get(
                self._session, target, label=label, judge=_judge_optional, headers=self._headers(url)
            )
        except PolicyError as exc:
            self._notice(f"{key}: the {what} could not be read ({exc}); its stored links are kept")
            return _Unreadable()
        if isinstance(data, _Absent):
            self._absent.add(what)
            self._notice(
                f"This Jira site answered {data.status} to {label}: no {what} is read for this import "
                "(the issues are imported without it)"
            )
            return None
        return data if isinstance(data, dict | list) else None

    def _notice(self, text: str) -> None:
        if self._on_notice is not None:
            self._on_notice(text)

    def _headers(self, url: str) -> dict[str, str]:
        headers = {"Accept": "application/json"}
        if self._auth and (urlsplit(url).scheme, urlsplit(url).netloc) == self._origin:
            headers["Authorization"] = self._auth
        return headers

    def _pages(self, jql: str) -> Iterator[dict[str, Any]]:
        params: dict[str, str] = {"jql": jql, "maxResults": str(PAGE_SIZE), "fields": _FIELDS}
        if self.cloud:
            while True:
                data = self._get(f"{self._api}/search/jql", params)
                yield from _issues(data)
                token = data.get("nextPageToken")
                if data.get("isLast", True) or not token:
                    return
                params["nextPageToken"] = str(token)
        start = 0
        while True:
            data = self._get(f"{self._api}/search", {**params, "startAt": str(start)})
            page = _issues(data)
            yield from page
            start += len(page)
            total = data.get("total")
            if not page or not isinstance(total, int) or start >= total:
                return

    def _all_comments(self, issue: Mapping[str, Any]) -> list[dict[str, Any]] | None:
        embedded = _mapping(_mapping(issue.get("fields")).get("comment"))
        have = list(embedded.get("comments") or [])
        total = embedded.get("total")
        if not isinstance(total, int) or total <= len(have):
            return None
        comments: list[dict[str, Any]] = []
        while len(comments) < total:
            data = self._get(
                f"{self._api}/issue/{issue['key']}/comment",
                {"startAt": str(len(comments)), "maxResults": "100"},
            )
            page = [c for c in data.get("comments") or [] if isinstance(c, dict)]
            if not page:
                break
            comments.extend(page)
        return comments

    def _get(self, url: str, params: Mapping[str, str]) -> dict[str, Any]:
        label = f"GET {urlsplit(url).path}"
        try:
            data = self._policy.get(
                self._session, f"{url}?{urlencode(params)}", label=label, judge=lambda r: _judge(r, label),
                headers=self._headers(url),
            )  # fmt: skip
        except PolicyError as exc:
            raise JiraError(f"Jira stopped answering: {exc}", exc.status) from None
        if not isinstance(data, dict):
            raise JiraError(f"{label}: expected a JSON object")
        return data


def _judge(response: requests.Response, label: str) -> Any | Transient | RateLimited:
    status = response.status_code
    if status in (401, 403):
        raise TokenRejected(
            f"token rejected: Jira answered {status} to {label}; check JIRA_TOKEN (and JIRA_USER for Cloud)",
            status,
        )
    if status == 429:
        return RateLimited(60.0, "rate limited (429) without Retry-After")
    if status in (404, 410):
        raise NotFound(f"{label}: {status} Not Found", status)
    if status >= 400:
        try:
            messages = response.json().get("errorMessages") or []
        except (ValueError, AttributeError):
            messages = []
        raise JiraError(f"{label}: {status} {'; '.join(map(str, messages))[:300]}".rstrip(), status)
    try:
        return response.json()
    except ValueError:
        return Transient("the response is not valid JSON (truncated?)", invalid_body=True)


@dataclass(frozen=True, slots=True)
class _Absent:
    """An optional endpoint this site does not serve (no development panel app, remote links off)."""

    status: int


@dataclass(frozen=True, slots=True)
class _Unreadable:
    """An optional endpoint that kept failing for one issue."""


def _judge_optional(response: requests.Response) -> Any | _Absent | Transient | RateLimited:
    status = response.status_code
    if status == 429:
        return RateLimited(60.0, "rate limited (429) without Retry-After")
    if status in (401, 403, 404, 410):
        return _Absent(status)
    if status >= 400:
        raise PolicyError(f"GET {urlsplit(response.url).path}: answered {status}", status)
    try:
        return response.json()
    except ValueError:
        return Transient("the response is not valid JSON (truncated?)", invalid_body=True)


def _issues(data: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [issue for issue in data.get("issues") or [] if isinstance(issue, dict) and issue.get("key")]


# --- export files ---------------------------------------------------------------------------------------


def read_export(path: str, base_url: str = "") -> Iterator[ItemRecord]:
    """The issues of a Jira export file: JSON (REST shape) or XML (RSS). Raises :class:`ExportError`."""
    name = os.path.basename(path)  # errors name the file, never the server's upload folder
    with open(path, "rb") as handle:
        head = handle.read(512).lstrip()
    if head.startswith(b"<") or head.startswith(b"\xef\xbb\xbf<"):
        yield from _read_xml(path, name)
        return
    try:
        with open(path, encoding="utf-8-sig") as handle:
            data = JsonReader().loads(handle.read())
    except NonJsonNumber as exc:  # PostgreSQL would refuse it in the issue's record, half-way through
        raise ExportError(f"{name}: at {exc.path or 'the top'}: {exc}") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise ExportError(f"{name}: neither Jira XML nor JSON ({exc})") from None
    issues = data.get("issues") if isinstance(data, dict) else data
    if not isinstance(issues, list):
        raise ExportError(f"{name}: a JSON export holds a list of issues or an object with 'issues'")
    for n, issue in enumerate(issues, start=1):
        if not isinstance(issue, dict) or not issue.get("key"):
            raise ExportError(f"{name}: issue {n} has no 'key'")
        base = base_url or _origin_of(issue.get("self"))
        if not base:
            raise ExportError(
                f"{name}: issue {issue['key']} has no 'self' URL; give the Jira URL (--api-url)"
            )
        cloud = isinstance(_mapping(issue.get("fields")).get("description"), Mapping)
        yield issue_to_record(issue, base, cloud=cloud)


def _origin_of(url: object) -> str:
    parts = urlsplit(str(url or ""))
    return f"{parts.scheme}://{parts.netloc}" if parts.scheme in ("http", "https") and parts.netloc else ""


def _read_xml(path: str, name: str) -> Iterator[ItemRecord]:
    with open(path, "rb") as handle:
        if b"<!DOCTYPE" in handle.read(65536).upper().replace(b"<!doctype".upper(), b"<!DOCTYPE"):
            raise ExportError(f"{name}: the XML declares a DOCTYPE (entities are not read); export it again")
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as exc:
        raise ExportError(f"{name}: the XML cannot be read ({type(exc).__name__}: {exc})") from None
    for n, item in enumerate(root.iter("item"), start=1):
        key = (item.findtext("key") or "").strip()
        link = (item.findtext("link") or "").strip()
        if not key or not _origin_of(link):
            raise ExportError(f"{name}: item {n} lacks <key> or an http(s) <link>")
        body_format: BodyFormat = "html"
        comments = [
            CommentRecord(
                external_id=str(c.get("id", "")),
                author=str(c.get("author") or "unknown"),
                body=c.text or "",
                body_format=body_format,
                created_at=_rfc822(c.get("created")),
            )
            for c in item.iter("comment")
        ]
        labels = [(label.text or "").strip() for label in item.iter("label") if (label.text or "").strip()]
        yield ItemRecord(
            url=browse_url(link, key),
            source=SOURCE_JIRA,
            external_id=key,
            title=(item.findtext("summary") or item.findtext("title") or "").strip(),
            body=item.findtext("description") or "",
            body_format=body_format,
            created_at=_rfc822(item.findtext("created")),
            tags=labels,
            metadata={
                "key": key,
                "project": key.rsplit("-", 1)[0],
                "status": (item.findtext("status") or "").strip() or None,
                "resolution": (item.findtext("resolution") or "").strip() or None,
                "type": (item.findtext("type") or "").strip() or None,
                "issue_links": [
                    {"type": (link_type.findtext("name") or "").strip(), "key": (k.text or "").strip()}
                    for link_type in item.iter("issuelinktype")
                    for k in link_type.iter("issuekey")
                ],
            },
            raw={"xml_key": key},
            comments=comments,
        )


def _rfc822(value: str | None) -> Any:
    if not value:
        return None
    try:
        return parsedate_to_datetime(value.strip())
    except (TypeError, ValueError):
        return None
