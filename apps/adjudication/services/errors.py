"""What a refused decision tells the lead: `AdjudicationError` (with each problem of the labels) and
`DecisionConflict` (someone else decided first), with the conflict message saying who and when."""

from __future__ import annotations

from collections.abc import Sequence

from django.utils import timezone

from ..models import Decision


class AdjudicationError(Exception):
    """A decision refused, with the reason for the lead. `problems` lists each (finding, dimension, value)
    problem when the labels themselves are wrong."""

    def __init__(self, message: str, problems: Sequence[str] = ()) -> None:
        self.message = message
        self.problems = list(problems)
        super().__init__(message + ("".join(f"\n  {p}" for p in self.problems)))


class DecisionConflict(AdjudicationError):
    """Someone else's decision on the item became current while this one was being made. `current` is
    that decision (None when the one the lead started from was withdrawn)."""

    def __init__(self, message: str, current: Decision | None) -> None:
        self.current = current
        super().__init__(message)


def conflict_message(current: Decision | None, expected: int | None) -> str:
    if current is None:
        return (
            "The decision you started from is no longer current (it was withdrawn when the annotations "
            "changed). Nothing was saved: reload the item and decide again."
        )
    who = (
        str(current.decided_by)
        if current.decided_by
        else f"an {current.get_provenance_display().lower()} decision"
    )
    when = timezone.localtime(current.decided_at).strftime("%Y-%m-%d %H:%M")
    if expected is None:
        return (
            f"{who} decided this item at {when} while you were working on it. Your decision was not saved: "
            "review the current decision and decide again if you disagree."
        )
    return (
        f"The decision you started from was replaced by a newer one ({who}, {when}). Your decision was not "
        "saved: review the current decision and decide again if you disagree."
    )
