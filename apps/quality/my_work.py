"""My work (docs/quality.md): an annotator's own progress per round, their training scores and, for a round
that is revealed (or, in a study that reveals labels after a decision, whose every item of theirs is
decided), their own agreement with the final labels. Any member reaches it; it reads only the user's own
assignments and figures, never another annotator's (tests/security/test_blindness.py).

Gold checks seeded into a real round are not told apart here either: their judgements are left out of the
figures (a lead reads them on the Quality screen), and the progress counts them like any item.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.db.models import Count, Q
from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from apps.accounts.models import Study, User
from apps.accounts.permissions import access_study
from apps.annotation.gold_score import Score
from apps.annotation.models import Assignment, AssignmentStatus, RoundKind, RoundPhase
from apps.annotation.services import decided_item_ids
from apps.annotation.services import gold as gold_services
from apps.core.context import study_context
from apps.core.http import HtmxHttpRequest

from . import report
from .reads import ReportError, load_report_data


def _progress(user: User, study: Study) -> list[dict[str, Any]]:
    rows = (
        Assignment.objects.for_annotator(user)
        .filter(study=study)
        .values("round_id", "round__number", "round__name", "round__kind", "round__phase", "round__pass_mark")
        .annotate(total=Count("id"), done=Count("id", filter=Q(status=AssignmentStatus.SUBMITTED)))
        .order_by("round__number")
    )
    return [
        {**row, "percent": round(100 * row["done"] / row["total"]) if row["total"] else 0} for row in rows
    ]


def _open_rounds(user: User, study: Study, progress: list[dict[str, Any]]) -> set[int]:
    """The round numbers whose agreement the user may see: revealed, or (a study that reveals labels after
    a decision) with every one of the user's items decided. Never a training round (its score says it)."""
    shown = {r["round__number"] for r in progress if r["round__phase"] != RoundPhase.BLIND}
    if study.reveal_labels_after_decision:
        pending = [r for r in progress if r["round__phase"] == RoundPhase.BLIND]
        for row in pending:
            items = set(
                Assignment.objects.for_annotator(user)
                .reliability()
                .filter(round_id=row["round_id"])
                .values_list("item_id", flat=True)
            )
            if items and decided_item_ids(items) == items:
                shown.add(row["round__number"])
    training = {r["round__number"] for r in progress if r["round__kind"] == RoundKind.TRAINING}
    return shown - training


def own_agreement(user: User, study: Study, rounds: set[int]) -> list[report.ReportRow]:
    """The user's report rows (agreement with the final decisions) over `rounds` only, per round and over
    them all; their reliability judgements only."""
    if not rounds:
        return []
    try:
        data = load_report_data(study)
    except ReportError:
        return []
    mine = [j for j in data.judgements if j.annotator == user.username and not j.gold and j.round in rounds]
    timings = [t for t in data.timings if t.annotator == user.username and t.round in rounds]
    return report.annotator_rows(mine, data.finals, timings)


@login_required
@require_GET
def my_work(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    study, role = access_study(request.user, slug)
    user: User = request.user  # type: ignore[assignment]
    progress = _progress(user, study)
    scores = gold_services.training_scores(study, user=user)
    training = [
        {
            "row": row,
            "score": scores.get((row["round_id"], user.pk), Score(0, 0)),
            "passed": row["done"] == row["total"]
            and scores.get((row["round_id"], user.pk), Score(0, 0)).passes(row["round__pass_mark"]),
        }
        for row in progress
        if row["round__kind"] == RoundKind.TRAINING
    ]
    rounds = _open_rounds(user, study, progress)
    ctx = study_context(
        study,
        role,
        "my-work",
        progress=progress,
        training=training,
        agreement=own_agreement(user, study, rounds),
        locked=gold_services.training_lock(user, study),
    )
    return render(request, "quality/my_work.html", ctx)
