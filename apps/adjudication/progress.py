"""The items grid's labelling columns, kept on the item: its round, its progress and its decision.

The grid sorts and filters 100,000 items by these on an index of the item table (docs/performance.md);
reading them through joins cost 0.4 to 0.5 s a page. They are derived here, the lowest app that sees rounds,
assignments, reviews and decisions, and written by corpus (`set_progress`) in one statement:

- `round_number`: the highest-numbered round holding the item, 0 for none;
- `progress`: `decided` (a current decision) > `disagreement` (an open disagreement) > `unsampled` (in no
  round) > `waiting` (in a round, no assignment) > `labelling` (an assignment open) > `labelled`;
- `decision`: the current decision's provenance, "" for none.

`refresh_progress` runs inside the caller's transaction after every write that changes one of these:
a submission (the `annotation_submitted` receiver), a change of rounds or assignments (`items_moved`), a
decision taken, imported, withdrawn or restored. `refresh_progress(study=...)` recomputes a whole
study (a package restore does).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import cache
from typing import Any

from django.db.models import Case, Exists, OuterRef, Subquery, Value, When
from django.db.models.functions import Coalesce

from apps.accounts.models import Study
from apps.annotation.models import Assignment, AssignmentStatus, RoundItem
from apps.corpus.models import Item, Progress
from apps.corpus.services.grid_writes import progress_writer, set_progress

from .models import Decision, Review, ReviewState


def refresh_progress(item_ids: Iterable[int] | None = None, *, study: Study | None = None) -> int:
    """Recompute the grid's columns of the given items, or of every item of `study`. Returns how many
    items were written. One item (every submission) runs a statement compiled once (`_write_one`)."""
    if item_ids is None and study is None:
        raise ValueError("Give item ids or a study.")
    items = Item.objects.all()
    if study is not None:
        items = items.filter(study=study)
    if item_ids is not None:
        ids = list(dict.fromkeys(item_ids))
        if not ids:
            return 0
        if len(ids) == 1 and study is None:
            return _write_one()(ids[0])
        items = items.filter(pk__in=ids)
    return set_progress(items, **_columns())


@cache
def _write_one() -> Callable[[int], int]:
    return progress_writer(**_columns())


def _columns() -> dict[str, Any]:
    """The three columns as expressions over the item being written (`OuterRef("pk")`)."""
    rounds = RoundItem.objects.filter(item=OuterRef("pk"))
    current = Decision.objects.filter(item=OuterRef("pk"), is_current=True)
    assigned = Assignment.objects.filter(item=OuterRef("pk"))
    return {
        "round_number": Coalesce(
            Subquery(rounds.order_by("-round__number").values("round__number")[:1]), Value(0)
        ),
        "progress": Case(
            When(Exists(current), then=Value(Progress.DECIDED.value)),
            When(
                Exists(Review.objects.filter(item=OuterRef("pk"), state=ReviewState.DISAGREEMENT)),
                then=Value(Progress.DISAGREEMENT.value),
            ),
            When(~Exists(rounds), then=Value(Progress.UNSAMPLED.value)),
            When(~Exists(assigned), then=Value(Progress.WAITING.value)),
            When(Exists(assigned.filter(status=AssignmentStatus.OPEN)), then=Value(Progress.LABELLING.value)),
            default=Value(Progress.LABELLED.value),
        ),
        "decision": Coalesce(Subquery(current.order_by("-decided_at").values("provenance")[:1]), Value("")),
    }
