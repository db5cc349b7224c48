"""When a round's model outputs may be shown to its annotators (issue #21 point 5).

The one rule every annotator-facing read of model outputs must ask. It defers to the round's phase
(`apps.annotation.phases.is_blind`, the single answer to "is this round still blind?"): while a round is
blind, no model output on its items reaches its annotators. No annotator-facing page shows model outputs
on a blind round; the workbench's suggestions go through the stricter gate of `apps.annotation.suggestions`
(never in a reliability round, before or after its reveal).
"""

from __future__ import annotations

from apps.annotation.models import Round
from apps.annotation.phases import is_blind


def round_is_blind(round_: Round) -> bool:
    """True while the round's annotators must see no model output on its items: until it is revealed."""
    return is_blind(round_)
