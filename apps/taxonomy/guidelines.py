"""A study's guidelines: published versions, what each shows, who has acknowledged which, and who must read
them before labelling (docs/codebook.md, "Guidelines"). The one writer of `GuidelinesVersion` and
`GuidelinesAcknowledgement`.

A version is the lead's introduction (Markdown; the interfaces render it through the sanitizer) plus the
codebook as it was at `codebook_version`, read from that version's `CodebookVersion` snapshot, so an old
version shows the definitions its readers saw. Publishing never edits a version: it adds the next one.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import Max

from apps.accounts.models import Role, Study, User

from .codebook_diff import diff_codebooks
from .codebook_spec import CodebookError, codebook_from_data
from .models import Codebook, CodebookVersion, GuidelinesAcknowledgement, GuidelinesVersion

MAX_INTRODUCTION = 100_000


class GuidelinesError(ValueError):
    """Bad input for the guidelines; the message says what."""


def current(study: Study) -> GuidelinesVersion | None:
    """The newest published version, or None when the study has none."""
    return GuidelinesVersion.objects.for_study(study).first()


def publish(study: Study, introduction: str, *, actor: User | None, note: str = "") -> GuidelinesVersion:
    """Publish the next version: `introduction` against the codebook's current version. Numbers count from
    1 without gaps (the study's row is locked while the number is taken). Annotators of a study that
    requires the guidelines must acknowledge the new version before they label again."""
    text = introduction.strip()
    if len(text) > MAX_INTRODUCTION:
        raise GuidelinesError(f"The introduction is {len(text)} characters long; at most {MAX_INTRODUCTION}.")
    with transaction.atomic():
        Study.objects.select_for_update().filter(pk=study.pk).first()
        last = GuidelinesVersion.objects.filter(study=study).aggregate(n=Max("number"))["n"] or 0
        book_version = Codebook.objects.filter(study=study).values_list("version", flat=True).first() or 0
        return GuidelinesVersion.objects.create(
            study=study,
            number=last + 1,
            introduction=text,
            codebook_version=book_version,
            note=note.strip()[:300],
            published_by=actor,
        )


def acknowledge(version: GuidelinesVersion, user: User) -> GuidelinesAcknowledgement:
    """Record that `user` has read `version` (once: a second call returns the first record)."""
    found, _ = GuidelinesAcknowledgement.objects.get_or_create(version=version, user=user)
    return found


def acknowledged(version: GuidelinesVersion, user: User) -> bool:
    return GuidelinesAcknowledgement.objects.filter(version=version, user=user).exists()


def to_read(study: Study, user: User, role: str) -> GuidelinesVersion | None:
    """The version `user` must acknowledge before labelling in `study`, or None. Only when the study
    requires it (`Study.require_guidelines`, no query otherwise), only for annotators (leads and owners
    write the guidelines), and only once a version is published."""
    if not study.require_guidelines or role != Role.ANNOTATOR:
        return None
    version = current(study)
    if version is None or acknowledged(version, user):
        return None
    return version


def refusal(study: Study, version: GuidelinesVersion) -> str:
    """What an annotator who has not acknowledged `version` is told."""
    return (
        f"Read the guidelines of study {study.slug} (version {version.number}) and acknowledge them before "
        "you label: they are on the study's Guidelines page."
    )


# --- what a version shows ---------------------------------------------------------------------------


def codebook_data(version: GuidelinesVersion) -> dict[str, Any]:
    """The codebook file data (docs/design.md §5) at the version's codebook version; empty before any
    codebook was loaded."""
    snapshot = (
        CodebookVersion.objects.filter(codebook__study_id=version.study_id, number=version.codebook_version)
        .values_list("snapshot", flat=True)
        .first()
    )
    return snapshot if isinstance(snapshot, dict) else {"dimensions": []}


def live_codebook_data(study: Study) -> dict[str, Any]:
    """The codebook as it is now (its newest snapshot), for the preview of the next version."""
    snapshot = (
        CodebookVersion.objects.filter(codebook__study=study)
        .order_by("-number")
        .values_list("snapshot", flat=True)
        .first()
    )
    return snapshot if isinstance(snapshot, dict) else {"dimensions": []}


@dataclass(frozen=True)
class VersionDiff:
    """What changed from one version to the next: the introduction as a unified diff, and the codebook's
    changes between the two codebook versions, one line each."""

    introduction_patch: str
    codebook_changes: list[str]


def diff(old: GuidelinesVersion, new: GuidelinesVersion) -> VersionDiff:
    patch = "".join(
        difflib.unified_diff(
            old.introduction.splitlines(keepends=True),
            new.introduction.splitlines(keepends=True),
            fromfile=f"version {old.number}",
            tofile=f"version {new.number}",
        )
    )
    try:
        changes = diff_codebooks(
            codebook_from_data(codebook_data(old)), codebook_from_data(codebook_data(new))
        )
        lines = [change.describe() for change in changes]
    except CodebookError:
        lines = []  # a study without a codebook at one of the two versions: nothing to compare
    return VersionDiff(introduction_patch=patch, codebook_changes=lines)
