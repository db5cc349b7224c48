"""A study's settings (leads and owners), its archive and its deletion (owners)."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from apps.core.context import study_context
from apps.core.htmx import is_htmx, render_page
from apps.core.http import HtmxHttpRequest

from .. import services
from ..forms import DeleteStudyForm, StudySettingsForm
from ..models import Role, Study, User
from ..permissions import access_study


def _settings_context(study: Study, role: str, **forms: Any) -> dict[str, Any]:
    forms.setdefault("form", StudySettingsForm(instance=study))
    forms.setdefault("delete_form", DeleteStudyForm(study.slug))
    return study_context(study, role, "settings", is_owner=role == Role.OWNER, **forms)


@login_required
@require_http_methods(["GET", "POST"])
def study_settings(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    """The study's settings (leads and owners); an invalid form comes back with its errors under each
    field (422 for htmx, 400 for the page). An archived study shows them read-only."""
    study, role = access_study(request.user, slug, lead=True)
    actor = request.user
    assert isinstance(actor, User)
    form = StudySettingsForm(request.POST or None, instance=Study.objects.get(pk=study.pk))
    saved: list[str] = []
    status = 200
    if request.method == "POST":
        if form.is_valid():
            changes = {name: form.cleaned_data[name] for name in services.SETTINGS_FIELDS}
            saved = services.update_study_settings(study, changes, actor=actor)
            if not is_htmx(request, target="settings-form"):
                messages.success(request, _saved_message(saved))
                return redirect("accounts:settings", study.slug)
        else:
            status = 400
    ctx = _settings_context(study, role, form=form, saved=_saved_message(saved) if saved else "")
    return render_page(
        request,
        "accounts/settings.html",
        ctx,
        partial="#settings-form",
        target="settings-form",
        status=status,
        partial_status=422 if status == 400 else 200,
    )


def _saved_message(saved: list[str]) -> str:
    if not saved:
        return "Nothing changed."
    return (
        "Saved: " + ", ".join(str(StudySettingsForm.base_fields[name].label or name) for name in saved) + "."
    )


@login_required
@require_POST
def archive_study(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    """Archive (`archived=1`) or unarchive (`archived=0`) the study: owners only."""
    study, _ = access_study(request.user, slug, lead=True, archived_ok=True)
    actor = request.user
    assert isinstance(actor, User)
    archived = request.POST.get("archived") == "1"
    try:
        services.set_archived(study, archived, actor=actor)
    except services.MembershipRefused as exc:
        raise PermissionDenied(str(exc)) from exc
    if archived:
        messages.success(request, f"Study {study.slug} archived: it is read-only until you unarchive it.")
    else:
        messages.success(request, f"Study {study.slug} unarchived: it can be changed again.")
    return redirect("accounts:settings", study.slug)


@login_required
@require_POST
def delete_study(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    """Delete the study once its slug is typed exactly: owners only."""
    study, role = access_study(request.user, slug, lead=True, archived_ok=True)
    actor = request.user
    assert isinstance(actor, User)
    if role != Role.OWNER:
        raise PermissionDenied("Only an owner of this study can delete it.")
    delete_form = DeleteStudyForm(study.slug, request.POST)
    if not delete_form.is_valid():
        ctx = _settings_context(study, role, delete_form=delete_form)
        return render(request, "accounts/settings.html", ctx, status=400)
    services.delete_study(study, confirm=delete_form.cleaned_data["confirm"], actor=actor)
    messages.success(request, f"Study {slug} and everything in it deleted.")
    return redirect("accounts:study-list")
