"""The corpus's writes of the grid's columns: screening decisions and the denormalised labelling progress.

Corpus owns the item table (docs/decisions/0006-one-writer-per-table.md): screening from the grid, the
screening page, the rounds page and the API all go through `screen`; the progress columns that
adjudication computes from rounds, assignments, reviews and decisions go through `set_progress`, which
takes the values as SQL expressions so that a whole study is refreshed in one statement, or, one item at a
time, through the statement `progress_writer` compiles once.
"""

from __future__ import annotations

from collections.abc import Callable

from django.db import DEFAULT_DB_ALIAS
from django.db.models import Expression, Q
from django.db.models.sql import UpdateQuery

from apps.accounts.models import User
from apps.core.sql import compiled_statement

from ..models import Item, ItemQuerySet, Relevance


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
    row (correlated subqueries given by adjudication), leaving out the items whose columns already hold
    those values (`_unchanged`). Returns how many items were written."""
    unchanged = _unchanged(round_number, progress, decision)
    return items.exclude(unchanged).update(round_number=round_number, progress=progress, decision=decision)


def _unchanged(round_number: Expression, progress: Expression, decision: Expression) -> Q:
    """The items whose three columns already hold these values (none of them is ever NULL). Each of the
    item table's 15 indexes (the full-text and trigram ones among them) takes a new entry for every row
    written, since these columns are indexed; the first of an item's two submissions changes nothing
    here (it stays `labelling`), and a row not written costs only the subqueries."""
    return Q(round_number=round_number, progress=progress, decision=decision)


# The item id compiled into `progress_writer`'s statement and replaced by the real one on every call.
_THE_ITEM = -2_000_000_017


def progress_writer(
    *, round_number: Expression, progress: Expression, decision: Expression
) -> Callable[[int], int]:
    """`set_progress` of one item, for the path every submission takes: the ORM compiles the UPDATE once
    (here, for the database in use), and each call of the returned function runs that SQL with the item's
    id and returns how many items were written (0 or 1; 0 also when its columns already held the values).
    Compiling the statement's correlated subqueries cost 2-3 ms a submission, and PostgreSQL's planning
    of them 1.5 ms, several times running it (0.3 ms): on PostgreSQL it is a prepared statement, planned
    once per connection (docs/decisions/0004)."""
    query = UpdateQuery(Item)
    query.add_q(Q(pk=_THE_ITEM) & ~_unchanged(round_number, progress, decision))
    query.add_update_values({"round_number": round_number, "progress": progress, "decision": decision})
    sql, params = query.get_compiler(DEFAULT_DB_ALIAS).as_sql()
    slots = [n for n, value in enumerate(params) if value == _THE_ITEM]
    if len(slots) != 1:
        raise RuntimeError(f"the progress statement holds the item id {len(slots)} times: {sql}")
    statement = compiled_statement("taxonomist_item_progress", sql, params)
    values = {f"p{n}": value for n, value in enumerate(params)}
    slot = f"p{slots[0]}"

    def write(item_id: int) -> int:
        return statement.run({**values, slot: item_id})[1]

    return write
