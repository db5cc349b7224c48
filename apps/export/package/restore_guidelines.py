"""Restoring study.json's ``guidelines`` (`guidelines.guidelines_data`): `check_guidelines` names every
problem by its place in the file; `write_guidelines` writes the versions and their acknowledgements inside
the restore's transaction. Absent in packages built before guidelines: the restored study has none."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apps.accounts.models import Study, User
from apps.core.bulk import insert_rows
from apps.taxonomy.models import GuidelinesAcknowledgement, GuidelinesVersion

from .reading import (
    Problems,
    expect,
    new_number,
    optional_entries,
    read_time,
    stamp,
    text_field,
    username_field,
)

NOTE_MAX = GuidelinesVersion._meta.get_field("note").max_length


def check_guidelines(data: Any, problems: Problems, users: set[str]) -> list[dict[str, Any]]:
    """study.json's ``guidelines`` (absent: none), each problem named by its place."""
    numbers: set[int] = set()
    versions = []
    for at, raw in optional_entries(data, "guidelines", "study.json", problems):
        if new_number(raw, at, numbers, problems) is None:
            continue
        text_field(raw, "introduction", at, problems)
        if len(text_field(raw, "note", at, problems)) > (NOTE_MAX or 300):
            problems.add(f"{at}.note", f"longer than {NOTE_MAX} characters")
        codebook_version = raw.get("codebook_version")
        if (
            not isinstance(codebook_version, int)
            or isinstance(codebook_version, bool)
            or codebook_version < 0
        ):
            problems.add(
                f"{at}.codebook_version", f"expected a whole number ≥ 0, got {codebook_version!r}"[:200]
            )
        read_time(raw.get("published_at"), f"{at}.published_at", problems)
        username_field(raw.get("published_by"), f"{at}.published_by", problems, users)
        acknowledged = raw.get("acknowledged", [])
        if expect(acknowledged, list, f"{at}.acknowledged", problems):
            readers: set[str] = set()
            for n, ack in enumerate(acknowledged):
                place = f"{at}.acknowledged[{n}]"
                if not expect(ack, dict, place, problems):
                    continue
                user = username_field(ack.get("user"), f"{place}.user", problems, users, required=True)
                if user in readers:
                    problems.add(f"{place}.user", f"{user!r} acknowledged this version twice")
                readers.add(user)
                read_time(ack.get("at"), f"{place}.at", problems)
        versions.append(raw)
    return versions


def write_guidelines(study: Study, versions: list[dict[str, Any]], users: Mapping[str, User]) -> None:
    """The checked versions and their acknowledgements, in the restore's transaction."""
    ids = insert_rows(
        GuidelinesVersion,
        (
            {
                "study_id": study.pk,
                "number": raw["number"],
                "introduction": raw.get("introduction") or "",
                "codebook_version": raw["codebook_version"],
                "note": raw.get("note") or "",
                "published_at": stamp(raw["published_at"]),
                "published_by_id": users[raw["published_by"]].pk
                if raw.get("published_by") in users
                else None,
            }
            for raw in versions
        ),
        returning=True,
    )
    insert_rows(
        GuidelinesAcknowledgement,
        (
            {"version_id": pk, "user_id": users[ack["user"]].pk, "acknowledged_at": stamp(ack["at"])}
            for raw, pk in zip(versions, ids, strict=True)
            for ack in raw.get("acknowledged", [])
        ),
    )
