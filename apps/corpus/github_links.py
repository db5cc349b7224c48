"""Fix evidence of a GitHub issue: what its timeline says fixed it, as :class:`LinkRecord` objects.

Pure module (no Django). :func:`timeline_candidates` reads the events of
``GET /repos/{o}/{r}/issues/{n}/timeline``:

- a ``closed`` event with a ``commit_id``: the commit that closed the issue (``closed_by_commit``);
- a ``referenced`` event with a ``commit_id``: a commit whose message names the issue
  (``cross_reference``; ``closing_keyword`` when the message says "Fixes #12" and the like);
- a ``cross-referenced`` event whose source is a pull request: that pull request
  (``cross_reference``; ``closing_keyword`` when its body closes the issue).

One URL is one link: a second event for the same pull request or commit keeps the stronger
provenance (closing commit > closing keyword > cross-reference) and the earlier time.

:func:`file_changes` turns the ``files`` array of a pull request or commit into :class:`FileChange`
objects, cutting a patch longer than :data:`MAX_PATCH_CHARS` at a line end (``truncated``) and keeping
at most :data:`MAX_LINK_FILES` files; :func:`truncation_note` says what was cut, in the reader's terms.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from .records import (
    FileChange,
    LinkKind,
    Provenance,
    commit_url,
    github_commit_ref,
    parse_timestamp,
    pull_request_url,
)

MAX_PATCH_CHARS = 64_000  # per file: a diff longer than this is cut at a line end
MAX_LINK_FILES = 300  # per pull request or commit (GitHub itself lists at most 3,000)
_STRENGTH: dict[Provenance, int] = {
    "closed_by_commit": 3,
    "closing_keyword": 2,
    "cross_reference": 1,
    "manual": 4,
}
_KEYWORD = r"(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?)"
_API_REPO_PATH = re.compile(r"/repos/([^/]+)/([^/]+)/(?:commits|git/commits)/([0-9a-fA-F]{7,40})")


@dataclass(slots=True)
class Candidate:
    """A pull request or commit the timeline names, before its files are read."""

    kind: LinkKind
    owner: str
    repo: str
    ref: str  # the pull request's number, or the commit's sha
    provenance: Provenance
    found_at: datetime | None
    title: str = ""
    state: str = ""
    body: str = ""
    merged: bool | None = None

    @property
    def url(self) -> str:
        if self.kind == "pull_request":
            return pull_request_url(self.owner, self.repo, int(self.ref))
        return commit_url(self.owner, self.repo, self.ref)


def closes_issue(text: str, owner: str, repo: str, number: int) -> bool:
    """True when ``text`` says it closes the issue: "Fixes #12", "closes owner/repo#12", "resolves URL"."""
    refs = (
        rf"#{number}",
        rf"{re.escape(owner)}/{re.escape(repo)}#{number}",
        rf"https?://github\.com/{re.escape(owner)}/{re.escape(repo)}/issues/{number}",
    )
    pattern = rf"\b{_KEYWORD}:?\s+(?:{'|'.join(refs)})(?!\d)"
    return re.search(pattern, text, flags=re.IGNORECASE) is not None


def timeline_candidates(
    events: Iterable[Mapping[str, Any]], owner: str, repo: str, number: int
) -> list[Candidate]:
    """The pull requests and commits the timeline events link to the issue, one per URL, in event order."""
    found: dict[str, Candidate] = {}
    for event in events:
        candidate = _candidate(event, owner, repo, number)
        if candidate is None:
            continue
        known = found.get(candidate.url)
        if known is None:
            found[candidate.url] = candidate
        elif _STRENGTH[candidate.provenance] > _STRENGTH[known.provenance]:
            candidate.found_at = _earlier(known.found_at, candidate.found_at)
            found[candidate.url] = candidate
    return list(found.values())


def _candidate(event: Mapping[str, Any], owner: str, repo: str, number: int) -> Candidate | None:
    kind = event.get("event")
    when = _time(event.get("created_at"))
    if kind in ("closed", "referenced") and isinstance(event.get("commit_id"), str) and event["commit_id"]:
        sha = str(event["commit_id"]).lower()
        commit_owner, commit_repo = _commit_repo(event, owner, repo)
        provenance: Provenance = "closed_by_commit" if kind == "closed" else "cross_reference"
        return Candidate("commit", commit_owner, commit_repo, sha, provenance, when)
    if kind != "cross-referenced":
        return None
    source = event.get("source")
    issue = source.get("issue") if isinstance(source, Mapping) else None
    if not isinstance(issue, Mapping) or not isinstance(issue.get("pull_request"), Mapping):
        return None
    where = _pull_repo(issue)
    if where is None or not isinstance(issue.get("number"), int):
        return None
    body = str(issue.get("body") or "")
    same_repo = where == (owner, repo)
    closing = (closes_issue if same_repo else _closes_elsewhere)(body, owner, repo, number)
    merged_at = issue["pull_request"].get("merged_at")
    return Candidate(
        "pull_request",
        where[0],
        where[1],
        str(issue["number"]),
        "closing_keyword" if closing else "cross_reference",
        when,
        title=str(issue.get("title") or ""),
        state="merged" if merged_at else str(issue.get("state") or ""),
        body=body,
        merged=bool(merged_at) if "merged_at" in issue["pull_request"] else None,
    )


def _closes_elsewhere(body: str, owner: str, repo: str, number: int) -> bool:
    """A pull request in another repository closes the issue only by naming it in full."""
    full = rf"\b{_KEYWORD}:?\s+(?:{re.escape(owner)}/{re.escape(repo)}#{number}(?!\d)"
    url = rf"|https?://github\.com/{re.escape(owner)}/{re.escape(repo)}/issues/{number}(?!\d))"
    return re.search(full + url, body, flags=re.IGNORECASE) is not None


def _pull_repo(issue: Mapping[str, Any]) -> tuple[str, str] | None:
    repository = issue.get("repository")
    if isinstance(repository, Mapping) and isinstance(repository.get("full_name"), str):
        owner, _, name = str(repository["full_name"]).partition("/")
        if owner and name:
            return owner.lower(), name.lower()
    parts = str(issue.get("html_url") or "").split("/")
    if len(parts) >= 7 and parts[2].endswith("github.com"):
        return parts[3].lower(), parts[4].lower()
    return None


def _commit_repo(event: Mapping[str, Any], owner: str, repo: str) -> tuple[str, str]:
    """The repository of an event's commit: the one its ``commit_url`` names (a fork), else the issue's."""
    match = _API_REPO_PATH.search(str(event.get("commit_url") or ""))
    if match is not None:
        return match.group(1).lower(), match.group(2).lower()
    ref = github_commit_ref(str(event.get("commit_url") or ""))
    return (ref[0], ref[1]) if ref is not None else (owner, repo)


def file_changes(files: Iterable[Mapping[str, Any]]) -> tuple[list[FileChange], int]:
    """The files of a pull request or commit as :class:`FileChange` objects; and how many were left out."""
    changes: list[FileChange] = []
    left_out = 0
    for entry in files:
        if not isinstance(entry, Mapping) or not isinstance(entry.get("filename"), str):
            continue
        if len(changes) >= MAX_LINK_FILES:
            left_out += 1
            continue
        patch = entry.get("patch")
        text, truncated = cut_patch(patch if isinstance(patch, str) else "")
        changes.append(
            FileChange(
                filename=str(entry["filename"]),
                additions=_count(entry.get("additions")),
                deletions=_count(entry.get("deletions")),
                patch=text,
                status=str(entry.get("status") or ""),
                truncated=truncated,
            )
        )
    return changes, left_out


def cut_patch(patch: str, limit: int = MAX_PATCH_CHARS) -> tuple[str, bool]:
    """``patch`` cut to at most ``limit`` characters at a line end; and whether anything was cut."""
    if len(patch) <= limit:
        return patch, False
    end = patch.rfind("\n", 0, limit)
    return patch[: end if end > 0 else limit], True


def truncation_note(files: list[FileChange], left_out: int) -> str:
    """What the reader does not see of a change set, or ``""``."""
    parts = []
    cut = [change.filename for change in files if change.truncated]
    if cut:
        parts.append(
            f"the diff of {len(cut)} file(s) is cut at {MAX_PATCH_CHARS:,} characters ({', '.join(cut[:3])}"
            + (", …" if len(cut) > 3 else "")
            + ")"
        )
    if left_out:
        parts.append(f"{left_out} more file(s) not shown (at most {MAX_LINK_FILES} per change)")
    return "; ".join(parts)


def commit_title(message: str) -> str:
    return message.strip().splitlines()[0][:500] if message.strip() else ""


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _time(value: object) -> datetime | None:
    if isinstance(value, str) and value:
        try:
            return parse_timestamp(value)
        except ValueError:
            return None
    return None


def _earlier(a: datetime | None, b: datetime | None) -> datetime | None:
    if a is None or b is None:
        return a or b
    return min(a, b)
