"""When an item's labels in a round are complete: the one rule that consolidation and the annotators'
lock share. Pure (no Django).

An item of a round is *complete* when every annotator it was assigned to in that round submitted, there
are at least two of them (one annotator's labels are never agreement), and at least the round's overlap
(annotators per item, as assigned; the study's when the round did not record one). Only then is it
consolidated (adjudication), and only then are its annotators' labels final (annotation's
``final_reason``): the two use this one rule, so that an item is never locked and left unconsolidated,
and the lock tells an annotator nothing about whether the others agreed.
"""

from __future__ import annotations

from typing import Final

MIN_ANNOTATIONS: Final = 2  # one annotator's labels are never agreement


def required_annotations(overlap: int | None) -> int:
    """How many submitted annotations an item needs before it is complete: the round's overlap
    (annotators per item), never fewer than `MIN_ANNOTATIONS`."""
    return max(MIN_ANNOTATIONS, overlap or 0)


def ready(*, submitted: int, assigned: int, overlap: int | None) -> bool:
    """Whether an item's round is complete: all `assigned` annotations submitted, and at least
    `required_annotations(overlap)` of them. An item that is not complete waits (no decision, no
    disagreement, its labels still its annotators' to change)."""
    return assigned > 0 and submitted >= assigned and submitted >= required_annotations(overlap)
