"""The members screen: who belongs to a study, their roles, removal, and the study's invitations.

Leads and owners only (`access_study(..., lead=True)`); what each may change is the services' rule
(`services.set_member_role`, `services.remove_member`, `invitations.create_invitation` / `revoke`), so the
page and the API refuse the same things with the same message.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import Count, Q
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from apps.core.context import study_context
from apps.core.http import HtmxHttpRequest

from .. import invitations, services
from ..forms import AddMemberForm, InvitationForm, MemberRoleForm
from ..models import Invitation, Membership, Role, Study, User
from ..permissions import access_study

INVITE = "invite"  # the invitation form's prefix: the page holds the add-member form too


def _actor(request: HtmxHttpRequest) -> User:
    user = request.user
    assert isinstance(user, User)  # login_required ran first
    return user


def _page(
    request: HtmxHttpRequest, study: Study, role: str, *, status: int = 200, **extra: Any
) -> HttpResponse:
    """The members page: members with their open and submitted work, pending invitations, the forms."""
    in_study = Q(user__assignments__study=study)
    memberships = (
        Membership.objects.filter(study=study)
        .select_related("user")
        .annotate(
            n_open=Count("user__assignments", filter=in_study & Q(user__assignments__status="open")),
            n_done=Count("user__assignments", filter=in_study & Q(user__assignments__status="submitted")),
        )
        .order_by("role", "user__username")
    )
    owner = role == Role.OWNER  # a lead manages annotators only (services.check_may_set_role)
    rows = [
        {"m": m, "is_self": m.user_id == request.user.pk, "may_remove": owner or m.role == Role.ANNOTATOR}
        for m in memberships
    ]
    form = extra.pop("form", None) or AddMemberForm()
    invite_form = extra.pop("invite_form", None) or InvitationForm(prefix=INVITE)
    if not owner:  # offer a lead only the role a lead may give (a crafted post gets the service's reason)
        for shown in (form, invite_form):
            shown.fields["role"].widget.choices = [(Role.ANNOTATOR.value, Role.ANNOTATOR.label)]
    ctx = study_context(
        study,
        role,
        "members",
        rows=rows,
        invitations=Invitation.objects.filter(study=study).pending().select_related("created_by"),
        form=form,
        invite_form=invite_form,
        roles=Role.choices,
        may_change_roles=owner,
        **extra,
    )
    return render(request, "accounts/members.html", ctx, status=status)


@login_required
@require_http_methods(["GET", "POST"])
def members(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    """The page; POST adds a member or changes a member's role by username (creating the account when a
    password is given)."""
    study, role = access_study(request.user, slug, lead=True)
    form = AddMemberForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        new_role = form.cleaned_data["role"]
        try:
            membership, created = services.set_member_role(
                study,
                form.cleaned_data["username"].strip(),
                new_role,
                actor=_actor(request),
                password=form.cleaned_data["password"],
            )
        except services.UnknownUser as exc:
            form.add_error(None, f"{exc} Give a password to create the account, or invite them.")
        except services.StudyError as exc:
            form.add_error(None, str(exc))
        else:
            verb = "added as" if created else "is now"
            messages.success(request, f"{membership.user.username} {verb} {new_role}.")
            return redirect("accounts:members", study.slug)
    return _page(request, study, role, form=form)


@login_required
@require_POST
def member_role(request: HtmxHttpRequest, slug: str, pk: int) -> HttpResponse:
    study, _ = access_study(request.user, slug, lead=True)
    membership = get_object_or_404(Membership.objects.filter(study=study).select_related("user"), pk=pk)
    form = MemberRoleForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Choose a role: annotator, lead or owner.")
        return redirect("accounts:members", study.slug)
    new_role = form.cleaned_data["role"]
    try:
        services.set_member_role(study, membership.user.username, new_role, actor=_actor(request))
    except services.StudyError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"{membership.user.username} is now {new_role}.")
    return redirect("accounts:members", study.slug)


@login_required
@require_POST
def member_remove(request: HtmxHttpRequest, slug: str, pk: int) -> HttpResponse:
    study, _ = access_study(request.user, slug, lead=True)
    membership = get_object_or_404(Membership.objects.filter(study=study).select_related("user"), pk=pk)
    try:
        removal = services.remove_member(study, membership.user, actor=_actor(request))
    except services.StudyError as exc:
        messages.error(request, str(exc))
        return redirect("accounts:members", study.slug)
    released = (
        f" Their {removal.released} open item{'s' if removal.released != 1 else ''} went back to the "
        "pool: assign the round again to hand them out."
        if removal.released
        else ""
    )
    messages.success(request, f"{removal.username} was removed; their submitted labels stay.{released}")
    if membership.user_id == request.user.pk:
        return redirect("accounts:study-list")
    return redirect("accounts:members", study.slug)


@login_required
@require_POST
def invitation_create(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    """Invite an address (the link is e-mailed) or create a link; a link is shown once, on this page."""
    study, role = access_study(request.user, slug, lead=True)
    form = InvitationForm(request.POST, prefix=INVITE)
    if not form.is_valid():
        return _page(request, study, role, invite_form=form)
    data = form.cleaned_data
    try:
        issued = invitations.create_invitation(
            study,
            role=data["role"],
            actor=_actor(request),
            email=data["email"] or "",
            expires_days=data["expires_days"],
            max_uses=data["max_uses"],
        )
    except services.StudyError as exc:
        form.add_error(None, str(exc))
        return _page(request, study, role, invite_form=form)
    if issued.invitation.email and not issued.mail_error:
        messages.success(
            request, f"Invitation sent to {issued.invitation.email} as {issued.invitation.role}."
        )
        return redirect("accounts:members", study.slug)
    return _page(request, study, role, issued=issued)


@login_required
@require_POST
def invitation_revoke(request: HtmxHttpRequest, slug: str, pk: int) -> HttpResponse:
    study, _ = access_study(request.user, slug, lead=True)
    invitation = get_object_or_404(Invitation.objects.filter(study=study).select_related("study"), pk=pk)
    try:
        invitations.revoke(invitation, actor=_actor(request))
    except services.StudyError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"Invitation for {invitation.email or 'the link'} revoked.")
    return redirect("accounts:members", study.slug)
