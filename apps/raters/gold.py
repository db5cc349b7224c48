"""The study's gold labels, for the baseline rater to learn from: a fact adjudication owns (the current
decisions), read here through this port, since raters sits below adjudication and never imports it
(docs/decisions/0006-one-writer-per-table.md, the pattern of `annotation/decided.py`).
`AdjudicationConfig.ready()` provides the reader.

The reader returns, per decided item id, its first finding's category keys per dimension key (the
baseline predicts one finding per item; an item decided with several findings trains on its first).
"""

from __future__ import annotations

from collections.abc import Callable

from django.core.exceptions import ImproperlyConfigured

GoldLabels = dict[int, dict[str, tuple[str, ...]]]
Reader = Callable[[int], GoldLabels]

_reader: Reader | None = None


def provide(reader: Reader) -> None:
    global _reader
    _reader = reader


def gold_labels(study_id: int) -> GoldLabels:
    if _reader is None:
        raise ImproperlyConfigured("no gold-labels reader is provided: is apps.adjudication installed?")
    return _reader(study_id)
