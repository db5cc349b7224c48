"""Which source and which API each URL-only item is fetched from, for ``hydrate``. Pure: no Django.

A URL-only item (a line of a URL list, a replication package's URL column) is fetched from the source its
URL names: a GitHub issue (``github.com/o/r/issues/N``) from GitHub's API; a Stack Exchange question
(``/questions/ID``) from the Stack Exchange API, 100 ids per call per site; a GitLab issue
(``HOST/group/name/-/issues/N``) and a Jira issue (``HOST[/path]/browse/KEY-N``) from the API of an instance
the operator lists (``GITLAB_API_URLS``, ``JIRA_API_URLS``; the host must match) or the one the command
names (``--api-url``). A URL of no known source, or of an instance nobody listed, is reported, not fetched.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from .gitlab import issue_ref as gitlab_issue_ref
from .records import github_issue_ref, site_name, stackexchange_question_ref

GITHUB, STACKEXCHANGE, GITLAB, JIRA = "github", "stackexchange", "gitlab", "jira"
SOURCES = (GITHUB, STACKEXCHANGE, GITLAB, JIRA)
_JIRA_BROWSE = re.compile(r"/browse/(?P<key>[A-Za-z][A-Za-z0-9_]*-\d+)/?$")


def source_of(url: str) -> str | None:
    """The source a URL-only item is fetched from (one of :data:`SOURCES`), or None."""
    if github_issue_ref(url) is not None:
        return GITHUB
    if stackexchange_question_ref(url) is not None:
        return STACKEXCHANGE
    if gitlab_issue_ref(url) is not None:
        return GITLAB
    if jira_key(url) is not None:
        return JIRA
    return None


def jira_key(url: str) -> str | None:
    """``KEY-123`` of a Jira issue URL (``https://HOST[/path]/browse/KEY-123``), else None."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    match = _JIRA_BROWSE.search(parts.path)
    return match.group("key").upper() if match else None


@dataclass
class Plan:
    """The items to fetch, grouped by the API that serves them, in the study's order within a group.

    ``github``: item URLs. ``stackexchange``: per API site name, ``(question id, item URL)``. ``gitlab`` and
    ``jira``: per API root, item URLs. ``unreachable``: ``(url, why)`` for items that are not fetched.
    """

    github: list[str] = field(default_factory=list)
    stackexchange: dict[str, list[tuple[int, str]]] = field(default_factory=dict)
    gitlab: dict[str, list[str]] = field(default_factory=dict)
    jira: dict[str, list[str]] = field(default_factory=dict)
    unreachable: list[tuple[str, str]] = field(default_factory=list)

    @property
    def size(self) -> int:
        return (
            len(self.github)
            + sum(len(v) for v in self.stackexchange.values())
            + sum(len(v) for v in self.gitlab.values())
            + sum(len(v) for v in self.jira.values())
        )


def plan(
    urls: Iterable[str],
    *,
    source: str = "",
    limit: int | None = None,
    api_url: str = "",
    gitlab_sites: Sequence[str] = (),
    jira_sites: Sequence[str] = (),
) -> Plan:
    """Group ``urls`` (the study's URL-only items, in order) by the API that serves each.

    ``source`` keeps one source only (empty: all); ``limit`` keeps the first N fetchable items. ``api_url``
    (with ``source``) is the API root of that source for every item of it, whatever its host; otherwise a
    GitLab or Jira item is fetched from the listed site on its host (``gitlab_sites``: API roots such as
    ``https://gitlab.com/api/v4``; ``jira_sites``: site URLs such as ``https://issues.apache.org/jira``).
    """
    if source and source not in SOURCES:
        raise ValueError(f"unknown source {source!r} (known: {', '.join(SOURCES)})")
    if api_url and not source:
        raise ValueError("an API URL goes with one source (--source)")
    out = Plan()
    for url in urls:
        if limit is not None and out.size >= limit:
            break
        found = source_of(url)
        if found is None:
            if not source:
                out.unreachable.append((url, "not a GitHub, Stack Exchange, GitLab or Jira issue URL"))
            continue
        if source and found != source:
            continue
        if found == GITHUB:
            out.github.append(url)
        elif found == STACKEXCHANGE:
            ref = stackexchange_question_ref(url)
            assert ref is not None  # source_of said so
            out.stackexchange.setdefault(site_name(ref[0]), []).append((ref[1], url))
        else:
            sites = gitlab_sites if found == GITLAB else jira_sites
            root = api_url or _site_on_host(url, sites)
            if root is None:
                setting = "GITLAB_API_URLS" if found == GITLAB else "JIRA_API_URLS"
                host = urlsplit(url).hostname
                out.unreachable.append((url, f"{host} is not an instance listed in {setting} (or --api-url)"))
                continue
            (out.gitlab if found == GITLAB else out.jira).setdefault(root, []).append(url)
    return out


def _site_on_host(url: str, sites: Sequence[str]) -> str | None:
    host = (urlsplit(url).hostname or "").lower()
    return next((site for site in sites if (urlsplit(site).hostname or "").lower() == host), None)
