"""Who may change whose role (one service for the members page, the API and `add_member`), and which
usernames a new account may have (one validation for all three)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from apps.accounts.models import Membership, Role, Study, User
from apps.accounts.services import MembershipRefused, set_member_role
from tests.conftest import login
from tests.factories import MembershipFactory, UserFactory

pytestmark = pytest.mark.django_db

PASSWORD = "a-long-enough-passphrase"


@pytest.fixture
def other_lead(study: Study) -> User:
    return MembershipFactory(study=study, role=Role.LEAD, user=UserFactory(username="leon")).user


def role_of(study: Study, username: str) -> str | None:
    return (
        Membership.objects.filter(study=study, user__username=username).values_list("role", flat=True).first()
    )


def api_post(user: User, study: Study, body: dict[str, str]) -> tuple[int, str]:
    client = APIClient()
    client.force_login(user)
    response = client.post(f"/api/v1/studies/{study.slug}/members/", body, format="json")
    return response.status_code, response.json().get("detail", "")


def page_post(user: User, study: Study, body: dict[str, str]) -> tuple[int, str]:
    response = login(Client(), user).post(reverse("accounts:members", args=[study.slug]), body)
    return response.status_code, response.content.decode()


# --- point 9: only owners manage owners and leads ----------------------------------------------------


def test_a_leads_token_cannot_demote_an_owner_through_the_api(study: Study, owner: User, lead: User) -> None:
    status, detail = api_post(lead, study, {"username": "olivia", "role": "annotator"})
    assert status == 403
    assert detail == "Only an owner can change the role of olivia, who is owner."
    assert role_of(study, "olivia") == Role.OWNER


def test_a_lead_cannot_change_another_leads_role_through_the_api(
    study: Study, lead: User, other_lead: User
) -> None:
    status, detail = api_post(lead, study, {"username": "leon", "role": "annotator"})
    assert status == 403 and "Only an owner can change the role of leon" in detail
    assert role_of(study, "leon") == Role.LEAD


def test_a_lead_cannot_make_an_annotator_a_lead(study: Study, lead: User, annotator_a: User) -> None:
    status, detail = api_post(lead, study, {"username": "alice", "role": "lead"})
    assert (status, detail) == (403, "Only an owner can make someone a lead.")
    assert role_of(study, "alice") == Role.ANNOTATOR


def test_a_lead_cannot_demote_an_owner_on_the_members_page(study: Study, owner: User, lead: User) -> None:
    status, page = page_post(lead, study, {"username": "olivia", "role": "annotator"})
    assert status == 200 and "Only an owner can change the role of olivia" in page
    assert role_of(study, "olivia") == Role.OWNER


def test_the_members_page_offers_a_lead_only_what_a_lead_may_do(
    study: Study, owner: User, lead: User, annotator_a: User
) -> None:
    url = reverse("accounts:members", args=[study.slug])
    as_lead = login(Client(), lead).get(url).content.decode()
    as_owner = login(Client(), owner).get(url).content.decode()

    # a lead removes annotators only and changes no role: no control that would only be refused
    assert "Change role" not in as_lead and 'id="role-' not in as_lead
    assert f"Remove {annotator_a.username}" in as_lead
    assert "Remove olivia" not in as_lead and "Remove lena" not in as_lead
    # the add and invite forms offer a lead the annotator role only; an owner every role
    assert '<option value="lead"' not in as_lead and '<option value="owner"' not in as_lead
    assert as_owner.count('<option value="owner"') >= 2
    # an owner manages everyone
    assert "Change role" in as_owner and f'id="role-{Membership.objects.get(user=lead).pk}"' in as_owner
    assert "Remove lena" in as_owner and f"Remove {annotator_a.username}" in as_owner


def test_a_lead_still_adds_annotators_old_and_new(study: Study, lead: User, outsider: User) -> None:
    assert api_post(lead, study, {"username": "oscar", "role": "annotator"})[0] == 201
    assert api_post(lead, study, {"username": "carol", "password": PASSWORD})[0] == 201
    assert role_of(study, "oscar") == role_of(study, "carol") == Role.ANNOTATOR


def test_an_owner_manages_leads_and_owners(study: Study, owner: User, lead: User, other_lead: User) -> None:
    assert api_post(owner, study, {"username": "leon", "role": "annotator"})[0] == 200
    assert api_post(owner, study, {"username": "lena", "role": "owner"})[0] == 200
    assert role_of(study, "leon") == Role.ANNOTATOR and role_of(study, "lena") == Role.OWNER


@pytest.mark.parametrize(
    ("target", "role"),
    [
        ("olivia", Role.ANNOTATOR),
        ("olivia", Role.LEAD),
        ("leon", Role.ANNOTATOR),
        ("leon", Role.OWNER),
        ("lena", Role.ANNOTATOR),  # their own role too: leads are managed by owners
        ("alice", Role.LEAD),
        ("alice", Role.OWNER),
    ],
)
def test_the_service_refuses_a_lead_every_change_to_the_lead_and_owner_roles(
    study: Study, owner: User, lead: User, other_lead: User, annotator_a: User, target: str, role: str
) -> None:
    before = role_of(study, target)
    with pytest.raises(MembershipRefused, match="Only an owner"):
        set_member_role(study, target, role, actor=lead)
    assert role_of(study, target) == before


def test_the_add_member_command_is_the_operator_and_may_appoint_owners(
    study: Study, owner: User, lead: User
) -> None:
    call_command("add_member", study.slug, "lena", "--role", "owner")
    assert role_of(study, "lena") == Role.OWNER


# --- point 11: one username rule for every new account --------------------------------------------------

BAD_USERNAMES = {
    "a newline": "eve\nadmin",
    "a comma": "eve,bob",
    "a '<'": "<script>",
    "a zero-width space": "eve\u200b",
    "a zero-width joiner": "e\u200dve",
    "a space": "eve smith",
    "151 characters": "e" * 151,
}

Creator = Callable[[Study, User, str], str]


def _by_api(study: Study, lead: User, username: str) -> str:
    status, detail = api_post(lead, study, {"username": username, "password": PASSWORD})
    assert status == 400
    return detail


def _by_page(study: Study, lead: User, username: str) -> str:
    status, page = page_post(lead, study, {"username": username, "role": "annotator", "password": PASSWORD})
    assert status == 200
    return page


def _by_command(study: Study, lead: User, username: str) -> str:
    with pytest.raises(CommandError) as refused:
        call_command(
            "add_member", study.slug, username, "--role", "annotator", "--create", "--password", PASSWORD
        )
    return str(refused.value)


CREATORS = {"api": _by_api, "page": _by_page, "command": _by_command}


@pytest.mark.parametrize("where", CREATORS)
@pytest.mark.parametrize("what", BAD_USERNAMES)
def test_a_new_username_that_djangos_validator_refuses_is_refused_everywhere(
    study: Study, lead: User, where: str, what: str
) -> None:
    username = BAD_USERNAMES[what]
    said = CREATORS[where](study, lead, username)
    assert "username" in said and ("not valid" in said or "150 characters" in said), said
    assert not User.objects.exclude(username="lena").exists()


def test_the_refusal_names_the_invisible_character(study: Study, lead: User) -> None:
    detail = _by_api(study, lead, "eve\u200b")
    assert "U+200B" in detail and "letters, digits and @ . + - _ only" in detail


@pytest.mark.parametrize("where", CREATORS)
def test_a_new_username_equal_to_an_existing_one_but_for_case_is_refused_everywhere(
    study: Study, lead: User, annotator_a: User, where: str
) -> None:
    said = CREATORS[where](study, lead, "Alice")
    assert "already exists as 'alice'" in said.replace("&#x27;", "'"), said
    assert not User.objects.filter(username="Alice").exists()


def test_a_valid_new_username_is_created_as_given(study: Study, lead: User) -> None:
    assert api_post(lead, study, {"username": "carol.o-b+1@lab_x", "password": PASSWORD})[0] == 201
    assert User.objects.filter(username="carol.o-b+1@lab_x").exists()
