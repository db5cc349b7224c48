"""A round's phase, the one answer to "is this round still blind?" (docs/architecture.md, "Round phases").

A round is blind until a lead reveals it (`services.reveal_round`); then it is in discussion (when the
round, or its study by default, discusses) or in adjudication. Every rule that depends on blindness —
another annotator's labels and memos, model outputs, the reveal page, revisions — asks `is_blind`.
"""

from __future__ import annotations

from .models import Round, RoundPhase


def is_blind(round_: Round) -> bool:
    """Whether the round's labels (and memos, and model outputs) are still hidden from its annotators."""
    return round_.phase == RoundPhase.BLIND


def in_discussion(round_: Round) -> bool:
    """Whether the round's annotators may discuss and revise their labels (after the reveal)."""
    return round_.phase == RoundPhase.DISCUSSION


def discusses(round_: Round) -> bool:
    """Whether revealing the round opens a discussion: the round's choice, else its study's default."""
    if round_.discussion is not None:
        return round_.discussion
    return bool(round_.study.discuss_after_reveal)
