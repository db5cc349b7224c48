"""The agreement dashboard."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from apps.accounts.permissions import access_study
from apps.core.context import study_context
from apps.core.http import HtmxHttpRequest

from .models import AgreementSnapshot


@login_required
@require_GET
def dashboard(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    study, role = access_study(request.user, slug, lead=True)
    snapshots = AgreementSnapshot.objects.filter(study=study)[:20]
    return render(
        request, "agreement/dashboard.html", study_context(study, role, "agreement", snapshots=snapshots)
    )
