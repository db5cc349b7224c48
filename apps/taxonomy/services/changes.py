"""The machinery every codebook change goes through: the locked change set that records, versions and
snapshots (see the package docstring), and the checks shared by the operations."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from apps.accounts.models import Study, User

from .. import signals
from ..codebook_spec import (
    CATEGORY_KEY_MAX_LENGTH,
    DIMENSION_KEY_MAX_LENGTH,
    KEY_PATTERN,
    NAME_MAX_LENGTH,
    CodebookError,
    codebook_from_data,
)
from ..index import CodebookIndex, note_codebook_write
from ..models import Category, CategoryStatus, Codebook, CodebookChange, CodebookVersion, Dimension
from ..tree import CategoryTree

Direction = Literal["up", "down"]


class CodebookEditError(ValueError):
    """A codebook change refused; the message says what and why. Nothing was written."""


def current_version(study: Study) -> int:
    """The study's codebook version (0 before any codebook): what annotations, decisions and agreement
    snapshots record as `codebook_version`."""
    version = Codebook.objects.filter(study=study).values_list("version", flat=True).first()
    return version or 0


def get_or_create_codebook(study: Study, name: str = "") -> Codebook:
    """The study's codebook, created empty at version 0 (named after the study) when missing."""
    book, _ = Codebook.objects.get_or_create(study=study, defaults={"name": name.strip() or study.name})
    return book


@dataclass
class ChangeSet:
    """The changes of one operation, recorded under the codebook's row lock (see the module docstring)."""

    book: Codebook
    actor: User | None
    note: str = ""
    rows: list[CodebookChange] = field(default_factory=list)

    def record(
        self,
        kind: str,
        *,
        dimension: Dimension | None = None,
        category: Category | None = None,
        before: dict[str, Any] | None = None,
        after: dict[str, Any] | None = None,
        note: str = "",
    ) -> None:
        self.rows.append(
            CodebookChange(
                codebook=self.book,
                kind=kind,
                actor=self.actor,
                dimension=dimension if dimension is not None else getattr(category, "dimension", None),
                category=category,
                before=before or {},
                after=after or {},
                note=note or self.note,
            )
        )


@contextlib.contextmanager
def changing(book_id: int, actor: User | None, *, note: str = "") -> Iterator[ChangeSet]:
    """Lock the codebook, collect changes, then commit them as one new version (nothing when none).

    Used by every write in this app; any exception inside rolls the whole operation back.
    """
    with transaction.atomic():
        book = Codebook.objects.select_for_update().get(pk=book_id)
        note_codebook_write()
        changes = ChangeSet(book, actor, note)
        yield changes
        if changes.rows:
            commit(changes)


def commit(changes: ChangeSet) -> None:
    """Raise the version by one, store the change rows and the snapshot, tell listeners."""
    book = changes.book
    snapshot = CodebookIndex.for_codebook(book).snapshot()
    try:
        codebook_from_data(snapshot)
    except CodebookError as exc:
        # The explicit checks below give friendlier messages; this guards every other way to break a file.
        raise CodebookEditError(f"This change would leave the codebook invalid: {exc}") from exc
    now = timezone.now()
    book.version += 1
    book.updated_at = now
    book.save(update_fields=["version", "updated_at"])
    for row in changes.rows:
        row.version = book.version
        row.at = now
    CodebookChange.objects.bulk_create(changes.rows)
    CodebookVersion.objects.create(
        codebook=book, number=book.version, snapshot=snapshot, created_by=changes.actor, created_at=now
    )
    signals.codebook_changed.send(sender=Codebook, codebook=book, version=book.version)


def book_id(obj: Category | Dimension) -> int:
    if isinstance(obj, Dimension):
        return obj.codebook_id
    return Dimension.objects.values_list("codebook_id", flat=True).get(pk=obj.dimension_id)


def fresh(category: Category) -> Category:
    try:
        return Category.objects.select_related("dimension", "parent").get(pk=category.pk)
    except Category.DoesNotExist:
        raise CodebookEditError(f"The category {category.key!r} no longer exists.") from None


def fresh_dimension(dimension: Dimension) -> Dimension:
    return Dimension.objects.select_related("applies_when_category__dimension").get(pk=dimension.pk)


def fold(name: str) -> str:
    return " ".join(name.split()).casefold()


def clean_name(name: str, what: str = "category") -> str:
    """The name stripped, or CodebookEditError when it cannot name a category in a path."""
    name = name.strip()
    if not name:
        raise CodebookEditError(f"A {what} needs a name.")
    if "\n" in name or "\r" in name:
        raise CodebookEditError(f"A {what} name must fit on one line.")
    if ">" in name:
        raise CodebookEditError(f"A {what} name cannot contain '>': it separates the names in a path.")
    if len(name) > NAME_MAX_LENGTH:
        raise CodebookEditError(f"A {what} name has at most {NAME_MAX_LENGTH} characters.")
    return name


def clean_key(key: str, what: str = "category") -> str:
    key = key.strip()
    limit = CATEGORY_KEY_MAX_LENGTH if what == "category" else DIMENSION_KEY_MAX_LENGTH
    if not KEY_PATTERN.fullmatch(key):
        raise CodebookEditError(
            f"The {what} key {key!r} must start with a lower-case letter or digit and contain only "
            "lower-case letters, digits, '-' and '_'."
        )
    if len(key) > limit:
        raise CodebookEditError(f"The {what} key {key!r} is longer than {limit} characters.")
    return key


def check_key_free(dimension: Dimension, key: str) -> None:
    taken = Category.objects.filter(dimension=dimension, key=key).first()
    if taken is not None:
        raise CodebookEditError(
            f"The key {key!r} is already used by “{taken.name}” ({taken.get_status_display().lower()}) "
            f"in {dimension.name}: keys identify categories in label files and must stay unique, "
            "even for retired categories."
        )


def check_sibling_name(
    dimension: Dimension, parent: Category | None, name: str, *, exclude: Sequence[int] = ()
) -> None:
    siblings = Category.objects.active().filter(dimension=dimension, parent=parent).exclude(pk__in=exclude)
    for sibling in siblings.only("id", "name", "key"):
        if fold(sibling.name) == fold(name):
            where = f"“{parent.name}”" if parent else f"The top level of {dimension.name}"
            raise CodebookEditError(
                f"{where} already has a category named “{sibling.name}” (key {sibling.key}): "
                "sibling names must differ so that a path of names points to one category."
            )


def check_parent(dimension: Dimension, parent: Category | None) -> None:
    if parent is None:
        return
    if parent.dimension_id != dimension.pk:
        raise CodebookEditError(f"“{parent.name}” belongs to another dimension.")
    if parent.status != CategoryStatus.ACTIVE:
        raise CodebookEditError(
            f"“{parent.name}” is {parent.get_status_display().lower()}: only active categories can "
            "hold subcategories."
        )


def category_tree(dimension_id: int) -> CategoryTree:
    return CategoryTree.from_rows(
        Category.objects.filter(dimension_id=dimension_id).values("id", "parent_id", "key", "name")
    )


def next_position(dimension: Dimension, parent: Category | None) -> int:
    top = Category.objects.filter(dimension=dimension, parent=parent).aggregate(m=Max("position"))["m"]
    return 0 if top is None else top + 1


def renumber(dimension_id: int, parent_id: int | None, order: Sequence[int] | None = None) -> None:
    """Give the active siblings positions 0..n-1 (in `order` when given, else their current order)."""
    siblings = list(
        Category.objects.active()
        .filter(dimension_id=dimension_id, parent_id=parent_id)
        .order_by("position", "id")
    )
    if order is not None:
        rank = {pk: i for i, pk in enumerate(order)}
        siblings.sort(key=lambda c: rank.get(c.pk, len(rank)))
    changed = []
    for position, sibling in enumerate(siblings):
        if sibling.position != position:
            sibling.position = position
            changed.append(sibling)
    Category.objects.bulk_update(changed, ["position"])


def key_of(category: Category | None) -> str | None:
    return None if category is None else category.key


def category_fields(category: Category) -> dict[str, Any]:
    """The category as the codebook diff describes it (parent by key, examples as a list)."""
    return {
        "name": category.name,
        "parent": key_of(category.parent),
        "position": category.position,
        "definition": category.definition,
        "include": category.include,
        "exclude": category.exclude,
        "examples": list(category.examples or []),
    }


def clean_examples(examples: Sequence[str]) -> list[str]:
    return [e.strip() for e in examples if e and e.strip()]
