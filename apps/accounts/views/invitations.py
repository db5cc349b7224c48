"""The page an invitation's link opens: join the study, creating an account first if needed."""

from __future__ import annotations

from allauth.account.models import EmailAddress
from django.contrib import messages
from django.contrib.auth import login
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from apps.core.http import HtmxHttpRequest

from .. import invitations
from ..forms import InvitationSignupForm
from ..models import Invitation, User
from ..services import StudyError

_BACKEND = "apps.accounts.backends.UserBackend"


def _unusable(request: HtmxHttpRequest, exc: invitations.InvitationUnusable) -> HttpResponse:
    status = 404 if exc.reason == "unknown" else 410
    return render(
        request,
        "accounts/invitation_unusable.html",
        {"message": str(exc), "reason": exc.reason},
        status=status,
    )


def _joined(request: HtmxHttpRequest, invitation: Invitation, role: str) -> HttpResponse:
    request.session.pop(invitations.SESSION_KEY, None)
    messages.success(request, f"Welcome to “{invitation.study.name}”: you are {role} of this study.")
    return redirect("adjudication:study-detail", invitation.study.slug)


@require_http_methods(["GET", "POST"])
def invitation(request: HtmxHttpRequest, token: str) -> HttpResponse:
    """Anyone with the link. Signed in: a button joins the study. Signed out: a form creates the account
    (its address fixed to the invitation's when it was e-mailed), or a link to log in and come back."""
    try:
        found = invitations.check_usable(invitations.find(token))
    except invitations.InvitationUnusable as exc:
        return _unusable(request, exc)
    request.session[invitations.SESSION_KEY] = token  # a sign-up through GitHub, GitLab or ORCID may follow
    user = request.user
    form = None
    if isinstance(user, User):
        if request.method == "POST":
            try:
                membership = invitations.accept(token, user)
            except invitations.InvitationUnusable as exc:
                return _unusable(request, exc)
            return _joined(request, found, membership.role)
    else:
        form = InvitationSignupForm(request.POST or None, fixed_email=found.email)
        if request.method == "POST" and form.is_valid():
            data = form.cleaned_data
            try:
                new_user, membership = invitations.accept_with_signup(
                    token, username=data["username"], email=data["email"], password=data["password1"]
                )
            except invitations.InvitationUnusable as exc:
                return _unusable(request, exc)
            except StudyError as exc:
                form.add_error(None, str(exc))
            else:
                login(request, new_user, backend=_BACKEND)
                address = EmailAddress.objects.filter(user=new_user, verified=False).first()
                if address is not None:
                    address.send_confirmation(request, signup=True)
                    messages.info(request, f"We sent a link to {address.email} to verify it.")
                return _joined(request, found, membership.role)
    ctx = {"invitation": found, "form": form, "token": token}
    return render(request, "accounts/invitation.html", ctx)
