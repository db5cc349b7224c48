"""The annotator's queue and the lead's rounds."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from apps.accounts.permissions import access_study
from apps.core.context import study_context
from apps.core.http import HtmxHttpRequest

from .models import Assignment, Round


@login_required
@require_GET
def queue(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    study, role = access_study(request.user, slug)
    mine = Assignment.objects.for_annotator(request.user).filter(study=study).select_related("item", "round")
    ctx = study_context(study, role, "queue", open=mine.open()[:200], done=mine.submitted().count())
    return render(request, "annotation/queue.html", ctx)


@login_required
@require_GET
def rounds(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    study, role = access_study(request.user, slug, lead=True)
    ctx = study_context(study, role, "rounds", rounds=Round.objects.filter(study=study))
    return render(request, "annotation/rounds.html", ctx)
