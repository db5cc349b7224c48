"""Writing a checked package into a new study (inside `restore.import_study`'s transaction): the users and the
codebook. The items are written by `restore_items`, the rounds and labels by `restore_labels`."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from django.utils import timezone

from apps.accounts.models import Study, User
from apps.accounts.services import StudyError, validate_username
from apps.taxonomy.models import (
    Category,
    CategoryStatus,
    Codebook,
    CodebookChange,
    CodebookVersion,
    Dimension,
)

from .codebook_check import PackageCodebook
from .reading import PackageError, Problems, read_time, stamp


def users_for(names: set[str]) -> tuple[dict[str, User], list[str]]:
    """Username → user, creating inactive placeholders for the unknown ones (returned by name).

    A package's username is its existing account only when the two are spelt exactly alike. A new one
    must be a username `create_user` would accept (`validate_username`: Django's rule, already in NFKC
    form); one that differs only by case from an existing account or from another of the package's
    names is refused (PackageError naming both), never made a second account for the same person."""
    found = {u.username: u for u in User.objects.filter(username__in=names)}
    missing = sorted(names - set(found))
    problems = username_problems(missing, sorted(found))
    if problems:
        raise PackageError(problems)
    placeholders = []
    for name in missing:
        user = User(username=name, is_active=False, display_name=name)
        user.set_unusable_password()
        placeholders.append(user)
    for user in User.objects.bulk_create(placeholders):
        found[user.username] = user
    if missing:  # bulk_create returns no primary keys on some backends
        found.update({u.username: u for u in User.objects.filter(username__in=missing)})
    return found, missing


def username_problems(new: list[str], existing: list[str]) -> list[str]:
    """Why the package's `new` usernames (no account has them exactly) cannot become accounts, one
    problem each; `existing` are the package's names that are accounts already."""
    problems: list[str] = []
    folded: dict[str, str] = {name.casefold(): name for name in existing}
    for name in new:
        other = folded.get(name.casefold())
        if other is not None:
            problems.append(
                f"USERS: the package names both {other!r} and {name!r}: usernames that differ only by "
                "case are one person; spell them alike in the package"
            )
            continue
        folded[name.casefold()] = name
        taken = User.objects.filter(username__iexact=name).values_list("username", flat=True).first()
        if taken is not None:
            problems.append(
                f"USERS: the package's user {name!r} differs only by case from the existing account "
                f"{taken!r}; spell it {taken!r} in the package if they are the same person, or rename one"
            )
            continue
        try:
            stored = validate_username(name)
        except StudyError as exc:
            problems.append(f"USERS: {exc}")
            continue
        if stored != name:
            problems.append(
                f"USERS: the package's user {name!r} would be stored as {stored!r} (Unicode NFKC form); "
                "spell it so in the package"
            )
    return problems


def write_codebook(
    study: Study, book_data: PackageCodebook, users: Mapping[str, User]
) -> dict[tuple[str, str], Category]:
    data = book_data.data
    now = timezone.now()
    book = Codebook.objects.create(
        study=study, name=data.get("name") or "", version=data["version"], updated_at=now
    )
    dimensions = {}
    for raw in data["dimensions"]:
        dimensions[raw["key"]] = Dimension(
            codebook=book,
            key=raw["key"],
            name=raw["name"],
            description=raw.get("description") or "",
            multiple=raw["multiple"],
            position=raw["position"],
            retired_at=read_time(raw.get("retired_at"), "", Problems(), required=False),
        )
    Dimension.objects.bulk_create(dimensions.values())
    categories: dict[tuple[str, str], Category] = {}
    by_depth: dict[int, list[tuple[dict[str, Any], Category]]] = defaultdict(list)
    index = book_data.index
    for raw in data["categories"]:
        key = (raw["dimension"], raw["key"])
        category = Category(
            dimension=dimensions[raw["dimension"]],
            key=raw["key"],
            name=raw["name"],
            definition=raw.get("definition") or "",
            include=raw.get("include") or "",
            exclude=raw.get("exclude") or "",
            examples=list(raw.get("examples") or []),
            position=raw["position"],
            # A merged category is stored as retired until its target exists (the check constraint).
            status=CategoryStatus.RETIRED if raw["status"] == CategoryStatus.MERGED else raw["status"],
            proposed_by=users.get(raw.get("proposed_by") or ""),
            proposal_reason=raw.get("proposal_reason") or "",
            created_at=read_time(raw.get("created_at"), "", Problems(), required=False) or now,
        )
        categories[key] = category
        by_depth[index.depth(book_data.ids[key])].append((raw, category))
    for depth in sorted(by_depth):
        for raw, category in by_depth[depth]:
            if raw.get("parent") is not None:
                category.parent = categories[(raw["dimension"], raw["parent"])]
        Category.objects.bulk_create([c for _, c in by_depth[depth]])
    merged = []
    for raw in data["categories"]:
        if raw["status"] == CategoryStatus.MERGED:
            category = categories[(raw["dimension"], raw["key"])]
            category.status = CategoryStatus.MERGED
            category.merged_into = categories[(raw["dimension"], raw["merged_into"])]
            merged.append(category)
        elif raw.get("merged_into") is not None:
            category = categories[(raw["dimension"], raw["key"])]
            category.merged_into = categories[(raw["dimension"], raw["merged_into"])]
            merged.append(category)
    Category.objects.bulk_update(merged, ["status", "merged_into"])
    conditioned = []
    for raw in data["dimensions"]:
        condition = raw.get("applies_when")
        if condition is not None:
            dimension = dimensions[raw["key"]]
            dimension.applies_when_category = categories[(condition["dimension"], condition["category"])]
            conditioned.append(dimension)
    Dimension.objects.bulk_update(conditioned, ["applies_when_category"])
    CodebookVersion.objects.bulk_create(
        CodebookVersion(
            codebook=book,
            number=raw["number"],
            snapshot=raw["snapshot"],
            created_at=stamp(raw["created_at"]),
            created_by=users.get(raw.get("created_by") or ""),
        )
        for raw in data["versions"]
    )
    CodebookChange.objects.bulk_create(
        CodebookChange(
            codebook=book,
            version=raw["version"],
            kind=raw["kind"],
            actor=users.get(raw.get("actor") or ""),
            at=stamp(raw["at"]),
            dimension=dimensions.get(raw["dimension"]) if raw.get("dimension") else None,
            category=categories[(raw["category"]["dimension"], raw["category"]["key"])]
            if raw.get("category")
            else None,
            before=raw["before"],
            after=raw["after"],
            note=raw.get("note") or "",
        )
        for raw in data["changes"]
    )
    return categories
