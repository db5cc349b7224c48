"""The annotator's queue: my assignments per round, the open ones in queue order, those I submitted,
and "Start labelling" (`next_item`). Another annotator's assignments are never read
(`Assignment.objects.for_annotator`)."""

from __future__ import annotations

from typing import Any, NamedTuple

from django.contrib import messages
from django.db.models import Count, Q
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.timezone import localtime

from apps.accounts.models import Study
from apps.core.context import study_context
from apps.core.generations import study_figures
from apps.core.http import HtmxHttpRequest
from apps.corpus.titles import readable_title

from .. import decided, services
from ..models import Assignment, AssignmentQuerySet, AssignmentStatus, Round, RoundPhase
from ..services import gold, send_back
from .common import labelling_page, request_user

QUEUE_SIZE = 50  # open items listed; "Start labelling" walks the rest in the same order


def _per_round(mine: AssignmentQuerySet) -> list[dict[str, Any]]:
    """My assignments per round, done / total: cached between changes of the study (a count over every
    assignment of mine, 14 ms for 20,000)."""
    per_round: list[dict[str, Any]] = [
        dict(row)
        for row in mine.values("round", "round__number", "round__name", "round__phase", "round__kind")
        # columns of the `assignment_progress` index only (the study's filter aside): see
        # workbench.py `_progress`
        .annotate(total=Count("round"), done=Count("status", filter=Q(status=AssignmentStatus.SUBMITTED)))
        .order_by("round__number")
    ]
    for row in per_round:
        row["percent"] = round(100 * row["done"] / row["total"]) if row["total"] else 0
        row["phase_label"] = RoundPhase(row["round__phase"]).label
    return per_round


class QueueRow(NamedTuple):
    """A row of my queue as the page prints it: read as a tuple of columns, not as three models (151 rows
    built as an assignment, its item and its round were a fifth of the page at 100,000 items)."""

    pk: int
    item_id: int
    round_number: int
    round: str  # as `Round.__str__` names it
    title: str  # as `Item.display_title` gives it
    submitted: str  # local time, "" when not submitted


#: What a row of my queue reads; its link is `label_url` and its id (100 `{% url %}` cost 4 ms of the page).
QUEUE_COLUMNS = ("pk", "item_id", "round__number", "round__name", "item__title", "item__url", "submitted_at")


def _queue_rows(rows: AssignmentQuerySet) -> list[QueueRow]:
    return [
        QueueRow(
            pk, item_id, number, Round.display_name(name, number), title or readable_title(url),
            localtime(at).strftime("%Y-%m-%d %H:%M") if at is not None else "",
        )
        for pk, item_id, number, name, title, url, at in rows.values_list(*QUEUE_COLUMNS)
    ]  # fmt: skip


def _open_rows(rows: AssignmentQuerySet, per_round: list[dict[str, Any]]) -> list[QueueRow]:
    """My first `QUEUE_SIZE` + 1 open assignments in queue order (round number, then position), decided
    items left out except gold checks (their item is decided by design: docs/quality.md). Read round by
    round from the `assignment_queue` index, stopping once enough are found: sorting every open assignment
    of mine by its round's number cost 10 ms for 4,000."""
    decided_item = Q(gold=False) & decided.reader().review_decided("item__")
    found: list[QueueRow] = []
    for row in per_round:  # in round number order
        wanted = QUEUE_SIZE + 1 - len(found)
        if wanted <= 0:
            break
        if row["done"] == row["total"]:  # nothing open in this round (counted with the figures)
            continue
        in_round = rows.open().filter(round_id=row["round"]).exclude(decided_item)
        found += _queue_rows(in_round.order_by("position", "id")[:wanted])
    return found


@labelling_page("GET")
def queue(request: HtmxHttpRequest, study: Study, role: str) -> HttpResponse:
    """My assignments in the study: per round done / total, the open ones, and those I may still edit."""
    mine = Assignment.objects.for_annotator(request.user).filter(study=study)
    per_round = study_figures(study, f"annotation.queue_rounds:{request.user.pk}", lambda: _per_round(mine))
    open_rows = _open_rows(mine, per_round)  # one more than shown: are there others?
    ctx = study_context(
        study,
        role,
        "queue",
        locked=gold.training_lock(request_user(request), study),
        per_round=per_round,
        open=open_rows[:QUEUE_SIZE],
        more_open=len(open_rows) > QUEUE_SIZE,
        sent_back=send_back.sent_back_ids([a.pk for a in open_rows[:QUEUE_SIZE]]),
        submitted=_queue_rows(mine.submitted().order_by("-submitted_at")[:50]),
        done=sum(r["done"] for r in per_round),
        total=sum(r["total"] for r in per_round),
        label_url=reverse("annotation:workbench", args=[study.slug, 0]).removesuffix("0/"),
    )
    return render(request, "annotation/queue.html", ctx)


@labelling_page("GET")
def next_item(request: HtmxHttpRequest, study: Study, role: str) -> HttpResponse:
    """Redirect to my next open assignment, or to my queue when none is left."""
    assignment = services.next_open_assignment(request_user(request), study)
    if assignment is None:
        messages.success(request, "Nothing left to label in this study. Thank you!")
        return redirect("annotation:queue", slug=study.slug)
    return redirect("annotation:workbench", slug=study.slug, pk=assignment.pk)
