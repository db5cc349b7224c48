"""Adjudication reacts to labels and codebook changes (it imports annotation and taxonomy, never the reverse).

Receivers run synchronously inside the sender's transaction: a submission and its consolidation, or a
merge and the gold labels following it, commit or roll back together.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db import connection

from apps.annotation.models import Annotation
from apps.taxonomy.index import CodebookIndex
from apps.taxonomy.models import Category

from . import services
from .progress import refresh_progress


def on_annotation_submitted(sender: object, *, annotation: Annotation, item_id: int, **kwargs: Any) -> None:
    """An annotation was submitted or edited: the item may now be complete, agree, or disagree again.

    The sender's codebook `index`, when given, is reused (it holds the codebook row share-locked); a sender
    that locked the item's row already says ``item_locked=True`` (the short path, PostgreSQL)."""
    index = kwargs.get("index")
    book = index if isinstance(index, CodebookIndex) else None
    if kwargs.get("item_locked") and connection.vendor == "postgresql":
        services.consolidate_submission(item_id, index=book)
    else:
        services.consolidate_item(item_id, index=book)
    refresh_progress([item_id])


def on_items_moved(sender: object, *, item_ids: list[int], **kwargs: Any) -> None:
    """Rounds or assignments of these items changed: the grid's labelling columns follow."""
    refresh_progress(item_ids)


def on_categories_merged(sender: object, *, source: Category, target: Category, **kwargs: Any) -> None:
    """Gold labels follow the merge; open disagreements and automatic decisions touching `source` rerun."""
    services.follow_merge(source, target)


def on_labels_reassigned(sender: object, *, mapping: Mapping[int, int], **kwargs: Any) -> None:
    """A split reassigned annotation labels: items with open disagreements or automatic decisions rerun."""
    services.follow_split(mapping)
