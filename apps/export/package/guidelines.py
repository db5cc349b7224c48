"""The study's guidelines in the package: every published version (introduction, the codebook version it
was written against, the note, who published it and when) and who acknowledged reading it, in
``study.json``'s ``guidelines`` (`guidelines_data`). Packages built before guidelines have none. Checked and
written back by `restore_guidelines`."""

from __future__ import annotations

from typing import Any

from apps.accounts.models import Study
from apps.taxonomy.models import GuidelinesAcknowledgement, GuidelinesVersion

from ..rows import iso


def guidelines_data(study: Study) -> list[dict[str, Any]]:
    """The published versions, oldest first, each with its acknowledgements in the order they were made."""
    read: dict[int, list[dict[str, Any]]] = {}
    for version_id, username, at in (
        GuidelinesAcknowledgement.objects.filter(version__study=study)
        .order_by("version_id", "acknowledged_at", "user__username")
        .values_list("version_id", "user__username", "acknowledged_at")
    ):
        read.setdefault(version_id, []).append({"user": username, "at": iso(at)})
    return [
        {
            "number": number,
            "introduction": introduction,
            "codebook_version": codebook_version,
            "note": note,
            "published_at": iso(published_at),
            "published_by": published_by or None,
            "acknowledged": read.get(pk, []),
        }
        for pk, number, introduction, codebook_version, note, published_at, published_by in (
            GuidelinesVersion.objects.filter(study=study)
            .order_by("number")
            .values_list(
                "pk",
                "number",
                "introduction",
                "codebook_version",
                "note",
                "published_at",
                "published_by__username",
            )
        )
    ]
