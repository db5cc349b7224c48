"""The study's list of causes of disagreement (leads and owners): add, rename, retire, bring back."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from apps.accounts.permissions import access_study
from apps.core.context import study_context
from apps.core.http import HtmxHttpRequest

from ..services import causes as service


@login_required
@require_http_methods(["GET", "POST"])
def causes(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    """GET lists the causes; POST `action` add (`name`), rename (`key`, `name`), retire or restore (`key`)."""
    study, role = access_study(request.user, slug, lead=True)
    if request.method == "POST":
        action, key, name = (request.POST.get(f, "") for f in ("action", "key", "name"))
        try:
            if action == "add":
                done = service.add_cause(study, name)
                messages.success(request, f"Cause “{done.name}” added.")
            elif action == "rename":
                done = service.rename_cause(study, key, name)
                messages.success(request, f"Cause {done.key} is now “{done.name}”.")
            elif action in ("retire", "restore"):
                done = service.retire_cause(study, key, retired=action == "retire")
                messages.success(request, f"Cause “{done.name}” {'retired' if done.retired else 'restored'}.")
            else:
                messages.error(request, f"Unknown action {action!r}: add, rename, retire or restore.")
        except service.CauseError as exc:
            messages.error(request, str(exc))
        return redirect("annotation:causes", slug=slug)
    listed = service.study_causes(study, with_retired=True)
    return render(
        request, "annotation/causes.html", study_context(study, role, "disagreements", causes=listed)
    )
