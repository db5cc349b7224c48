"""Open coding: codes proposed while labelling, and the lead's accept / merge / reject."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone
from django.utils.text import slugify

from apps.accounts.models import User

from .. import signals
from ..codebook_spec import CATEGORY_KEY_MAX_LENGTH
from ..index import CodebookIndex, note_codebook_write
from ..models import Category, CategoryStatus, ChangeKind, Codebook, CodebookChange, Dimension
from ..tree import near_duplicates
from .changes import (
    CodebookEditError,
    book_id,
    category_fields,
    changing,
    check_parent,
    check_sibling_name,
    clean_name,
    fold,
    fresh,
    fresh_dimension,
    key_of,
    next_position,
)
from .labels import MovedLabels, label_count, move_labels


@dataclass(frozen=True)
class Proposal:
    """A proposed category and what the proposer should know (near-duplicate names, an earlier proposal)."""

    category: Category
    warnings: tuple[str, ...]
    created: bool


def _unique_key(dimension: Dimension, name: str) -> str:
    base = (slugify(name)[: CATEGORY_KEY_MAX_LENGTH - 6].strip("-_") or "code").lower()
    taken = set(
        Category.objects.filter(dimension=dimension, key__startswith=base).values_list("key", flat=True)
    )
    if base not in taken:
        return base
    n = 2
    while f"{base}-{n}" in taken:
        n += 1
    return f"{base}-{n}"


def propose_category(
    dimension: Dimension, name: str, parent: Category | None, reason: str, user: User
) -> Proposal:
    """A new code proposed while labelling: a category with status ``proposed`` that its author may pick
    at once (`CategoryQuerySet.pickable_by`) and a lead later accepts, merges or rejects.

    Its key is made from the name (unique in the dimension). Names close to an existing category's
    (`tree.near_duplicates`) are returned as warnings, not refused. Proposing the same name under the
    same parent twice returns the open proposal (`created` False). Recorded as a ``propose`` change at
    the current version (the shared codebook does not change).
    """
    with transaction.atomic():
        book = Codebook.objects.select_for_update().get(pk=book_id(dimension))
        dimension = fresh_dimension(dimension)
        if dimension.retired_at is not None:
            raise CodebookEditError(f"The dimension {dimension.name} is retired.")
        name = clean_name(name)
        parent = fresh(parent) if parent is not None else None
        check_parent(dimension, parent)
        same = Category.objects.proposals().filter(dimension=dimension, parent=parent, proposed_by=user)
        for earlier in same:
            if fold(earlier.name) == fold(name):
                return Proposal(earlier, ("You already proposed this code.",), created=False)
        index = CodebookIndex.for_codebook(book)
        paths: dict[str, list[str]] = {}
        for info in index.categories_of(dimension.key, active_only=False):
            if info.is_active or (info.is_proposed and info.proposed_by_id != user.pk):
                paths.setdefault(info.name, []).append(index.path(info.id))
        warnings = []
        for similar in near_duplicates(name, paths):
            for path in paths[similar]:
                warnings.append(f"Similar to the existing category “{path}”: is it the same code?")
        note_codebook_write()
        category = Category.objects.create(
            dimension=dimension,
            parent=parent,
            key=_unique_key(dimension, name),
            name=name,
            status=CategoryStatus.PROPOSED,
            proposed_by=user,
            proposal_reason=reason.strip(),
            position=next_position(dimension, parent),
        )
        CodebookChange.objects.create(
            codebook=book,
            version=book.version,
            kind=ChangeKind.PROPOSE,
            actor=user,
            dimension=dimension,
            category=category,
            after={**category_fields(category), "reason": category.proposal_reason, "warnings": warnings},
        )
        # The shared codebook keeps its version, but its content changed: a new `updated_at` is what
        # tells every process's cached `CodebookIndex` (keyed on the row) to read it again.
        book.updated_at = timezone.now()
        book.save(update_fields=["updated_at"])
    return Proposal(category, tuple(warnings), created=True)


def accept_proposal(category: Category, *, actor: User | None) -> Category:
    """The proposal becomes an active category where it was proposed (its labels stay on it)."""
    with changing(book_id(category), actor) as changes:
        category = fresh(category)
        if category.status != CategoryStatus.PROPOSED:
            raise CodebookEditError(f"“{category.name}” is not an open proposal.")
        check_parent(category.dimension, category.parent)
        check_sibling_name(category.dimension, category.parent, category.name)
        category.status = CategoryStatus.ACTIVE
        category.position = next_position(category.dimension, category.parent)
        category.save(update_fields=["status", "position"])
        changes.record(
            ChangeKind.ACCEPT,
            category=category,
            before={"status": CategoryStatus.PROPOSED.value},
            after={"status": CategoryStatus.ACTIVE.value, **category_fields(category)},
        )
    return category


def reject_proposal(
    category: Category, move_labels_to: Category | None, *, actor: User | None, note: str = ""
) -> MovedLabels:
    """Reject a proposal; the labels its author (or a decision) put on it move to `move_labels_to`, an
    active category of the dimension that the lead picks (required when there are labels).
    Sends `signals.categories_merged` when labels moved."""
    with changing(book_id(category), actor, note=note) as changes:
        category = fresh(category)
        if category.status != CategoryStatus.PROPOSED:
            raise CodebookEditError(f"“{category.name}” is not an open proposal.")
        labels, decisions = label_count(category)
        target = fresh(move_labels_to) if move_labels_to is not None else None
        if target is None and (labels or decisions):
            raise CodebookEditError(
                f"“{category.name}” holds {labels + decisions} label(s): choose the category they move to."
            )
        moved = MovedLabels()
        if target is not None:
            if target.pk == category.pk or target.dimension_id != category.dimension_id:
                raise CodebookEditError("Choose another category of the same dimension for its labels.")
            if target.status != CategoryStatus.ACTIVE:
                raise CodebookEditError(f"“{target.name}” is not active.")
            moved = move_labels(category, target)
        category.status = CategoryStatus.REJECTED
        category.save(update_fields=["status"])
        changes.record(
            ChangeKind.REJECT,
            category=category,
            before={"status": CategoryStatus.PROPOSED.value},
            after={
                "status": CategoryStatus.REJECTED.value,
                "labels_moved_to": key_of(target),
                **moved.as_dict(),
            },
        )
        if target is not None and (moved.labels or moved.decisions or moved.dropped_labels):
            signals.categories_merged.send(sender=Category, source=category, target=target)
    return moved
