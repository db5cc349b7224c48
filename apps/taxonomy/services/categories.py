"""Category operations of the editor: add, edit (rename), move, reorder, merge, split, reassign, retire,
restore and delete (never-used categories only)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from apps.accounts.models import User

from .. import signals
from ..models import Category, CategoryStatus, ChangeKind, CodebookChange, Dimension
from ..tree import TreeError
from .changes import (
    ChangeSet,
    CodebookEditError,
    Direction,
    book_id,
    category_fields,
    category_tree,
    changing,
    check_key_free,
    check_parent,
    check_sibling_name,
    clean_examples,
    clean_key,
    clean_name,
    fold,
    fresh,
    fresh_dimension,
    key_of,
    next_position,
    renumber,
)
from .labels import MovedLabels, label_count, label_stores, move_labels


def add_category(
    dimension: Dimension,
    *,
    key: str,
    name: str,
    parent: Category | None = None,
    definition: str = "",
    include: str = "",
    exclude: str = "",
    examples: Sequence[str] = (),
    actor: User | None,
) -> Category:
    """A new active category at the end of its siblings. Refuses a used key (of any status in the
    dimension), a name its siblings already have, and a parent that is not active in this dimension."""
    with changing(book_id(dimension), actor) as changes:
        dimension = fresh_dimension(dimension)
        if dimension.retired_at is not None:
            raise CodebookEditError(f"The dimension {dimension.name} is retired.")
        key, name = clean_key(key), clean_name(name)
        parent = fresh(parent) if parent is not None else None
        check_parent(dimension, parent)
        check_key_free(dimension, key)
        check_sibling_name(dimension, parent, name)
        category = Category.objects.create(
            dimension=dimension,
            parent=parent,
            key=key,
            name=name,
            definition=definition.strip(),
            include=include.strip(),
            exclude=exclude.strip(),
            examples=clean_examples(examples),
            position=next_position(dimension, parent),
        )
        changes.record(ChangeKind.ADD, category=category, after=category_fields(category))
    return category


def edit_category(
    category: Category,
    *,
    actor: User | None,
    name: str | None = None,
    definition: str | None = None,
    include: str | None = None,
    exclude: str | None = None,
    examples: Sequence[str] | None = None,
) -> Category:
    """Rename and/or edit the definition, include / exclude criteria and examples (None = unchanged).

    A new name is a ``rename`` change, the other fields one ``edit`` change; both make one version.
    Only active categories and open proposals can be edited (restore a retired one first).
    """
    with changing(book_id(category), actor) as changes:
        category = fresh(category)
        if category.status not in (CategoryStatus.ACTIVE, CategoryStatus.PROPOSED):
            raise CodebookEditError(
                f"“{category.name}” is {category.get_status_display().lower()}: restore it before editing it."
            )
        if name is not None:
            name = clean_name(name)
            if name != category.name:
                if category.status == CategoryStatus.ACTIVE:
                    check_sibling_name(category.dimension, category.parent, name, exclude=[category.pk])
                changes.record(
                    ChangeKind.RENAME, category=category, before={"name": category.name}, after={"name": name}
                )
                category.name = name
        new = {
            "definition": None if definition is None else definition.strip(),
            "include": None if include is None else include.strip(),
            "exclude": None if exclude is None else exclude.strip(),
            "examples": None if examples is None else clean_examples(examples),
        }
        before: dict[str, Any] = {}
        after: dict[str, Any] = {}
        for field_name, value in new.items():
            if value is not None and value != getattr(category, field_name):
                before[field_name] = getattr(category, field_name)
                after[field_name] = value
                setattr(category, field_name, value)
        if after:
            changes.record(ChangeKind.EDIT, category=category, before=before, after=after)
        if changes.rows:
            category.save()
    return category


def rename_category(category: Category, name: str, *, actor: User | None) -> Category:
    return edit_category(category, name=name, actor=actor)


def move_category(category: Category, new_parent: Category | None, *, actor: User | None) -> Category:
    """Put the category (with its subtree) under `new_parent` (None: the top level), last among its new
    siblings. Refuses moving it under itself or one of its descendants."""
    with changing(book_id(category), actor) as changes:
        category = fresh(category)
        if category.status != CategoryStatus.ACTIVE:
            raise CodebookEditError(f"Only active categories can be moved; “{category.name}” is not.")
        new_parent = fresh(new_parent) if new_parent is not None else None
        if new_parent is not None and new_parent.pk == category.pk:
            raise CodebookEditError(f"“{category.name}” cannot be moved under itself.")
        if (new_parent.pk if new_parent else None) == category.parent_id:
            return category
        check_parent(category.dimension, new_parent)
        try:
            category_tree(category.dimension_id).check_move(
                category.pk, new_parent.pk if new_parent else None
            )
        except TreeError as exc:
            raise CodebookEditError(f"Refused: {exc}.") from exc
        check_sibling_name(category.dimension, new_parent, category.name)
        before = {"parent": key_of(category.parent), "position": category.position}
        old_parent_id = category.parent_id
        category.parent = new_parent
        category.position = next_position(category.dimension, new_parent)
        category.save(update_fields=["parent", "position"])
        renumber(category.dimension_id, old_parent_id)
        renumber(category.dimension_id, category.parent_id)
        category.refresh_from_db(fields=["position"])
        after = {"parent": key_of(new_parent), "position": category.position}
        changes.record(ChangeKind.MOVE, category=category, before=before, after=after)
    return category


def reorder_category(category: Category, direction: Direction, *, actor: User | None) -> Category:
    """Swap the category with its previous (``up``) or next (``down``) active sibling; nothing happens at
    the end of the list."""
    if direction not in ("up", "down"):
        raise CodebookEditError(f"Unknown direction {direction!r}: use 'up' or 'down'.")
    with changing(book_id(category), actor) as changes:
        category = fresh(category)
        if category.status != CategoryStatus.ACTIVE:
            raise CodebookEditError(f"Only active categories can be reordered; “{category.name}” is not.")
        order = list(
            Category.objects.active()
            .filter(dimension_id=category.dimension_id, parent_id=category.parent_id)
            .order_by("position", "id")
            .values_list("id", flat=True)
        )
        index = order.index(category.pk)
        other = index - 1 if direction == "up" else index + 1
        if not 0 <= other < len(order):
            return category
        order[index], order[other] = order[other], order[index]
        renumber(category.dimension_id, category.parent_id, order)
        parent = key_of(category.parent)
        changes.record(
            ChangeKind.REORDER,
            category=category,
            before={"parent": parent, "position": index},
            after={"parent": parent, "position": other},
        )
        category.refresh_from_db(fields=["position"])
    return category


def _repoint_conditions(changes: ChangeSet, source: Category, target: Category) -> list[str]:
    """Dimensions that applied when `source` was chosen now apply when `target` is."""
    repointed = []
    for dimension in Dimension.objects.filter(applies_when_category=source):
        dimension.applies_when_category = target
        dimension.save(update_fields=["applies_when_category"])
        changes.record(
            ChangeKind.EDIT_DIMENSION,
            dimension=dimension,
            before={"applies_when": {source.dimension.key: source.key}},
            after={"applies_when": {target.dimension.key: target.key}},
            note=f"follows the merge of {source.key} into {target.key}",
        )
        repointed.append(dimension.key)
    return repointed


def merge_category(source: Category, target: Category, *, actor: User | None, note: str = "") -> MovedLabels:
    """Merge `source` (active or an open proposal) into the active `target` of the same dimension.

    Every annotator label and gold label on the source now points to the target (`original_category`
    keeps the source unless already set; a finding already holding the target loses its duplicate); the
    source's subcategories move under the target; dimensions conditional on the source follow to the
    target; the source gets status ``merged`` and ``merged_into = target``. Sends
    `signals.categories_merged` (source, target) so adjudication can reconsolidate. Refuses merging a
    category into itself or into one of its own descendants.
    """
    with changing(book_id(source), actor, note=note) as changes:
        source, target = fresh(source), fresh(target)
        if source.pk == target.pk:
            raise CodebookEditError(f"“{source.name}” cannot be merged into itself.")
        if source.status not in (CategoryStatus.ACTIVE, CategoryStatus.PROPOSED):
            raise CodebookEditError(
                f"“{source.name}” is {source.get_status_display().lower()}: only active categories and "
                "proposals can be merged."
            )
        if target.dimension_id != source.dimension_id:
            raise CodebookEditError(
                f"“{target.name}” is in {target.dimension.name}, “{source.name}” in {source.dimension.name}: "
                "categories merge only within one dimension."
            )
        if target.status != CategoryStatus.ACTIVE:
            raise CodebookEditError(f"“{target.name}” is not active: merge into an active category.")
        try:
            category_tree(source.dimension_id).check_merge(source.pk, target.pk)
        except TreeError as exc:
            raise CodebookEditError(f"Refused: {exc}.") from exc
        children = list(
            Category.objects.filter(parent=source).select_related("parent").order_by("position", "id")
        )
        for child in children:
            if child.status == CategoryStatus.ACTIVE:
                check_sibling_name(target.dimension, target, child.name)
        position = next_position(target.dimension, target)
        for child in children:
            before = {"parent": source.key, "position": child.position}
            child.parent, child.position = target, position
            position += 1
            child.save(update_fields=["parent", "position"])
            changes.record(
                ChangeKind.MOVE,
                category=child,
                before=before,
                after={"parent": target.key, "position": child.position},
                note=f"follows the merge of {source.key} into {target.key}",
            )
        moved = move_labels(source, target)
        repointed = _repoint_conditions(changes, source, target)
        before_status = source.status
        source.status = CategoryStatus.MERGED
        source.merged_into = target
        source.save(update_fields=["status", "merged_into"])
        renumber(source.dimension_id, source.parent_id)
        changes.record(
            ChangeKind.MERGE,
            category=source,
            before={"status": before_status, **category_fields(source)},
            after={
                "status": CategoryStatus.MERGED.value,
                "merged_into": target.key,
                "merged_into_path": category_tree(source.dimension_id).path_string(target.pk),
                "children_moved": [c.key for c in children],
                "conditions_moved": repointed,
                **moved.as_dict(),
            },
        )
        signals.categories_merged.send(sender=Category, source=source, target=target)
    return moved


@dataclass(frozen=True)
class NewCategory:
    """One part of a split."""

    key: str
    name: str
    definition: str = ""
    include: str = ""
    exclude: str = ""


def split_category(source: Category, parts: Sequence[NewCategory], *, actor: User | None) -> list[Category]:
    """Split an active leaf category into two or more new sibling categories, placed where it was; the
    source is retired. Its labels stay on it until a lead reassigns them (`reassign_labels`)."""
    with changing(book_id(source), actor) as changes:
        source = fresh(source)
        if source.status != CategoryStatus.ACTIVE:
            raise CodebookEditError(f"Only active categories can be split; “{source.name}” is not.")
        if len(parts) < 2:
            raise CodebookEditError("A split needs at least two new categories.")
        children = list(Category.objects.active().filter(parent=source).values_list("name", flat=True))
        if children:
            raise CodebookEditError(
                f"“{source.name}” has subcategories ({', '.join(children)}): move or merge them first, "
                "then split it."
            )
        dependent = list(
            Dimension.objects.active().filter(applies_when_category=source).values_list("name", flat=True)
        )
        if dependent:
            raise CodebookEditError(
                f"{', '.join(dependent)} applies only when “{source.name}” is chosen: change that condition "
                "before splitting it."
            )
        keys: set[str] = set()
        names: set[str] = set()
        cleaned = []
        for part in parts:
            key, name = clean_key(part.key), clean_name(part.name)
            if key in keys:
                raise CodebookEditError(f"Two new categories have the key {key!r}.")
            if fold(name) in names:
                raise CodebookEditError(f"Two new categories are named “{name}”.")
            keys.add(key)
            names.add(fold(name))
            check_key_free(source.dimension, key)
            check_sibling_name(source.dimension, source.parent, name, exclude=[source.pk])
            cleaned.append((key, name, part))
        order = list(
            Category.objects.active()
            .filter(dimension_id=source.dimension_id, parent_id=source.parent_id)
            .order_by("position", "id")
            .values_list("id", flat=True)
        )
        created = []
        for key, name, part in cleaned:
            category = Category.objects.create(
                dimension=source.dimension,
                parent=source.parent,
                key=key,
                name=name,
                definition=part.definition.strip(),
                include=part.include.strip(),
                exclude=part.exclude.strip(),
                position=next_position(source.dimension, source.parent),
            )
            created.append(category)
        at = order.index(source.pk)
        order[at : at + 1] = [c.pk for c in created]
        source.status = CategoryStatus.RETIRED
        source.save(update_fields=["status"])
        renumber(source.dimension_id, source.parent_id, order)
        for category in created:
            category.refresh_from_db(fields=["position"])
            changes.record(
                ChangeKind.ADD,
                category=category,
                after=category_fields(category),
                note=f"split from {source.key}",
            )
        labels, decisions = label_count(source)
        changes.record(
            ChangeKind.SPLIT,
            category=source,
            before={"status": CategoryStatus.ACTIVE.value, **category_fields(source)},
            after={
                "status": CategoryStatus.RETIRED.value,
                "parts": [c.key for c in created],
                "labels_to_reassign": labels,
                "decisions_to_reassign": decisions,
            },
        )
    return created


def split_parts(category: Category) -> list[Category]:
    """The categories the last split of `category` created (empty when it was never split)."""
    change = (
        CodebookChange.objects.filter(category=category, kind=ChangeKind.SPLIT)
        .order_by("-version", "-id")
        .first()
    )
    if change is None:
        return []
    keys = list(change.after.get("parts", []))
    found = {c.key: c for c in Category.objects.filter(dimension_id=category.dimension_id, key__in=keys)}
    return [found[k] for k in keys if k in found]


def reassign_labels(
    source: Category,
    target: Category,
    *,
    label_ids: Sequence[int] = (),
    decision_value_ids: Sequence[int] = (),
    actor: User | None,
) -> MovedLabels:
    """Move the chosen annotator labels and gold labels from `source` to `target` (after a split, or to
    fix labels on any category); `original_category` keeps the source. Ids not on the source are refused.
    Sends `signals.labels_reassigned` with `mapping` {label id: target id} (annotator labels) and
    `decision_mapping` {decision value id: target id}."""
    if not label_ids and not decision_value_ids:
        raise CodebookEditError("Choose at least one label to reassign.")
    labels_store, gold_store = label_stores()
    with changing(book_id(source), actor) as changes:
        source, target = fresh(source), fresh(target)
        if target.pk == source.pk:
            raise CodebookEditError("Choose another category than the one the labels are on.")
        if target.dimension_id != source.dimension_id:
            raise CodebookEditError(f"“{target.name}” belongs to another dimension.")
        if target.status != CategoryStatus.ACTIVE:
            raise CodebookEditError(f"“{target.name}” is not active: reassign to an active category.")
        for kind, ids, what in (
            (labels_store, label_ids, "labels"),
            (gold_store, decision_value_ids, "gold labels"),
        ):
            found = set(kind.rows().filter(pk__in=list(ids), category=source).values_list("pk", flat=True))
            missing = sorted(set(ids) - found)
            if missing:
                raise CodebookEditError(
                    f"The {what} {', '.join(map(str, missing[:10]))} are not on “{source.name}” (any more)."
                )
        moved = move_labels(source, target, list(label_ids), list(decision_value_ids))
        dropped_labels, dropped_decisions = moved.dropped_labels, moved.dropped_decisions
        changes.record(
            ChangeKind.REASSIGN,
            category=source,
            after={
                "target": target.key,
                "labels": sorted(set(label_ids) - set(dropped_labels)),
                "decisions": sorted(set(decision_value_ids) - set(dropped_decisions)),
                **moved.as_dict(),
            },
        )
        signals.labels_reassigned.send(
            sender=Category,
            source=source,
            target=target,
            mapping={i: target.pk for i in label_ids if i not in dropped_labels},
            decision_mapping={i: target.pk for i in decision_value_ids if i not in dropped_decisions},
        )
    return moved


def retire_category(category: Category, *, actor: User | None) -> list[Category]:
    """Retire an active category and its active subcategories: hidden from pickers, kept with their
    labels in history and exports. Refused while a dimension applies only when one of them is chosen.
    Returns the retired categories, the given one first."""
    with changing(book_id(category), actor) as changes:
        category = fresh(category)
        if category.status != CategoryStatus.ACTIVE:
            raise CodebookEditError(f"“{category.name}” is already {category.get_status_display().lower()}.")
        tree = category_tree(category.dimension_id)
        affected_ids = [category.pk, *tree.descendants(category.pk)]
        affected = {c.pk: c for c in Category.objects.active().filter(pk__in=affected_ids)}
        dependent = Dimension.objects.active().filter(applies_when_category__in=list(affected))
        if dependent.exists():
            names = ", ".join(d.name for d in dependent)
            raise CodebookEditError(
                f"{names} applies only when “{category.name}” (or a subcategory) is chosen: change that "
                "condition before retiring it."
            )
        retired = [affected[pk] for pk in affected_ids if pk in affected]
        Category.objects.filter(pk__in=list(affected)).update(status=CategoryStatus.RETIRED)
        for c in retired:
            changes.record(
                ChangeKind.RETIRE,
                category=c,
                before={"status": CategoryStatus.ACTIVE.value},
                after={"status": CategoryStatus.RETIRED.value},
                note="" if c.pk == category.pk else f"with its parent {category.key}",
            )
        renumber(category.dimension_id, category.parent_id)
    return retired


def restore_category(category: Category, *, actor: User | None) -> Category:
    """Make a retired or merged category active again, last among its siblings. Its parent must be
    active; labels moved away by a merge stay where they are."""
    with changing(book_id(category), actor) as changes:
        category = fresh(category)
        if category.status not in (CategoryStatus.RETIRED, CategoryStatus.MERGED):
            raise CodebookEditError(
                f"“{category.name}” is {category.get_status_display().lower()}, not retired."
            )
        if category.parent is not None and category.parent.status != CategoryStatus.ACTIVE:
            raise CodebookEditError(
                f"Its parent “{category.parent.name}” is {category.parent.get_status_display().lower()}: "
                "restore the parent first."
            )
        check_sibling_name(category.dimension, category.parent, category.name)
        before = {"status": category.status, "merged_into": key_of(category.merged_into)}
        category.status = CategoryStatus.ACTIVE
        category.merged_into = None
        category.position = next_position(category.dimension, category.parent)
        category.save(update_fields=["status", "merged_into", "position"])
        changes.record(ChangeKind.RESTORE, category=category, before=before, after={"status": "active"})
    return category


def delete_category(category: Category, *, actor: User | None) -> None:
    """Delete a category that was never used: no labels (current or original), no subcategories, no
    merge or condition pointing to it. A used category can only be retired."""
    labels_store, gold_store = label_stores()
    with changing(book_id(category), actor) as changes:
        category = fresh(category)
        uses = {
            "labels": labels_store.rows().filter(category=category).count(),
            "original labels": labels_store.rows().filter(original_category=category).count(),
            "gold labels": gold_store.rows().filter(category=category).count(),
            "original gold labels": gold_store.rows().filter(original_category=category).count(),
            "subcategories": Category.objects.filter(parent=category).count(),
            "categories merged into it": Category.objects.filter(merged_into=category).count(),
            "dimension conditions": Dimension.objects.filter(applies_when_category=category).count(),
        }
        used = [f"{n} {what}" for what, n in uses.items() if n]
        if used:
            raise CodebookEditError(
                f"“{category.name}” cannot be deleted: it has {', '.join(used)}. Retire it instead."
            )
        changes.record(
            ChangeKind.RETIRE,
            dimension=category.dimension,
            before={"status": category.status, "key": category.key, **category_fields(category)},
            after={"deleted": True},
            note=f"deleted {category.key} (never used)",
        )
        parent_id = category.parent_id
        category.delete()
        renumber(category.dimension_id, parent_id)
