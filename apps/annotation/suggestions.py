"""A model's suggestion for an item in the workbench (issue #21 point 5): the one gate every
annotator-facing read of model outputs goes through.

Model raters sit above annotation (raters imports annotation, never the reverse), so the suggestions are
read through this port, provided by `RatersConfig.ready()` (the pattern of `raters/gold.py`). The port
decides *whether* a suggestion may be shown; the reader only says *what* it is:

* a **reliability** round never shows one, whatever a lead switched on, before or after its reveal: its
  labels measure agreement, and a suggestion would shift them toward the model;
* an item that is also in a reliability round still blind never shows one, in any round: its annotator
  there must not have seen a model's answer on it here;
* otherwise the reader answers: the rater a lead switched on for the round (`raters.suggestions`), or
  none.

`show_suggestion` records on the annotation that a suggestion was shown (`Annotation.suggestion_shown`), so
that agreement with models leaves the assisted labels out (`agreement/ratings.py`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from django.utils import timezone

from .models import Annotation, Assignment, Round, RoundItem, RoundKind, RoundPhase
from .writes import mark_suggestion_shown


@dataclass(frozen=True)
class SuggestedValue:
    dimension: str
    """The dimension's name."""
    category: str
    """The category's label (its name, and its parent's where it has one)."""
    share: float
    """The share of the model's samples that chose it (1.0 with one sample)."""


@dataclass(frozen=True)
class Suggestion:
    rater: str
    model: str
    samples: int
    values: tuple[SuggestedValue, ...]


Reader = Callable[[Round, int], Suggestion | None]

_reader: Reader | None = None


def provide(reader: Reader) -> None:
    global _reader
    _reader = reader


def may_suggest(round_: Round, item_id: int) -> bool:
    """Whether a model's output on the item may reach this round's annotators at all (module docstring)."""
    if round_.kind != RoundKind.LABELLING:
        return False
    return not RoundItem.objects.filter(
        item_id=item_id, round__kind=RoundKind.RELIABILITY, round__phase=RoundPhase.BLIND
    ).exists()


def suggestion_for(round_: Round, item_id: int) -> Suggestion | None:
    """The suggestion to show on the item in this round's workbench, or None."""
    if _reader is None or not may_suggest(round_, item_id):
        return None
    return _reader(round_, item_id)


def show_suggestion(assignment: Assignment, annotation: Annotation | None) -> Suggestion | None:
    """The suggestion for the annotator's assignment, recorded on its annotation as shown
    before it is returned: a page that shows it has recorded it. None when there is none to show."""
    shown = suggestion_for(assignment.round, assignment.item_id)
    if shown is not None and (annotation is None or not annotation.suggestion_shown):
        mark_suggestion_shown(assignment, timezone.now())
    return shown
