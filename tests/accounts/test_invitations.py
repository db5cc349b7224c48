"""Invitations: hashed tokens, who may invite with which role, accepting (with or without an account),
and the clear page of a link that cannot be used; from the page, the API and `invite`."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from allauth.account.models import EmailAddress
from django.core import mail
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from apps.accounts import invitations
from apps.accounts.invitations import InvitationUnusable, accept, accept_with_signup, create_invitation
from apps.accounts.models import Invitation, Membership, Role, Study, User
from apps.accounts.services import MembershipRefused
from tests.conftest import login

pytestmark = pytest.mark.django_db

PASSWORD = "a-long-enough-passphrase"


def token_of(link: str) -> str:
    found = re.search(r"/invite/([^/]+)/", link)
    assert found is not None, link
    return found.group(1)


def role_of(study: Study, user: User) -> str | None:
    return Membership.objects.filter(study=study, user=user).values_list("role", flat=True).first()


def test_only_the_tokens_hash_is_stored_and_the_link_carries_the_token(study: Study, lead: User) -> None:
    issued = create_invitation(study, role=Role.ANNOTATOR, actor=lead, max_uses=None)
    stored = Invitation.objects.get(pk=issued.invitation.pk)
    assert issued.token in issued.link
    assert stored.token_hash != issued.token and issued.token not in stored.token_hash
    assert len(stored.token_hash) == 64


def test_an_invitation_by_email_is_sent_and_single_use(study: Study, lead: User) -> None:
    issued = create_invitation(study, role=Role.ANNOTATOR, actor=lead, email="ada@example.org", max_uses=5)
    assert issued.invitation.max_uses == 1 and issued.mail_error == ""
    [message] = mail.outbox
    assert message.to == ["ada@example.org"] and issued.link in message.body
    assert "Distributed training faults" in message.subject


def test_a_lead_invites_annotators_only_and_an_owner_any_role(study: Study, lead: User, owner: User) -> None:
    with pytest.raises(MembershipRefused, match="Only an owner can make someone a lead"):
        create_invitation(study, role=Role.LEAD, actor=lead)
    with pytest.raises(MembershipRefused, match="Only an owner can make someone an owner"):
        create_invitation(study, role=Role.OWNER, actor=lead)
    assert create_invitation(study, role=Role.OWNER, actor=owner).invitation.role == Role.OWNER


def test_an_annotator_cannot_invite(study: Study, annotator_a: User) -> None:
    with pytest.raises(MembershipRefused):
        create_invitation(study, role=Role.ANNOTATOR, actor=annotator_a)


def test_accepting_with_signup_creates_the_account_with_its_verified_address(
    study: Study, lead: User
) -> None:
    issued = create_invitation(study, role=Role.ANNOTATOR, actor=lead, email="ada@example.org")
    user, membership = accept_with_signup(
        issued.token, username="ada", email="someone-else@example.org", password=PASSWORD
    )
    assert membership.role == Role.ANNOTATOR and user.email == "ada@example.org"  # the invited address
    assert EmailAddress.objects.get(user=user).verified
    with pytest.raises(InvitationUnusable) as refused:
        accept(issued.token, lead)
    assert refused.value.reason == "used"


def test_a_multi_use_link_admits_up_to_its_uses(
    study: Study, lead: User, annotator_a: User, outsider: User
) -> None:
    issued = create_invitation(study, role=Role.ANNOTATOR, actor=lead, max_uses=2)
    accept(issued.token, outsider)
    accept_with_signup(issued.token, username="ada", email="ada@example.org", password=PASSWORD)
    assert EmailAddress.objects.get(email="ada@example.org").verified is False  # a link proves no address
    with pytest.raises(InvitationUnusable, match="already been used"):
        accept(issued.token, annotator_a)
    assert Invitation.objects.get(pk=issued.invitation.pk).uses == 2


def test_accepting_never_lowers_a_role(study: Study, owner: User, lead: User) -> None:
    issued = create_invitation(study, role=Role.ANNOTATOR, actor=owner, max_uses=None)
    assert accept(issued.token, lead).role == Role.LEAD
    upgrade = create_invitation(study, role=Role.OWNER, actor=owner)
    assert accept(upgrade.token, lead).role == Role.OWNER


def test_signup_with_an_address_already_in_use_is_refused_and_writes_nothing(
    study: Study, lead: User
) -> None:
    User.objects.create_user("taken", email="taken@example.org", password=PASSWORD)
    issued = create_invitation(study, role=Role.ANNOTATOR, actor=lead)
    with pytest.raises(invitations.StudyError, match=r"already uses the address TAKEN@example\.org"):
        accept_with_signup(issued.token, username="new", email="TAKEN@example.org", password=PASSWORD)
    assert not User.objects.filter(username="new").exists()
    assert Invitation.objects.get(pk=issued.invitation.pk).uses == 0


@pytest.mark.parametrize(
    ("spoil", "reason", "status", "text"),
    [
        ("revoke", "revoked", 410, "This invitation was revoked"),
        ("expire", "expired", 410, "This invitation has expired"),
        ("use", "used", 410, "This invitation has been used"),
        ("forge", "unknown", 404, "This invitation link is not valid"),
    ],
)
def test_an_unusable_link_gives_a_clear_page(
    study: Study, lead: User, outsider: User, spoil: str, reason: str, status: int, text: str
) -> None:
    issued = create_invitation(study, role=Role.ANNOTATOR, actor=lead)
    token = issued.token
    if spoil == "revoke":
        invitations.revoke(issued.invitation, actor=lead)
    elif spoil == "expire":
        Invitation.objects.filter(pk=issued.invitation.pk).update(
            expires_at=timezone.now() - timedelta(seconds=1)
        )
    elif spoil == "use":
        accept(token, outsider)
    else:
        token = token + "x"
    response = Client().get(reverse("accounts:invitation", args=[token]))
    assert response.status_code == status
    assert text in response.content.decode()
    assert f'data-reason="{reason}"' in response.content.decode()


def test_the_invitation_page_signs_up_and_joins(study: Study, lead: User) -> None:
    issued = create_invitation(study, role=Role.ANNOTATOR, actor=lead, email="ada@example.org")
    client = Client()
    url = reverse("accounts:invitation", args=[issued.token])
    page = client.get(url).content.decode()
    assert "lena invites you" in page and "ada@example.org" in page
    response = client.post(url, {"username": "ada", "password1": PASSWORD, "password2": PASSWORD})
    assert response.status_code == 302 and response["Location"] == reverse(
        "adjudication:study-detail", args=["ddp"]
    )
    ada = User.objects.get(username="ada")
    assert role_of(study, ada) == Role.ANNOTATOR
    assert client.session["_auth_user_id"] == str(ada.pk)


def test_the_invitation_page_shows_form_errors_and_a_weak_password(study: Study, lead: User) -> None:
    issued = create_invitation(study, role=Role.ANNOTATOR, actor=lead)
    url = reverse("accounts:invitation", args=[issued.token])
    response = Client().post(
        url, {"username": "ada", "email": "ada@example.org", "password1": "123", "password2": "123"}
    )
    assert response.status_code == 200
    assert "Password for &#x27;ada&#x27; refused" in response.content.decode()
    assert not User.objects.filter(username="ada").exists()


def test_a_signed_in_person_joins_with_one_click(study: Study, lead: User, outsider: User) -> None:
    issued = create_invitation(study, role=Role.ANNOTATOR, actor=lead)
    client = login(Client(), outsider)
    url = reverse("accounts:invitation", args=[issued.token])
    assert "Join the study" in client.get(url).content.decode()
    assert role_of(study, outsider) is None  # a GET joins nobody
    client.post(url)
    assert role_of(study, outsider) == Role.ANNOTATOR


def test_the_members_page_invites_by_email_shows_a_link_once_and_revokes(study: Study, lead: User) -> None:
    client = login(Client(), lead)
    create_url = reverse("accounts:invitation-create", args=[study.slug])
    sent = client.post(
        create_url,
        {"invite-email": "ada@example.org", "invite-role": "annotator", "invite-expires_days": 14},
        follow=True,
    )
    assert "Invitation sent to ada@example.org as annotator." in sent.content.decode()
    assert len(mail.outbox) == 1
    made = client.post(
        create_url,
        {"invite-email": "", "invite-role": "annotator", "invite-expires_days": 3, "invite-max_uses": ""},
    )
    text = made.content.decode()
    assert 'data-testid="invitation-link"' in text and "any number of uses" in text
    link = Invitation.objects.filter(study=study, email="").get()
    assert link.max_uses is None
    refused = client.post(create_url, {"invite-email": "", "invite-role": "owner", "invite-expires_days": 3})
    assert "Only an owner can make someone an owner." in refused.content.decode()
    client.post(reverse("accounts:invitation-revoke", args=[study.slug, link.pk]))
    assert Invitation.objects.get(pk=link.pk).status == "revoked"
    page = client.get(reverse("accounts:members", args=[study.slug])).content.decode()
    assert "ada@example.org" in page and f'data-invitation="{link.pk}"' not in page


def test_the_api_creates_lists_revokes_and_accepts_invitations(
    study: Study, lead: User, outsider: User
) -> None:
    client = APIClient()
    client.force_login(lead)
    base = f"/api/v1/studies/{study.slug}/invitations/"
    created = client.post(base, {"role": "annotator", "max_uses": None, "expires_days": 7}, format="json")
    assert created.status_code == 201
    body = created.json()
    assert body["status"] == "pending" and body["max_uses"] is None and "/invite/inv_" in body["link"]
    assert client.post(base, {"role": "lead"}, format="json").status_code == 403
    assert [row["id"] for row in client.get(base).json()["results"]] == [body["id"]]
    joiner = APIClient()
    joiner.force_login(outsider)
    joined = joiner.post("/api/v1/invitations/accept/", {"token": token_of(body["link"])}, format="json")
    assert (
        joined.status_code == 200 and joined.json()["role"] == "annotator" and joined.json()["study"] == "ddp"
    )
    revoked = client.delete(f"{base}{body['id']}/")
    assert revoked.status_code == 200 and revoked.json()["status"] == "revoked"
    again = joiner.post("/api/v1/invitations/accept/", {"token": token_of(body["link"])}, format="json")
    assert again.status_code == 410 and "revoked" in again.json()["detail"]
    assert joiner.post("/api/v1/invitations/accept/", {"token": "inv_nope"}, format="json").status_code == 404


def test_the_invite_command_prints_the_link_and_mails_it(
    study: Study, capsys: pytest.CaptureFixture[str]
) -> None:
    call_command("invite", "ddp", "ada@example.org", "--role", "lead", "--expires-days", "3")
    link = capsys.readouterr().out.strip().splitlines()[-1]
    invitation = Invitation.objects.get()
    assert invitation.role == Role.LEAD and invitation.created_by is None
    assert timedelta(days=2, hours=23) < invitation.expires_at - timezone.now() <= timedelta(days=3)
    assert link.endswith(f"/invite/{token_of(link)}/") and link in mail.outbox[0].body


def test_the_invite_command_refuses_bad_input_and_writes_nothing(study: Study) -> None:
    with pytest.raises(CommandError, match="No study with the slug 'nope'"):
        call_command("invite", "nope", "ada@example.org", "--role", "annotator")
    with pytest.raises(CommandError, match="is not an e-mail address"):
        call_command("invite", "ddp", "not-an-address", "--role", "annotator")
    with pytest.raises(CommandError, match="expires-days"):
        call_command("invite", "ddp", "ada@example.org", "--role", "annotator", "--expires-days", "0")
    assert not Invitation.objects.exists()
