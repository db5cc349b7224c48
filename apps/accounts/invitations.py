"""Invitations to a study: a lead invites an e-mail address or hands out a link, with a role and an expiry.

The one entry point of each step for the members page, the API and `invite`:

- `create_invitation`: who may invite with which role follows `services.set_member_role` (a lead invites
  annotators; an owner invites with any role; the command line, any). An invitation to an address is
  single-use and is e-mailed; a link is single- or multi-use (`max_uses` None: anyone holding it until it
  expires). The raw token exists only in the link: the database keeps its SHA-256 (`hash_token`).
- `accept` (a signed-in person) and `accept_with_signup` (a new account, made on the invitation's page)
  give the membership in one transaction under the invitation's row lock, so a single-use link accepted
  twice at once admits one person. Accepting never lowers a member's role.
- `revoke`: a revoked, expired or used-up link gives a page that says which (`InvitationUnusable`).
"""

from __future__ import annotations

import logging
import secrets
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.core.mail import send_mail
from django.db import transaction
from django.db.models import F
from django.http import HttpRequest
from django.urls import reverse
from django.utils import timezone

from .models import Invitation, Membership, Role, Study, User, hash_token
from .services import StudyError, add_member, check_may_set_role, create_user

logger = logging.getLogger(__name__)

SESSION_KEY = "taxonomist_invitation"
"""The session holds the raw token of the invitation whose page the person opened (for allauth's sign-up)."""

DEFAULT_EXPIRES_DAYS = 14
MAX_EXPIRES_DAYS = 365
_RANK = {Role.ANNOTATOR: 0, Role.LEAD: 1, Role.OWNER: 2}


class InvitationUnusable(StudyError):
    """The link cannot be used: unknown, revoked, expired or used up. `reason` names which."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True)
class Issued:
    invitation: Invitation
    token: str
    link: str
    mail_error: str = ""


def invitation_link(token: str) -> str:
    return str(settings.SITE_URL) + reverse("accounts:invitation", args=[token])


def create_invitation(
    study: Study,
    *,
    role: str,
    actor: User | None,
    email: str = "",
    expires_days: int = DEFAULT_EXPIRES_DAYS,
    max_uses: int | None = 1,
) -> Issued:
    """Create an invitation and, when it names an address, e-mail its link (a mail server that refuses is
    reported in `Issued.mail_error`: the invitation stands and its link can be handed over instead).
    Raises `MembershipRefused` when the actor may not give the role, `StudyError` for bad input."""
    if role not in Role.values:
        raise StudyError(f"Unknown role {role!r}; choose one of: {', '.join(Role.values)}.")
    if not 1 <= expires_days <= MAX_EXPIRES_DAYS:
        raise StudyError(f"--expires-days must be between 1 and {MAX_EXPIRES_DAYS} (got {expires_days}).")
    email = email.strip()
    if email:
        from django.core.exceptions import ValidationError
        from django.core.validators import validate_email

        try:
            validate_email(email)
        except ValidationError as exc:
            raise StudyError(f"{email!r} is not an e-mail address.") from exc
        max_uses = 1
    if max_uses is not None and max_uses < 1:
        raise StudyError(f"An invitation is used at least once (got {max_uses} uses).")
    check_may_set_role(study, actor, email or "a new member", None, role)
    token = "inv_" + secrets.token_urlsafe(32)
    invitation = Invitation.objects.create(
        study=study,
        role=role,
        email=email,
        token_hash=hash_token(token),
        max_uses=max_uses,
        expires_at=timezone.now() + timedelta(days=expires_days),
        created_by=actor,
    )
    link = invitation_link(token)
    mail_error = _send(invitation, link, actor) if email else ""
    return Issued(invitation, token, link, mail_error)


def _send(invitation: Invitation, link: str, actor: User | None) -> str:
    who = f"{actor.username} invites you" if actor is not None else "You are invited"
    expires = timezone.localtime(invitation.expires_at).strftime("%Y-%m-%d %H:%M %Z")
    body = (
        f"{who} to join the study “{invitation.study.name}” on Taxonomist as {invitation.role}.\n\n"
        f"Accept the invitation (and create your account if you have none):\n{link}\n\n"
        f"The link works once and expires on {expires}. If you did not expect it, ignore this message.\n"
    )
    subject = f"[Taxonomist] Invitation to {invitation.study.name}"[:200]
    try:
        send_mail(subject, body, settings.DEFAULT_FROM_EMAIL, [invitation.email])
    except Exception as exc:  # the invitation stands: the lead is told and can hand the link over
        logger.warning("Could not e-mail invitation %s: %s", invitation.pk, exc)
        return f"The invitation e-mail could not be sent ({exc.__class__.__name__}: {exc})."
    return ""


def find(token: str) -> Invitation | None:
    return (
        Invitation.objects.select_related("study", "created_by").filter(token_hash=hash_token(token)).first()
    )


_REFUSALS = {
    "unknown": "This invitation link is not valid: check that it was copied whole, or ask for a new one.",
    "revoked": "This invitation was revoked by a lead of the study: ask them for a new one.",
    "expired": "This invitation has expired: ask a lead of the study for a new one.",
    "used": "This invitation has already been used: ask a lead of the study for a new one.",
}


def check_usable(invitation: Invitation | None) -> Invitation:
    """The invitation, or `InvitationUnusable` saying why it cannot be accepted."""
    if invitation is None:
        raise InvitationUnusable("unknown", _REFUSALS["unknown"])
    status = invitation.status
    if status != "pending":
        raise InvitationUnusable(status, _REFUSALS[status])
    return invitation


def _locked(token: str) -> Invitation:
    invitation = (
        Invitation.objects.select_for_update(of=("self",))
        .select_related("study")
        .filter(token_hash=hash_token(token))
        .first()
    )
    return check_usable(invitation)


def _admit(invitation: Invitation, user: User) -> Membership:
    current = Membership.objects.filter(study=invitation.study, user=user).first()
    if current is not None and _RANK[Role(current.role)] >= _RANK[Role(invitation.role)]:
        membership = current  # accepting never lowers a role
    else:
        membership, _ = add_member(invitation.study, user, invitation.role)
    Invitation.objects.filter(pk=invitation.pk).update(uses=F("uses") + 1, last_used_at=timezone.now())
    return membership


def accept(token: str, user: User) -> Membership:
    """A signed-in person accepts: they become a member with the invitation's role (or keep a higher one).
    Raises `InvitationUnusable`."""
    with transaction.atomic():
        return _admit(_locked(token), user)


def accept_with_signup(token: str, *, username: str, email: str, password: str) -> tuple[User, Membership]:
    """Create an account on the invitation's page and admit it, in one transaction. The address of an
    invitation sent by e-mail is the account's, verified (the link reached it); another address is
    recorded unverified (the caller sends its verification link). Raises `InvitationUnusable`, or
    `StudyError` naming the field at fault (username, password, an address already in use)."""
    from allauth.account.models import EmailAddress

    email = email.strip()
    with transaction.atomic():
        invitation = _locked(token)
        if invitation.email:
            email = invitation.email
        if (
            User.objects.filter(email__iexact=email).exists()
            or EmailAddress.objects.filter(email__iexact=email).exists()
        ):
            raise StudyError(
                f"An account already uses the address {email}: log in to accept the invitation "
                "(or reset its password)."
            )
        user = create_user(username.strip(), password, email=email)
        EmailAddress.objects.create(user=user, email=email, primary=True, verified=bool(invitation.email))
        return user, _admit(invitation, user)


def revoke(invitation: Invitation, *, actor: User | None) -> Invitation:
    """Revoke a pending invitation: its link stops working at once. A lead revokes invitations they could
    have made (annotators'); an owner, any. Revoking twice changes nothing."""
    check_may_set_role(invitation.study, actor, invitation.email or "a new member", None, invitation.role)
    if invitation.revoked_at is None:
        invitation.revoked_at = timezone.now()
        invitation.save(update_fields=["revoked_at"])
    return invitation


def pending_in_session(request: HttpRequest) -> Invitation | None:
    """The pending invitation whose page this browser opened last, if it still can be accepted."""
    session = getattr(request, "session", None)
    token = session.get(SESSION_KEY) if session is not None else None
    if not isinstance(token, str):
        return None
    invitation = find(token)
    return invitation if invitation is not None and invitation.status == "pending" else None
