"""The study overview, the disagreement queue and the side-by-side adjudication page."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from apps.accounts.permissions import LEAD_ROLES, access_study
from apps.annotation.models import Assignment, AssignmentStatus
from apps.core.context import study_context
from apps.core.http import HtmxHttpRequest

from .status import progress_by_annotator, progress_by_round, study_status


@login_required
@require_GET
def study_detail(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    study, role = access_study(request.user, slug)
    status = study_status(study)
    ctx = study_context(study, role, "overview", status=status)
    if role in LEAD_ROLES:
        ctx["annotators"] = progress_by_annotator(study)
        ctx["rounds"] = progress_by_round(study)
    mine = Assignment.objects.for_annotator(request.user).filter(study=study)
    ctx["my_open"] = mine.filter(status=AssignmentStatus.OPEN).count()
    ctx["my_done"] = mine.filter(status=AssignmentStatus.SUBMITTED).count()
    return render(request, "adjudication/study_detail.html", ctx)


@login_required
@require_GET
def queue(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    from .models import Review

    study, role = access_study(request.user, slug, lead=True)
    reviews = Review.objects.open_disagreements().filter(study=study).select_related("item")[:200]
    return render(
        request, "adjudication/queue.html", study_context(study, role, "disagreements", reviews=reviews)
    )
