"""Dimension operations: add, edit (name, choice mode, condition, description), retire, restore, reorder."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, Max
from django.utils import timezone

from apps.accounts.models import User

from ..models import Category, CategoryStatus, ChangeKind, Codebook, Dimension
from .changes import (
    CodebookEditError,
    Direction,
    book_id,
    changing,
    clean_key,
    clean_name,
    fresh,
    fresh_dimension,
)
from .labels import label_stores


def _condition(category: Category | None) -> dict[str, str] | None:
    return None if category is None else {category.dimension.key: category.key}


def _check_condition(book_id: int, dimension: Dimension | None, category: Category | None) -> None:
    """`category` may serve as `dimension`'s applies_when: active, in another active dimension of the
    codebook, without a cycle of conditions."""
    if category is None:
        return
    category = fresh(category)
    if category.dimension.codebook_id != book_id:
        raise CodebookEditError("The condition must be a category of this codebook.")
    if category.status != CategoryStatus.ACTIVE or category.dimension.retired_at is not None:
        raise CodebookEditError(f"“{category.name}” is not active: a condition needs an active category.")
    if dimension is None:
        return
    seen = {dimension.pk}
    current: Dimension | None = category.dimension
    while current is not None:
        if current.pk in seen:
            raise CodebookEditError(
                f"{dimension.name} cannot depend on {category.dimension.name}: the conditions would form a "
                "cycle and neither dimension could ever apply."
            )
        seen.add(current.pk)
        on = current.applies_when_category
        current = on.dimension if on is not None else None


def _several_values(dimension: Dimension) -> int:
    """Findings that hold several categories of the dimension (annotator or gold)."""
    total = 0
    for kind in label_stores():
        total += (
            kind.rows()
            .filter(dimension=dimension, category__isnull=False)
            .values("finding_id")
            .annotate(n=Count("id"))
            .filter(n__gt=1)
            .count()
        )
    return total


def check_single_choice(dimension: Dimension) -> None:
    """Refuse making a dimension single-choice while findings hold several of its categories."""
    several = _several_values(dimension)
    if several:
        raise CodebookEditError(
            f"{dimension.name} cannot become single-choice: {several} finding(s) hold several of its "
            "categories. Resolve them first."
        )


def add_dimension(
    book: Codebook,
    *,
    key: str,
    name: str,
    multiple: bool = False,
    applies_when: Category | None = None,
    description: str = "",
    actor: User | None,
) -> Dimension:
    """A new dimension, last in order; `applies_when` is a category of another dimension."""
    with changing(book.pk, actor) as changes:
        key, name = clean_key(key, "dimension"), clean_name(name, "dimension")
        taken = Dimension.objects.filter(codebook=changes.book, key=key).first()
        if taken is not None:
            state = " (retired)" if taken.retired_at else ""
            raise CodebookEditError(f"The dimension key {key!r} is already used by {taken.name}{state}.")
        _check_condition(book.pk, None, applies_when)
        top = Dimension.objects.filter(codebook=changes.book).aggregate(m=Max("position"))["m"]
        dimension = Dimension.objects.create(
            codebook=changes.book,
            key=key,
            name=name,
            multiple=multiple,
            applies_when_category=applies_when,
            description=description.strip(),
            position=0 if top is None else top + 1,
        )
        changes.record(
            ChangeKind.ADD_DIMENSION,
            dimension=dimension,
            after={
                "name": name,
                "multiple": multiple,
                "applies_when": _condition(applies_when),
                "description": dimension.description,
                "position": dimension.position,
            },
        )
    return dimension


_UNCHANGED: Any = object()


def edit_dimension(
    dimension: Dimension,
    *,
    actor: User | None,
    name: str | None = None,
    multiple: bool | None = None,
    applies_when: Category | None = _UNCHANGED,
    description: str | None = None,
) -> Dimension:
    """Change a dimension's name, choice mode, condition (None removes it) or description; arguments
    left out stay. Refuses single-choice while findings hold several values, and cyclic conditions."""
    with changing(book_id(dimension), actor) as changes:
        dimension = fresh_dimension(dimension)
        before: dict[str, Any] = {}
        after: dict[str, Any] = {}
        if name is not None and clean_name(name, "dimension") != dimension.name:
            before["name"], after["name"] = dimension.name, clean_name(name, "dimension")
            dimension.name = after["name"]
        if multiple is not None and multiple != dimension.multiple:
            if not multiple:
                check_single_choice(dimension)
            before["multiple"], after["multiple"] = dimension.multiple, multiple
            dimension.multiple = multiple
        if applies_when is not _UNCHANGED:
            new_pk = applies_when.pk if applies_when is not None else None
            if new_pk != dimension.applies_when_category_id:
                _check_condition(dimension.codebook_id, dimension, applies_when)
                before["applies_when"] = _condition(dimension.applies_when_category)
                condition = fresh(applies_when) if applies_when is not None else None
                after["applies_when"] = _condition(condition)
                dimension.applies_when_category = condition
        if description is not None and description.strip() != dimension.description:
            before["description"], after["description"] = dimension.description, description.strip()
            dimension.description = description.strip()
        if after:
            dimension.save()
            changes.record(ChangeKind.EDIT_DIMENSION, dimension=dimension, before=before, after=after)
    return dimension


def retire_dimension(dimension: Dimension, *, actor: User | None) -> Dimension:
    """Retire a dimension (it is no longer asked; its labels stay). Refused while another dimension
    applies only when one of its categories is chosen."""
    with changing(book_id(dimension), actor) as changes:
        dimension = fresh_dimension(dimension)
        if dimension.retired_at is not None:
            raise CodebookEditError(f"{dimension.name} is already retired.")
        dependent = list(
            Dimension.objects.active()
            .filter(applies_when_category__dimension=dimension)
            .exclude(pk=dimension.pk)
            .values_list("name", flat=True)
        )
        if dependent:
            raise CodebookEditError(
                f"{', '.join(dependent)} applies only when a category of {dimension.name} is chosen: "
                "change that condition first."
            )
        dimension.retired_at = timezone.now()
        dimension.save(update_fields=["retired_at"])
        changes.record(ChangeKind.RETIRE_DIMENSION, dimension=dimension, before={"name": dimension.name})
    return dimension


def restore_dimension(dimension: Dimension, *, actor: User | None) -> Dimension:
    with changing(book_id(dimension), actor) as changes:
        dimension = fresh_dimension(dimension)
        if dimension.retired_at is None:
            raise CodebookEditError(f"{dimension.name} is not retired.")
        if dimension.applies_when_category is not None:
            _check_condition(dimension.codebook_id, dimension, dimension.applies_when_category)
        dimension.retired_at = None
        dimension.save(update_fields=["retired_at"])
        changes.record(
            ChangeKind.ADD_DIMENSION, dimension=dimension, after={"name": dimension.name}, note="restored"
        )
    return dimension


def reorder_dimension(dimension: Dimension, direction: Direction, *, actor: User | None) -> Dimension:
    """Swap the dimension with the previous or next active one."""
    with changing(book_id(dimension), actor) as changes:
        order = list(
            Dimension.objects.active().filter(codebook_id=changes.book.pk).order_by("position", "id")
        )
        ids = [d.pk for d in order]
        if dimension.pk not in ids:
            raise CodebookEditError(f"{dimension.name} is retired.")
        index = ids.index(dimension.pk)
        other = index - 1 if direction == "up" else index + 1
        if not 0 <= other < len(order):
            return dimension
        order[index], order[other] = order[other], order[index]
        for position, d in enumerate(order):
            d.position = position
        Dimension.objects.bulk_update(order, ["position"])
        changes.record(
            ChangeKind.EDIT_DIMENSION,
            dimension=dimension,
            before={"position": index},
            after={"position": other},
        )
    return dimension
