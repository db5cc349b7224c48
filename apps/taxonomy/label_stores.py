"""The labels that sit on categories, as the codebook sees them: a port that the apps holding them fill.

Taxonomy sits below annotation and adjudication, yet a merge, a split or a rejected proposal must move
their labels, and the codebook pages count them. Taxonomy neither imports those apps nor names their
models: each registers a `LabelStore` in its `ready()` (`annotation` the annotators' labels, as
`LABELS`; `adjudication` the gold labels of decisions, as `GOLD`), and the codebook's services call it.
The rows are written only by their owner's writes module (`annotation/writes.py`,
`adjudication/writes.py`): `move` is theirs. See docs/decisions/0006-one-writer-per-table.md.

A store's `rows()` is a QuerySet of its value rows, each with `finding_id`, `dimension`, `category` and
`original_category`: the shape every label on a category has, which is all the codebook's reads use.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.db import models

from .models import Category

LABELS = "labels"
GOLD = "gold"

Moved = tuple[int, tuple[int, ...]]
"""(rows moved, ids of the rows dropped because their finding already held the target)."""


def _no_annotators(category: Category) -> list[str]:
    return []


@dataclass(frozen=True)
class LabelStore:
    rows: Callable[[], models.QuerySet[Any]]
    """Every value row of the store (read only)."""
    counted: Callable[[], models.QuerySet[Any]]
    """The rows a codebook export counts: for gold labels, those of current decisions."""
    listing: Callable[..., models.QuerySet[Any, dict[str, Any]]]
    """`listing(category, annotator=..., q=...)`: the reassign page's rows on a category."""
    move: Callable[[Category, Category, Sequence[int] | None], Moved]
    """Point the rows on `source` (all, or only the given ids) to `target`, in the caller's transaction."""
    annotators: Callable[[Category], list[str]] = field(default=_no_annotators)
    """Usernames of whoever put a row of the store on the category."""


_stores: dict[str, LabelStore] = {}


def register(kind: str, store: LabelStore) -> None:
    """Called from the owning app's `ready()`; registering a kind again replaces it."""
    _stores[kind] = store


def store(kind: str) -> LabelStore:
    try:
        return _stores[kind]
    except KeyError:
        raise ImproperlyConfigured(
            f"no label store {kind!r} is registered: is the app that holds those labels installed?"
        ) from None


def remap_category_rows(
    model: type[models.Model], source: Category, target: Category, ids: Sequence[int] | None
) -> Moved:
    """What moving labels from `source` to `target` means, for the owners' writes modules to run on their
    own value model: rows on `source` (all, or only `ids`) point to `target`; `original_category` keeps
    the source unless an earlier merge already set it; a row whose finding already holds the target is
    deleted (keeping it would store one category twice, see `tree.remap_for_merge`). Set-based, so a merge
    of a category with 100,000 labels is three queries."""
    rows = model._default_manager.filter(category=source)
    if ids is not None:
        rows = rows.filter(pk__in=list(ids))
    holding_target = model._default_manager.filter(category=target).values("finding_id")
    clash = rows.filter(finding_id__in=holding_target)
    dropped = tuple(sorted(clash.values_list("pk", flat=True)))
    if dropped:
        model._default_manager.filter(pk__in=dropped).delete()
    moved = rows.filter(original_category__isnull=True).update(category=target, original_category=source)
    moved += rows.filter(original_category__isnull=False).update(category=target)
    return moved, dropped
