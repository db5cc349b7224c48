"""Log out, the user's studies, and their profile (personal API tokens, links to their account pages)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.db.models import Count, OuterRef, Q, Subquery
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_http_methods, require_POST

from apps.core.http import HtmxHttpRequest

from .. import services
from ..forms import StudyForm, TokenForm
from ..models import ApiToken, Membership, Study, User


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
