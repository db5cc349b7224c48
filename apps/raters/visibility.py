"""When a round's model outputs may be shown to its annotators (issue #21 point 5).

The one rule every annotator-facing read of model outputs must ask. Rounds have no phases yet and no
reliability flag, so every round is blind: no model output reaches an annotator. Issue #20's round
phases (blind → reveal → discussion → adjudication) replace the body of `round_is_blind` with "the round
is in its blind phase, or is a reliability round"; nothing else changes.
"""

from __future__ import annotations

from apps.annotation.models import Round


def round_is_blind(round_: Round) -> bool:
    """True while the round's annotators must see no model output on its items (today: always)."""
    return True
