"""The corpus's writes of the grid's columns: screening decisions and the denormalised labelling progress.

Corpus owns the item table (docs/decisions/0006-one-writer-per-table.md): screening from the grid, the
screening page, the rounds page and the API all go through `screen`; the progress columns that
adjudication computes from rounds, assignments, reviews and decisions go through `set_progress`, which
takes the values as SQL expressions so that a whole study is refreshed in one statement.
"""

from __future__ import annotations

from django.db.models import Expression

from apps.accounts.models import User

from ..models import ItemQuerySet, Relevance


class ScreeningError(ValueError):
    """A screening decision that cannot be recorded; the message says why."""


def screen(items: ItemQuerySet, relevance: str, *, reason: str = "", actor: User | None = None) -> int:
    """Record a relevance decision on `items` (one statement, whatever their number). An irrelevant item
    needs a reason (it is reported with the sample); back to unscreened clears reason and screener.
    Returns how many items were written. Raises ScreeningError on an unknown decision or a missing reason."""
    if relevance not in Relevance.values:
        raise ScreeningError(f"Unknown relevance {relevance!r}; choose one of {', '.join(Relevance.values)}.")
    reason = reason.strip()
    if relevance == Relevance.IRRELEVANT and not reason:
        raise ScreeningError("Say why the item is irrelevant: the reason is reported with the sample.")
    unscreened = relevance == Relevance.UNSCREENED
    return items.update(
        relevance=relevance,
        relevance_reason="" if unscreened else reason[:500],
        screened_by=None if unscreened else actor,
    )


def set_progress(
    items: ItemQuerySet, *, round_number: Expression, progress: Expression, decision: Expression
) -> int:
    """Write the grid's round, progress and decision columns of `items` from expressions evaluated per
    row (correlated subqueries given by adjudication). Returns how many items were written."""
    return items.update(round_number=round_number, progress=progress, decision=decision)
