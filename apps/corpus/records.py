"""What an importer yields: plain records of mined items, and the URL rules that identify them.

Pure module (no Django). Every importer (files, GitHub, Stack Exchange, the Stack Overflow dump)
produces :class:`ItemRecord` objects; the corpus services turn them into ``Item`` rows. An item is
identified by its canonical URL (:func:`canonical_url`), so the same issue reached through an API
URL, a ``/pull/`` URL, a URL with a comment anchor or a tracking query lands on one row.

Conventions shared by every importer:

- ``source``: ``"github"``, ``"stackoverflow"``, ``"stackexchange"`` (another Stack Exchange site,
  named in ``metadata["site"]``) or ``"file"`` (a URL on no known platform).
- ``external_id``: ``"owner/repo#123"`` for GitHub, the question id (``"46519919"``) for Stack
  Overflow, ``"site:id"`` for other Stack Exchange sites, else empty (the URL identifies the item).
- ``created_at`` is timezone-aware UTC or ``None``; naive timestamps are read as UTC.
- ``raw`` holds what the source returned for the item (an API object, a CSV row), never a credential.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any, Literal
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from apps.core.timestamps import iso_utc

BodyFormat = Literal["markdown", "html", "text"]
BODY_FORMATS: tuple[BodyFormat, ...] = ("markdown", "html", "text")

SOURCE_GITHUB = "github"
SOURCE_STACKOVERFLOW = "stackoverflow"
SOURCE_STACKEXCHANGE = "stackexchange"
SOURCE_FILE = "file"
MAX_URL_LENGTH = 500  # Item.url's column width


@dataclass(slots=True)
class CommentRecord:
    """One comment on an issue, or one answer to a question (``is_answer=True``)."""

    external_id: str
    author: str
    body: str
    body_format: BodyFormat = "markdown"
    created_at: datetime | None = None
    is_answer: bool = False
    is_accepted: bool = False
    score: int | None = None


LinkKind = Literal["pull_request", "commit", "merge_request", "answer"]
LINK_KINDS: tuple[LinkKind, ...] = ("pull_request", "commit", "merge_request", "answer")
Provenance = Literal[
    "closed_by_commit", "cross_reference", "closing_keyword", "manual", "development_panel", "remote_link"
]
PROVENANCES: tuple[Provenance, ...] = (
    "closed_by_commit", "cross_reference", "closing_keyword", "manual", "development_panel", "remote_link"
)  # fmt: skip


@dataclass(slots=True)
class FileChange:
    """One file of a pull request or commit: its unified-diff ``patch`` (maybe cut, see ``truncated``)."""

    filename: str
    additions: int = 0
    deletions: int = 0
    patch: str = ""
    status: str = ""
    truncated: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "filename": self.filename,
            "additions": self.additions,
            "deletions": self.deletions,
            "patch": self.patch,
            "status": self.status,
            "truncated": self.truncated,
        }


@dataclass(slots=True)
class LinkRecord:
    """Fix evidence of an item: a pull request, commit or merge request that changed the code for it.

    ``provenance`` says how it was found (a closing commit, a cross-reference, a closing keyword such
    as "Fixes #12" in a pull request's body, or a person adding it by hand), ``found_at`` when the
    source says it happened. ``note`` explains what is missing (patches cut, a pull request gone).
    """

    kind: LinkKind
    url: str
    provenance: Provenance
    title: str = ""
    state: str = ""
    body: str = ""
    found_at: datetime | None = None
    files: list[FileChange] = field(default_factory=list)
    note: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class ItemRecord:
    """One mined item (issue or question) as an importer yields it, before it touches the database."""

    url: str
    source: str
    external_id: str
    title: str = ""
    body: str = ""
    body_format: BodyFormat = "markdown"
    created_at: datetime | None = None
    tags: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    raw: dict[str, Any] = field(default_factory=dict)
    comments: list[CommentRecord] = field(default_factory=list)
    # None: the importer did not look for links (``--no-links``), so the stored ones stay as they are.
    links: list[LinkRecord] | None = None

    @property
    def has_accepted_answer(self) -> bool:
        """True when the question has an accepted answer, whether or not the answers were fetched."""
        if self.metadata.get("accepted_answer_id") not in (None, ""):
            return True
        return any(comment.is_accepted for comment in self.comments)


# Query parameters that only say where a click came from: dropped so that two links to the same
# page compare equal. Everything else in a query is kept in its original order.
_TRACKING_PARAMS = frozenset(
    {"fbclid", "gclid", "dclid", "msclkid", "mc_cid", "mc_eid", "_ga", "ref", "ref_src", "ref_url", "igshid"}
)
_GITHUB_HOSTS = frozenset({"github.com", "www.github.com"})
_GITHUB_API_HOST = "api.github.com"
_STACKEXCHANGE_HOSTS = frozenset(
    {
        "stackoverflow.com",
        "superuser.com",
        "serverfault.com",
        "askubuntu.com",
        "mathoverflow.net",
        "stackapps.com",
    }
)
_GITHUB_ISSUE_PATH = re.compile(r"^/([^/]+)/([^/]+)/(?:issues|pull|pulls)/(\d+)(?:/.*)?$")
_GITHUB_API_ISSUE_PATH = re.compile(r"^(?:/api/v3)?/repos/([^/]+)/([^/]+)/(?:issues|pulls)/(\d+)/?$")
_GITHUB_COMMIT_PATH = re.compile(r"^/([^/]+)/([^/]+)/(?:pull/\d+/)?commits?/([0-9a-fA-F]{7,40})/?$")
_GITHUB_PULL_PATH = re.compile(r"^/([^/]+)/([^/]+)/pulls?/(\d+)(?:/.*)?$")
_SE_QUESTION_PATH = re.compile(r"^/(?:questions|q)/(\d+)(?:/.*)?$")


# A record's URL is split for its canonical form, its source and its external id, on each pass over a
# file: the few most recent are kept (the split is a pure function of the text).
@lru_cache(maxsize=256)
def _split_absolute(url: str) -> tuple[str, str, str, str, str]:
    text = url.strip()
    parts = urlsplit(text)
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"not an absolute http(s) URL: {url!r}")
    host = parts.hostname.lower()
    if host.startswith("www.") and _bare_host(host[4:]) in _STACKEXCHANGE_HOSTS:
        host = host[4:]
    try:
        port = parts.port
    except ValueError:
        raise ValueError(f"not an absolute http(s) URL: {url!r}") from None
    netloc = host if port is None or (scheme, port) in (("http", 80), ("https", 443)) else f"{host}:{port}"
    return scheme, netloc, parts.path, parts.query, parts.fragment


def _bare_host(host: str) -> str:
    return host.split(":", 1)[0]


def _is_stackexchange_host(host: str) -> bool:
    bare = _bare_host(host)
    return bare in _STACKEXCHANGE_HOSTS or bare.endswith(".stackexchange.com")


@lru_cache(maxsize=256)  # asked three times of each record's URL: canonical form, source, external id
def github_issue_ref(url: str) -> tuple[str, str, int] | None:
    """``(owner, repo, number)`` for a github.com issue/pull URL or an API issue URL, else ``None``.

    Owner and repository are lower-cased: GitHub resolves them case-insensitively, and one spelling
    is needed for identity.
    """
    try:
        _, netloc, path, _, _ = _split_absolute(url)
    except ValueError:
        return None
    host = _bare_host(netloc)
    if host in _GITHUB_HOSTS:
        match = _GITHUB_ISSUE_PATH.match(path)
    elif host == _GITHUB_API_HOST:
        match = _GITHUB_API_ISSUE_PATH.match(path)
    else:
        return None
    if match is None:
        return None
    return match.group(1).lower(), match.group(2).lower(), int(match.group(3))


def github_pull_ref(url: str) -> tuple[str, str, int] | None:
    """``(owner, repo, number)`` for a github.com pull request URL (``/pull/N``, sub-pages too), else None."""
    try:
        _, netloc, path, _, _ = _split_absolute(url)
    except ValueError:
        return None
    match = _GITHUB_PULL_PATH.match(path) if _bare_host(netloc) in _GITHUB_HOSTS else None
    if match is None or "/commits/" in path:
        return None
    return match.group(1).lower(), match.group(2).lower(), int(match.group(3))


def github_commit_ref(url: str) -> tuple[str, str, str] | None:
    """``(owner, repo, sha)`` for a github.com commit URL (``/commit/SHA``, ``/pull/N/commits/SHA``)."""
    try:
        _, netloc, path, _, _ = _split_absolute(url)
    except ValueError:
        return None
    match = _GITHUB_COMMIT_PATH.match(path) if _bare_host(netloc) in _GITHUB_HOSTS else None
    if match is None:
        return None
    return match.group(1).lower(), match.group(2).lower(), match.group(3).lower()


def pull_request_url(owner: str, repo: str, number: int) -> str:
    """The one spelling of a GitHub pull request's URL as a link (not as an item: see canonical_url)."""
    return f"https://github.com/{owner.lower()}/{repo.lower()}/pull/{number}"


def commit_url(owner: str, repo: str, sha: str) -> str:
    return f"https://github.com/{owner.lower()}/{repo.lower()}/commit/{sha.lower()}"


@lru_cache(maxsize=256)  # likewise
def stackexchange_question_ref(url: str) -> tuple[str, int] | None:
    """``(site host, question id)`` for a Stack Exchange question URL (``/questions/<id>/...`` or
    ``/q/<id>``), else ``None``. Answer links (``/a/<id>``) name an answer, not a question: ``None``."""
    try:
        _, netloc, path, _, _ = _split_absolute(url)
    except ValueError:
        return None
    if not _is_stackexchange_host(netloc):
        return None
    match = _SE_QUESTION_PATH.match(path)
    if match is None:
        return None
    return _bare_host(netloc), int(match.group(1))


def canonical_url(url: str) -> str:
    """The one spelling of ``url`` that identifies an item.

    - GitHub issues and pull requests (``github.com/o/r/issues/N``, ``/pull/N``, with comment
      anchors, sub-pages or queries, or the API's ``api.github.com/repos/o/r/issues/N``) become
      ``https://github.com/o/r/issues/N`` with owner and repo lower-cased. GitHub numbers issues
      and pull requests in one sequence and redirects ``/issues/N`` to ``/pull/N``, so both
      spellings name one item.
    - Stack Exchange questions (``/questions/<id>/<slug>``, ``/q/<id>/<user>``, an answer anchor,
      ``http`` or ``www.``) become ``https://<site>/questions/<id>``.
    - Any other URL: scheme and host lower-cased, default port, fragment, tracking parameters
      (``utm_*``, ``fbclid``, ``ref``...) and trailing slashes dropped; other query parameters kept.

    Raises ``ValueError`` naming the value when it is not an absolute http(s) URL.
    """
    scheme, netloc, path, query, _fragment = _split_absolute(url)
    github = github_issue_ref(url)
    if github is not None:
        owner, repo, number = github
        return f"https://github.com/{owner}/{repo}/issues/{number}"
    question = stackexchange_question_ref(url)
    if question is not None:
        site, question_id = question
        return f"https://{site}/questions/{question_id}"
    kept = [
        (key, value)
        for key, value in parse_qsl(query, keep_blank_values=True)
        if not key.lower().startswith("utm_") and key.lower() not in _TRACKING_PARAMS
    ]
    path = path.rstrip("/")
    return urlunsplit((scheme, netloc, path, urlencode(kept), ""))


def source_for_url(url: str) -> str:
    """The ``source`` an item at ``url`` comes from, judged by its host."""
    if github_issue_ref(url) is not None:
        return SOURCE_GITHUB
    question = stackexchange_question_ref(url)
    if question is not None:
        return SOURCE_STACKOVERFLOW if question[0] == "stackoverflow.com" else SOURCE_STACKEXCHANGE
    return SOURCE_FILE


def external_id_for_url(url: str) -> str:
    """The conventional ``external_id`` of the item at ``url`` (see the module docstring)."""
    github = github_issue_ref(url)
    if github is not None:
        return f"{github[0]}/{github[1]}#{github[2]}"
    question = stackexchange_question_ref(url)
    if question is not None:
        site, question_id = question
        return str(question_id) if site == "stackoverflow.com" else f"{site_name(site)}:{question_id}"
    return ""


def site_name(host: str) -> str:
    """The Stack Exchange API ``site`` parameter for a host: ``stackoverflow.com`` → ``stackoverflow``,
    ``datascience.stackexchange.com`` → ``datascience``."""
    host = _bare_host(host.lower())
    if host.endswith(".stackexchange.com"):
        return host.removesuffix(".stackexchange.com")
    return host.rsplit(".", 1)[0]


def parse_timestamp(value: str | int | float) -> datetime:
    """A timezone-aware UTC datetime from ISO 8601 text (``2014-01-08T01:48:28Z``,
    ``2008-07-31T21:42:52.667``, ``2020-01-02``) or Unix epoch seconds. Naive values are UTC.

    Raises ``ValueError`` naming the value when it is neither.
    """
    if isinstance(value, bool):
        raise ValueError(f"not a timestamp: {value!r}")
    if isinstance(value, int | float):
        return datetime.fromtimestamp(value, tz=UTC)
    text = value.strip()
    if re.fullmatch(r"\d{9,11}", text):
        return datetime.fromtimestamp(int(text), tz=UTC)
    try:
        return iso_utc(text)
    except ValueError:
        raise ValueError(f"not an ISO 8601 date or time: {value!r}") from None


def split_tags(value: str) -> list[str]:
    """Tags from one text cell: ``a;b;c``, or the Stack Overflow dump's ``<a><b>`` and ``|a|b|``.

    Semicolons separate tags because tag and label names may hold commas and spaces (GitHub's
    ``module: ddp``); surrounding whitespace is trimmed, empty parts and repeats dropped, order kept.
    """
    text = value.strip()
    if not text:
        return []
    if text.startswith("<") and text.endswith(">"):
        parts = text[1:-1].split("><")
    elif text.startswith("|") and text.endswith("|") and len(text) > 1:
        parts = text[1:-1].split("|")
    else:
        parts = text.split(";")
    tags: list[str] = []
    for part in parts:
        tag = part.strip()
        if tag and tag not in tags:
            tags.append(tag)
    return tags
