"""Log in, the user's studies, members of a study, its settings (archive, delete), and personal API tokens."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db.models import Count, OuterRef, Q, Subquery
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_http_methods, require_POST

from apps.core.context import study_context
from apps.core.htmx import is_htmx, render_page
from apps.core.http import HtmxHttpRequest

from . import services
from .forms import AddMemberForm, DeleteStudyForm, StudyForm, StudySettingsForm, TokenForm
from .models import ApiToken, Membership, Role, Study, User
from .permissions import access_study


class LogoutView(auth_views.LogoutView):
    """POST logs out (Django's view, with CSRF). GET, a typed or followed /logout/, shows a page asking to
    confirm with that POST form instead of a blank 405; with nobody logged in it goes to the login page."""

    http_method_names = ["get", "post", "options"]

    def get(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not request.user.is_authenticated:
            return redirect(settings.LOGIN_URL)
        return render(request, "accounts/logout.html")


@login_required
@require_http_methods(["GET", "POST"])
def study_list(request: HtmxHttpRequest) -> HttpResponse:
    user = request.user
    assert isinstance(user, User)
    # Members are counted in a subquery: visible_to() joins memberships filtered to this user, which a
    # plain Count("memberships") would count instead of all members.
    studies = (
        Study.objects.visible_to(user)
        .annotate(
            n_items=Count("items", distinct=True),
            n_members=Subquery(
                Membership.objects.filter(study=OuterRef("pk"))
                .values("study")
                .annotate(n=Count("id"))
                .values("n")
            ),
        )
        .order_by("name")
    )
    roles = dict(Membership.objects.filter(user=user).values_list("study_id", "role"))
    open_work = dict(
        Study.objects.visible_to(user)
        .annotate(n=Count("assignments", filter=Q(assignments__annotator=user, assignments__status="open")))
        .values_list("id", "n")
    )
    form = StudyForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            study = services.create_study(
                slug=form.cleaned_data["slug"],
                name=form.cleaned_data["name"],
                overlap=form.cleaned_data["overlap"],
                description=form.cleaned_data["description"],
                owner=user,
            )
        except services.StudyError as exc:
            form.add_error("slug", str(exc))
        else:
            study.consolidation_rule = form.cleaned_data["consolidation_rule"]
            study.save(update_fields=["consolidation_rule"])
            messages.success(
                request, f"Study “{study.name}” created. Next: load a codebook and import items."
            )
            return redirect("adjudication:study-detail", study.slug)
    rows = [{"study": s, "role": roles.get(s.id), "open": open_work.get(s.id, 0)} for s in studies]
    return render(request, "accounts/study_list.html", {"rows": rows, "form": form})


@login_required
@require_http_methods(["GET", "POST"])
def members(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    study, role = access_study(request.user, slug, lead=True)
    actor = request.user
    assert isinstance(actor, User)
    form = AddMemberForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        new_role = form.cleaned_data["role"]
        try:
            membership, created = services.set_member_role(
                study,
                form.cleaned_data["username"].strip(),
                new_role,
                actor=actor,
                password=form.cleaned_data["password"],
            )
        except services.UnknownUser as exc:
            form.add_error(None, f"{exc} Give a password to create the account.")
        except services.StudyError as exc:
            form.add_error(None, str(exc))
        else:
            verb = "added as" if created else "is now"
            messages.success(request, f"{membership.user.username} {verb} {new_role}.")
            return redirect("accounts:members", study.slug)
    memberships = (
        Membership.objects.filter(study=study).select_related("user").order_by("role", "user__username")
    )
    load = dict(
        Membership.objects.filter(study=study)
        .annotate(
            n_open=Count(
                "user__assignments",
                filter=Q(user__assignments__study=study, user__assignments__status="open"),
            ),
        )
        .values_list("user_id", "n_open")
    )
    rows = [{"m": m, "open": load.get(m.user_id, 0)} for m in memberships]
    ctx = study_context(study, role, "members", form=form, rows=rows)
    return render(request, "accounts/members.html", ctx)


@login_required
@require_http_methods(["GET", "POST"])
def profile(request: HtmxHttpRequest) -> HttpResponse:
    user = request.user
    assert isinstance(user, User)
    form = TokenForm(request.POST or None)
    new_token: str | None = None
    if request.method == "POST" and form.is_valid():
        _, new_token = ApiToken.issue(user, form.cleaned_data["name"])
        form = TokenForm()
    tokens = ApiToken.objects.filter(user=user)
    return render(request, "accounts/profile.html", {"form": form, "tokens": tokens, "new_token": new_token})


@login_required
@require_POST
def revoke_token(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    user = request.user
    assert isinstance(user, User)
    token = get_object_or_404(ApiToken.objects.filter(user=user), pk=pk)
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
        messages.success(request, f"Token “{token.name}” revoked.")
    return redirect("accounts:profile")


# --- study settings, archive, delete ---------------------------------------------------------------


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
