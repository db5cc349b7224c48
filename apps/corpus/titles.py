"""Readable names for items that have no title yet, and the repository or site an item belongs to.

Pure module (no Django). A URL list or a replication package often gives only URLs (hydrate fetches the
text later); until then a page shows ``horovod/horovod#1981`` or ``stackoverflow 52198119`` rather than
the bare URL:

- GitHub issue or pull request: ``owner/repo#N``; GitLab issue: ``group/project#N``;
- Stack Exchange question: ``<site> <id>`` (``stackoverflow 52198119``, ``datascience 123``);
- Jira issue (``/browse/KEY-1``): ``KEY-1``;
- anything else: host and path, without scheme and trailing slash.

:func:`place` is the repository or site the grid shows and filters by: ``owner/repo`` on GitHub and
GitLab, the site name on Stack Exchange, the host otherwise.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from .records import github_issue_ref, site_name, stackexchange_question_ref

_GITLAB_ISSUE = re.compile(r"^/(?P<project>.+?)/-/(?:issues|merge_requests)/(?P<iid>\d+)/?$")
_JIRA_BROWSE = re.compile(r"^(?:/[^/]+)*/browse/(?P<key>[A-Z][A-Z0-9_]*-\d+)/?$")


def readable_title(url: str) -> str:
    """A short name for the item at ``url`` (see the module docstring); ``url`` itself if it is no URL."""
    github = github_issue_ref(url)
    if github is not None:
        return f"{github[0]}/{github[1]}#{github[2]}"
    question = stackexchange_question_ref(url)
    if question is not None:
        return f"{site_name(question[0])} {question[1]}"
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return url
    gitlab = _GITLAB_ISSUE.match(parts.path)
    if gitlab is not None:
        return f"{gitlab.group('project')}#{gitlab.group('iid')}"
    jira = _JIRA_BROWSE.match(parts.path)
    if jira is not None:
        return jira.group("key")
    return f"{parts.hostname}{parts.path}".rstrip("/")


def place(url: str) -> str:
    """The repository (``owner/repo``, ``group/project``) or site (``stackoverflow``, a host) of ``url``."""
    github = github_issue_ref(url)
    if github is not None:
        return f"{github[0]}/{github[1]}"
    question = stackexchange_question_ref(url)
    if question is not None:
        return site_name(question[0])
    parts = urlsplit(url.strip())
    gitlab = _GITLAB_ISSUE.match(parts.path)
    if gitlab is not None:
        return gitlab.group("project")
    return (parts.hostname or "").lower()


def place_prefixes(text: str) -> list[str]:
    """URL prefixes of the items of a place typed in the grid's filter (``horovod/horovod``,
    ``stackoverflow``, ``issues.apache.org``): canonical URLs start with one of them."""
    text = text.strip().strip("/").lower()
    if not text:
        return []
    if "/" in text:
        return [f"https://github.com/{text}/", f"https://gitlab.com/{text}/"]
    if "." in text:
        return [f"https://{text}/"]
    return [f"https://{text}.com/", f"https://{text}.stackexchange.com/"]
