"""What each revealed round's discussion resolved: a fact adjudication owns (the decisions and their
provenance), read by agreement's command, API and dashboard through this port, since agreement and
adjudication never import each other (docs/decisions/0006-one-writer-per-table.md, the same pattern as
`decided.py`). `AdjudicationConfig.ready()` provides the reader.

The reader returns, per revealed round number, ``{"resolved_by_discussion", "adjudicated", "unresolved",
"share_discussion", "share_adjudicator", "causes": {cause key: items}}`` (shares of the three counts
together, None when there are none).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.core.exceptions import ImproperlyConfigured

Reader = Callable[[int], dict[int, dict[str, Any]]]

_reader: Reader | None = None


def provide(reader: Reader) -> None:
    global _reader
    _reader = reader


def discussion_outcomes(study_id: int) -> dict[int, dict[str, Any]]:
    if _reader is None:
        raise ImproperlyConfigured(
            "no discussion-outcomes reader is provided: is apps.adjudication installed?"
        )
    return _reader(study_id)
