"""The export page."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from apps.accounts.permissions import access_study
from apps.core.context import study_context
from apps.core.http import HtmxHttpRequest

from .models import ExportJob


@login_required
@require_GET
def export_page(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    study, role = access_study(request.user, slug, lead=True)
    jobs = ExportJob.objects.filter(study=study)[:20]
    return render(request, "export/export.html", study_context(study, role, "export", jobs=jobs))
