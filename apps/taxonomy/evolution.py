"""Codebook evolution: what changed between two versions, and which labels a change may have made wrong.
Pure: no Django.

`version_diff` names every difference between two versions in the terms of a paper: *added*, *renamed*,
*moved*, *merged*, *split*, *retired*, *redefined*. The snapshot diff (`codebook_diff.diff_codebooks`)
sees a merge or a split only as a category gone, so the change log between the two versions says which
of the gone categories were merged (into what) or split (into which parts).

`rereview_worklist` lists the items whose labels were made on a version after which one of their
categories was split, merged, redefined or retired (docs/paper.md, "Codebook evolution").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from .codebook_diff import diff_codebooks
from .codebook_spec import CodebookSpec

WORDS = {
    "add": "added",
    "rename": "renamed",
    "move": "moved",
    "edit": "redefined",
    "retire": "retired",
    "add_dimension": "added",
    "edit_dimension": "redefined",
    "retire_dimension": "retired",
}
REVIEW_KINDS = frozenset({"split", "merge", "edit", "retire"})
"""Changes after which a label made earlier may no longer be right."""


@dataclass(frozen=True)
class LoggedChange:
    """One row of the codebook's change log, as plain data (`after` as the log stores it)."""

    version: int
    kind: str
    dimension: str
    category: str
    after: Mapping[str, object]


@dataclass(frozen=True)
class VersionChange:
    kind: str
    """added, renamed, moved, merged, split, retired or redefined."""
    dimension: str
    category: str | None
    detail: str


def version_diff(
    old: CodebookSpec, new: CodebookSpec, log: Iterable[LoggedChange] = ()
) -> list[VersionChange]:
    """The changes from `old` to `new` (`log`: the change log of the versions after `old` up to `new`)."""
    merged: dict[tuple[str, str], str] = {}
    split: dict[tuple[str, str], list[str]] = {}
    for entry in log:
        if entry.kind == "merge":
            merged[entry.dimension, entry.category] = str(entry.after.get("merged_into", ""))
        elif entry.kind == "split":
            parts = entry.after.get("parts", [])
            split[entry.dimension, entry.category] = (
                [str(p) for p in parts] if isinstance(parts, list) else []
            )
    out = []
    for change in diff_codebooks(old, new):
        if change.kind == "reorder":
            continue  # order among siblings is presentation, not meaning
        key = change.category
        detail = ""
        kind = WORDS.get(change.kind, change.kind)
        if change.kind == "retire" and key is not None and (change.dimension, key) in merged:
            kind, detail = "merged", f"into {merged[change.dimension, key]}"
        elif change.kind == "retire" and key is not None and (change.dimension, key) in split:
            kind, detail = "split", "into " + ", ".join(split[change.dimension, key])
        elif change.kind == "rename":
            detail = f"{change.before.get('name')} → {change.after.get('name')}"
        elif change.kind == "move":
            detail = f"under {change.after.get('parent') or 'the top level'}"
        elif change.kind == "edit":
            detail = ", ".join(sorted(change.after))
        out.append(VersionChange(kind, change.dimension, key, detail))
    return out


@dataclass(frozen=True)
class Label:
    """A submitted label: the item, who, the category it chose, the codebook version it was made on."""

    item: str
    annotator: str
    dimension: str
    category: str
    version: int


@dataclass(frozen=True)
class WorkItem:
    item: str
    reasons: tuple[str, ...]
    """E.g. ``alice labelled hang on v2; it was split at v3``."""
    outdated: tuple[tuple[str, str], ...] = ()
    """(annotator, what changed under their label), e.g. ``("alice", "hang, chosen on v2, was split at
    v3")``: whose labels a lead may send back, and what each of them is told (their own label only)."""


def rereview_worklist(
    labels: Iterable[Label],
    log: Sequence[LoggedChange],
    reviewed: Mapping[str, int] | None = None,
    names: Mapping[tuple[str, str], str] | None = None,
) -> list[WorkItem]:
    """Items with a label made on a version after which its category was split, merged, redefined or
    retired; an item re-reviewed (``reviewed[item]`` = the codebook version of that re-review) leaves the
    list until a later such change. Items in first-seen order. ``names`` ((dimension, key) → the category's
    name) words what an annotator is told (`WorkItem.outdated`); the lead's reasons keep the keys."""
    reviewed = reviewed or {}
    changes: dict[tuple[str, str], list[LoggedChange]] = {}
    for entry in log:
        if entry.kind in REVIEW_KINDS:
            changes.setdefault((entry.dimension, entry.category), []).append(entry)
    reasons: dict[str, list[str]] = {}
    outdated: dict[str, list[tuple[str, str]]] = {}
    for label in labels:
        for entry in changes.get((label.dimension, label.category), ()):
            if entry.version > label.version and entry.version > reviewed.get(label.item, 0):
                word = {"edit": "redefined", "merge": "merged", "split": "split", "retire": "retired"}[
                    entry.kind
                ]
                reason = (
                    f"{label.annotator} labelled {label.category} on v{label.version}; "
                    f"it was {word} at v{entry.version}"
                )
                reasons.setdefault(label.item, [])
                if reason not in reasons[label.item]:
                    reasons[label.item].append(reason)
                chosen = (names or {}).get((label.dimension, label.category), label.category)
                note = (
                    label.annotator,
                    f"{chosen}, chosen on v{label.version}, was {word} at v{entry.version}",
                )
                if note not in outdated.setdefault(label.item, []):
                    outdated[label.item].append(note)
    return [WorkItem(item, tuple(r), tuple(outdated[item])) for item, r in reasons.items()]


def labels_per_version(versions: Iterable[int]) -> dict[int, int]:
    """How many labels were made on each codebook version (sorted by version)."""
    counts: dict[int, int] = {}
    for version in versions:
        counts[version] = counts.get(version, 0) + 1
    return dict(sorted(counts.items()))
