"""Whether an item is decided: a fact adjudication owns, read by annotation through a reader adjudication
provides (docs/decisions/0006-one-writer-per-table.md).

An item's labels are final once it is decided, and the annotator's queue skips decided items; but the
Review and the Decision are adjudication's, which sits above annotation. Annotation neither imports
adjudication nor names its tables or relations: `AdjudicationConfig.ready()` registers a `DecidedReader`
here, whose parts say, as SQL for the hand-written statements and as `Q` for the ORM, the two facts
annotation asks about. The reader is read when a statement is first built (once per process) or a query
made, never at import.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from django.core.exceptions import ImproperlyConfigured
from django.db.models import Q


class ReviewDecidedSQL(Protocol):
    def __call__(self, item: str, unless: str = "") -> str: ...


@dataclass(frozen=True)
class DecidedReader:
    review_decided_sql: ReviewDecidedSQL
    """SQL true when the item whose id is the given SQL expression has a Review that says decided, and the
    SQL condition `unless` (on the outer row) is false. `NOT` of it with `unless` is an anti-join that
    PostgreSQL probes by the review's item index; `unless OR NOT` of it without is planned as a hash of
    every decided review of the table (30 ms at 100,000 items, on every next item)."""
    current_decision_sql: Callable[[str], str]
    """SQL true when that item has a current decision."""
    review_decided: Callable[[str], Q]
    """`Q` on a model reaching an item by the given path ("" for `Item` itself, "item__" for a row with
    an `item` key): the item's Review says decided."""
    current_decision: Callable[[str], Q]
    """`Q` on the same path: the item has a current decision."""


_reader: DecidedReader | None = None


def provide(reader: DecidedReader) -> None:
    global _reader
    _reader = reader


def reader() -> DecidedReader:
    if _reader is None:
        raise ImproperlyConfigured("no DecidedReader is provided: is apps.adjudication installed?")
    return _reader


def decided_q(path: str = "") -> Q:
    """Decided, as `decided_item_ids` means it: the Review says so or a current decision exists."""
    r = reader()
    return r.review_decided(path) | r.current_decision(path)
