from __future__ import annotations

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from django.urls import reverse

from apps.accounts.models import Membership, Role, Study, User
from apps.accounts.services import StudyError, add_member, create_study
from tests.conftest import login
from tests.factories import StudyFactory

pytestmark = pytest.mark.django_db


def test_study_list_shows_only_the_users_studies(client: Client, study: Study, annotator_a: User) -> None:
    StudyFactory(name="Someone else's study")
    response = login(client, annotator_a).get(reverse("accounts:study-list"))
    assert response.status_code == 200
    assert study.name.encode() in response.content
    assert b"Someone else" not in response.content


def test_anonymous_user_is_sent_to_login(client: Client, study: Study) -> None:
    response = client.get(reverse("adjudication:study-detail", args=[study.slug]))
    assert response.status_code == 302
    assert reverse("accounts:login") in response["Location"]


def test_outsider_gets_404_for_foreign_study(client: Client, study: Study, outsider: User) -> None:
    login(client, outsider)
    for name in ["adjudication:study-detail", "corpus:item-list", "taxonomy:codebook", "annotation:queue"]:
        assert client.get(reverse(name, args=[study.slug])).status_code == 404, name


def test_annotator_cannot_open_lead_pages(client: Client, study: Study, annotator_a: User) -> None:
    login(client, annotator_a)
    assert client.get(reverse("adjudication:study-detail", args=[study.slug])).status_code == 200
    for name in [
        "accounts:members",
        "corpus:import",
        "adjudication:queue",
        "export:export",
        "agreement:dashboard",
    ]:
        assert client.get(reverse(name, args=[study.slug])).status_code == 403, name


def test_lead_sees_progress_and_members(client: Client, study: Study, lead: User, annotator_a: User) -> None:
    login(client, lead)
    page = client.get(reverse("adjudication:study-detail", args=[study.slug]))
    assert b"Progress per annotator" in page.content
    members = client.get(reverse("accounts:members", args=[study.slug]))
    assert b"alice" in members.content


def test_lead_adds_a_new_annotator_with_a_password(client: Client, study: Study, lead: User) -> None:
    login(client, lead)
    response = client.post(
        reverse("accounts:members", args=[study.slug]),
        {"username": "carol", "role": "annotator", "password": "a-long-enough-passphrase"},
    )
    assert response.status_code == 302
    assert Membership.objects.get(study=study, user__username="carol").role == Role.ANNOTATOR


def test_lead_cannot_appoint_an_owner(client: Client, study: Study, lead: User, annotator_a: User) -> None:
    login(client, lead)
    response = client.post(
        reverse("accounts:members", args=[study.slug]), {"username": "alice", "role": "owner"}
    )
    assert response.status_code == 200
    assert b"Only an owner" in response.content
    assert Membership.objects.get(study=study, user=annotator_a).role == Role.ANNOTATOR


def test_weak_password_for_new_member_is_refused(client: Client, study: Study, lead: User) -> None:
    login(client, lead)
    response = client.post(
        reverse("accounts:members", args=[study.slug]),
        {"username": "dave", "role": "annotator", "password": "123"},
    )
    assert b"Password for" in response.content
    assert not User.objects.filter(username="dave").exists()


def test_creating_a_study_in_the_browser_makes_the_creator_owner(client: Client, outsider: User) -> None:
    login(client, outsider)
    response = client.post(
        reverse("accounts:study-list"),
        {
            "name": "New",
            "slug": "new-study",
            "overlap": 2,
            "consolidation_rule": "unanimous",
            "description": "",
        },
    )
    assert response.status_code == 302
    assert Membership.objects.get(study__slug="new-study", user=outsider).role == Role.OWNER


def test_create_study_refuses_duplicate_and_invalid_slugs(db: None) -> None:
    create_study(slug="a", name="A")
    with pytest.raises(StudyError, match="already exists"):
        create_study(slug="a", name="A again")
    with pytest.raises(StudyError, match="Invalid study slug"):
        create_study(slug="Not A Slug", name="B")
    with pytest.raises(StudyError, match="overlap"):
        create_study(slug="c", name="C", overlap=0)


def test_last_owner_cannot_be_demoted(study: Study, owner: User) -> None:
    with pytest.raises(StudyError, match="only owner"):
        add_member(study, owner, Role.ANNOTATOR)


def test_create_study_and_add_member_commands(db: None, capsys: pytest.CaptureFixture[str]) -> None:
    call_command("create_study", "s1", "--name", "S one", "--overlap", "3")
    call_command(
        "add_member", "s1", "zoe", "--role", "lead", "--create", "--password", "a-long-enough-passphrase"
    )
    study = Study.objects.get(slug="s1")
    assert study.overlap == 3
    assert Membership.objects.get(study=study, user__username="zoe").role == Role.LEAD


def test_add_member_command_fails_clearly_for_unknown_user_and_study(db: None) -> None:
    call_command("create_study", "s2", "--name", "S two")
    with pytest.raises(CommandError, match="No user named 'ghost'"):
        call_command("add_member", "s2", "ghost", "--role", "annotator")
    with pytest.raises(CommandError, match="No study with the slug 'nope'"):
        call_command("add_member", "nope", "ghost", "--role", "annotator")


def test_study_card_counts_every_member_not_only_the_viewer(
    client: Client, study: Study, annotator_a: User, annotator_b: User, lead: User
) -> None:
    response = login(client, annotator_a).get(reverse("accounts:study-list"))
    assert response.context["rows"][0]["study"].n_members == 3


def test_a_slug_differing_only_in_case_from_an_existing_study_is_refused(db: None) -> None:
    StudyFactory(slug="Tosem23")  # made before the rule (import_study accepted capitals)
    with pytest.raises(StudyError, match="differs only in case from the existing study 'Tosem23'"):
        create_study(slug="tosem23", name="Again")
    assert Study.objects.filter(slug__iexact="tosem23").count() == 1


def test_the_study_form_refuses_a_slug_differing_only_in_case(client: Client, outsider: User) -> None:
    StudyFactory(slug="Tosem23")
    response = login(client, outsider).post(
        reverse("accounts:study-list"),
        {"name": "Again", "slug": "tosem23", "overlap": 2, "consolidation_rule": "unanimous"},
    )
    assert response.status_code == 200
    assert "differs only in case" in response.content.decode()
    assert Study.objects.filter(slug__iexact="tosem23").count() == 1
