"""The answers of gold checks: a fact adjudication owns (an item's current decision and its rationale), read
by annotation through a reader adjudication provides, the pattern of `decided.py`
(docs/decisions/0006-one-writer-per-table.md). `AdjudicationConfig.ready()` provides it.

The training feedback, the training score and the pass mark's lock need the answer; annotation neither
imports adjudication nor names its tables.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass

from django.core.exceptions import ImproperlyConfigured


@dataclass(frozen=True)
class GoldAnswer:
    """An item's current decision: per finding, dimension key → the chosen category ids; and why."""

    findings: tuple[Mapping[str, tuple[int, ...]], ...]
    rationale: str


Reader = Callable[[Collection[int]], dict[int, GoldAnswer]]
"""Item ids → the answer of each that has a current decision (one query)."""

_reader: Reader | None = None


def provide(reader: Reader) -> None:
    global _reader
    _reader = reader


def gold_answers(item_ids: Collection[int]) -> dict[int, GoldAnswer]:
    if _reader is None:
        raise ImproperlyConfigured("no gold-answer reader is provided: is apps.adjudication installed?")
    return _reader(item_ids) if item_ids else {}
