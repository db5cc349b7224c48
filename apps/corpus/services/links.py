"""Fix evidence stored on items: the links an import found, and the ones a lead adds or removes by hand.

An import writes an item's found links with the item (:func:`store_links`, called by the upsert for
every new or changed record whose importer looked for links). A lead adds a pull request or commit by
its URL (:func:`add_manual_link`, provenance ``manual``; its title, state and diff are read from
GitHub when the importer can reach it) or removes any link (:func:`remove_link`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from urllib.parse import urlsplit

from django.db import models, transaction
from django.utils import timezone

from apps.accounts.models import User

from ..github import GitHubClient, GitHubError
from ..models import Item, ItemComment, ItemLink, LinkKind, LinkProvenance, Source
from ..records import LinkRecord, commit_url, github_commit_ref, github_pull_ref, pull_request_url
from ..rendering import render_diff, render_markdown, render_text

_URL_MAX = ItemLink._meta.get_field("url").max_length or 500
_TITLE_MAX = ItemLink._meta.get_field("title").max_length or 500
_STATE_MAX = ItemLink._meta.get_field("state").max_length or 32
_NOTE_MAX = ItemLink._meta.get_field("note").max_length or 500

_LINK_FIELDS = ["kind", "title", "state", "body", "found_at", "files", "note", "metadata", "updated_at"]


def store_links(linked: dict[int, list[LinkRecord]], now: datetime) -> None:
    """Make each item's found links exactly `linked[item_id]`, one row per URL, in three statements.

    Found links that are no longer found are deleted; a link a person added by hand (`manual`) is never
    deleted by an import, and keeps its provenance when an import finds the same URL (its diff is
    refreshed). A link whose URL is not http(s) is dropped: it becomes an `href`.
    """
    existing = ItemLink.objects.filter(item_id__in=list(linked)).values_list("item_id", "url", "provenance")
    manual = {(item_id, url) for item_id, url, provenance in existing if provenance == LinkProvenance.MANUAL}
    stale = [
        (item_id, url)
        for item_id, url, provenance in existing
        if provenance != LinkProvenance.MANUAL and url not in {link.url for link in linked[item_id]}
    ]
    if stale:
        query = models.Q()
        for item_id, url in stale:
            query |= models.Q(item_id=item_id, url=url)
        ItemLink.objects.filter(query).delete()
    rows = {
        (item_id, link.url): _link_row(item_id, link, now)
        for item_id, links in linked.items()
        for link in links
        if _is_web_url(link.url)
    }
    for keep_provenance in (False, True):
        group = [row for key, row in rows.items() if (key in manual) is keep_provenance]
        if group:
            fields = _LINK_FIELDS if keep_provenance else [*_LINK_FIELDS, "provenance"]
            ItemLink.objects.bulk_create(
                group, update_conflicts=True, unique_fields=["item", "url"], update_fields=fields
            )


def _is_web_url(url: str) -> bool:
    """Only http(s) URLs are stored: a link's URL becomes an `href` on the Fix pane."""
    parts = urlsplit(url)
    return parts.scheme in ("http", "https") and bool(parts.netloc) and len(url) <= _URL_MAX


def _link_row(item_id: int, link: LinkRecord, now: datetime) -> ItemLink:
    return ItemLink(
        item_id=item_id,
        kind=link.kind,
        url=link.url[:_URL_MAX],
        title=link.title[:_TITLE_MAX],
        state=link.state[:_STATE_MAX],
        body=link.body,
        provenance=link.provenance,
        found_at=link.found_at,
        files=[change.to_json() for change in link.files],
        note=link.note[:_NOTE_MAX],
        metadata=link.metadata,
        created_at=now,
        updated_at=now,
    )


# --- what the Fix pane and the API show -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FixFile:
    filename: str
    additions: int
    deletions: int
    patch: str
    truncated: bool
    status: str

    @property
    def diff_html(self) -> str:
        """The patch highlighted and sanitized (rendered when a page asks, never stored)."""
        return render_diff(self.patch)


@dataclass(frozen=True, slots=True)
class FixEvidence:
    """One linked pull request, commit or merge request, or a question's accepted answer."""

    kind: str
    url: str
    title: str
    state: str
    provenance: str
    found_at: datetime | None
    note: str
    files: list[FixFile]
    body_html: str = ""
    link_id: int | None = None  # None for an accepted answer: it is a comment, not a stored link

    @property
    def additions(self) -> int:
        return sum(f.additions for f in self.files)

    @property
    def deletions(self) -> int:
        return sum(f.deletions for f in self.files)

    @property
    def kind_label(self) -> str:
        return str(dict(LinkKind.choices).get(self.kind, self.kind))

    @property
    def provenance_label(self) -> str:
        return ACCEPTED_ANSWER_LABEL if self.provenance == ACCEPTED_ANSWER else _PROVENANCE[self.provenance]


ACCEPTED_ANSWER = "accepted_answer"
ACCEPTED_ANSWER_LABEL = "Accepted by the asker"
_PROVENANCE = dict(LinkProvenance.choices)


def fix_evidence(item: Item, comments: Iterable[ItemComment] | None = None) -> list[FixEvidence]:
    """The item's fix evidence in the order it happened; a Stack Exchange question's accepted answer.

    Uses `item.links` and `item.comments` as prefetched when they are (the API prefetches both);
    `comments`, when given, are the item's comments a page has already read.
    """
    evidence = [_from_link(link) for link in item.links.all()]
    if item.source in (Source.STACKOVERFLOW, Source.STACKEXCHANGE):
        thread = item.comments.all() if comments is None else comments
        accepted = [comment for comment in thread if comment.is_accepted]
        evidence.extend(_accepted_answer(item, comment) for comment in accepted)
    return evidence


def _from_link(link: ItemLink) -> FixEvidence:
    files = [
        FixFile(
            filename=str(f.get("filename") or ""),
            additions=int(f.get("additions") or 0),
            deletions=int(f.get("deletions") or 0),
            patch=str(f.get("patch") or ""),
            truncated=bool(f.get("truncated")),
            status=str(f.get("status") or ""),
        )
        for f in link.files
        if isinstance(f, dict)
    ]
    body_html = render_text(link.body) if link.kind == LinkKind.COMMIT else render_markdown(link.body)
    return FixEvidence(
        kind=link.kind,
        url=link.url,
        title=link.title,
        state=link.state,
        provenance=link.provenance,
        found_at=link.found_at,
        note=link.note,
        files=files,
        body_html=body_html if link.body else "",
        link_id=link.pk,
    )


def _accepted_answer(item: Item, comment: ItemComment) -> FixEvidence:
    host = urlsplit(item.url).netloc or "stackoverflow.com"
    url = f"https://{host}/a/{comment.external_id}" if comment.external_id else item.url
    return FixEvidence(
        kind=LinkKind.ANSWER,
        url=url,
        title=f"Accepted answer by {comment.author or 'unknown'}",
        state="accepted",
        provenance=ACCEPTED_ANSWER,
        found_at=comment.created_at,
        note="",
        files=[],
        body_html=comment.body_html,
    )


# --- a lead adds or removes a link ------------------------------------------------------------------


class LinkError(ValueError):
    """A link that cannot be added or removed; the message says why, in the lead's terms."""


def add_manual_link(item: Item, url: str, user: User | None, read: Callable[[str], LinkRecord]) -> ItemLink:
    """Add the pull request or commit at `url` to the item's fix evidence, provenance `manual`.

    `read` fetches it (title, state, files; `GitHubClient.link_for_url`) and raises ValueError for a URL
    it cannot read. A URL already linked becomes manual (an import will not remove it any more).
    Raises LinkError naming the problem.
    """
    url = url.strip()
    if not url:
        raise LinkError("Paste the URL of a GitHub pull request or commit.")
    try:
        record = read(url)
    except ValueError as exc:
        raise LinkError(str(exc)) from None
    record.provenance = "manual"
    now = timezone.now()
    with transaction.atomic():
        row = _link_row(item.pk, record, now)
        row.added_by = user
        link, _created = ItemLink.objects.update_or_create(
            item=item,
            url=row.url,
            defaults={f: getattr(row, f) for f in [*_LINK_FIELDS, "provenance", "added_by"]},
            create_defaults={
                f: getattr(row, f) for f in [*_LINK_FIELDS, "provenance", "added_by", "created_at"]
            },
        )
    return link


def remove_link(item: Item, link_id: int) -> None:
    """Remove one link of the item (found or manual). A re-import finds a found one again."""
    deleted, _ = ItemLink.objects.filter(item=item, pk=link_id).delete()
    if not deleted:
        raise LinkError("That link is not on this item any more (someone removed it already?).")


def read_github_link(url: str, environ: Mapping[str, str] | None = None) -> LinkRecord:
    """Read one pull request or commit from the GitHub API, with the worker's `GITHUB_TOKEN`.

    A URL that is not a GitHub pull request or commit raises ValueError; an API that cannot be read
    (token rejected, rate limited, down) gives the link without its diff and a note saying why.
    """
    env = os.environ if environ is None else environ
    client = GitHubClient(token=env.get("GITHUB_TOKEN") or None, max_retries=2, max_wait=30.0)
    try:
        return client.link_for_url(url)
    except GitHubError as exc:
        pull, commit = github_pull_ref(url), github_commit_ref(url)
        if pull is None and commit is None:
            raise
        note = f"Not read from GitHub: {exc}"
        if pull is not None:
            return LinkRecord(
                kind="pull_request", url=pull_request_url(*pull), provenance="manual", note=note
            )
        assert commit is not None
        return LinkRecord(kind="commit", url=commit_url(*commit), provenance="manual", note=note)
