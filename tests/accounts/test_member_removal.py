"""Removing a member and changing roles from the members page and the API: submitted labels stay with
their author, open assignments return to the pool, and the owner and lead rules hold."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from apps.accounts.models import Membership, Role, Study, User
from apps.accounts.services import MembershipRefused, StudyError, remove_member
from apps.adjudication.progress import refresh_progress
from apps.annotation import services as labelling
from apps.annotation.models import Annotation, Assignment
from apps.annotation.signals import items_moved
from apps.corpus.models import Item
from tests.api.world import World, build_world
from tests.conftest import login

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(study: Any, owner: Any, lead: Any, annotator_a: Any, annotator_b: Any, outsider: Any) -> World:
    return build_world(study, owner, lead, annotator_a, annotator_b, outsider)


def membership(study: Study, username: str) -> Membership:
    return Membership.objects.get(study=study, user__username=username)


def test_removing_an_annotator_keeps_their_labels_and_returns_their_open_items_to_the_pool(
    world: World,
) -> None:
    submitted = set(Annotation.objects.filter(assignment__annotator=world.alice).values_list("pk", flat=True))
    assert (
        len(submitted) == 2 and Assignment.objects.filter(annotator=world.alice, status="open").count() == 1
    )

    moved: list[list[int]] = []

    def note(sender: object, *, item_ids: list[int], **kwargs: object) -> None:
        moved.append(list(item_ids))

    items_moved.connect(note, weak=False)
    try:
        removal = remove_member(world.study, world.alice, actor=world.lead)
    finally:
        items_moved.disconnect(note)

    assert removal.released == 1
    assert not Membership.objects.filter(study=world.study, user=world.alice).exists()
    kept = Annotation.objects.filter(assignment__annotator=world.alice, submitted_at__isnull=False)
    assert set(kept.values_list("pk", flat=True)) == submitted
    assert not Assignment.objects.filter(annotator=world.alice, status="open").exists()
    # The items grid's columns follow (apps/adjudication/progress.py): the item was announced as moved,
    # and recomputing the columns changes nothing.
    assert moved == [[world.items[2].pk]]
    shown = dict(Item.objects.filter(study=world.study).values_list("pk", "progress"))
    refresh_progress(study=world.study)
    assert dict(Item.objects.filter(study=world.study).values_list("pk", "progress")) == shown
    # The item alice held open now lacks an annotator; assigning the round again gives it to someone else.
    result = labelling.assign_round(world.study, 1, ["bob", "lena"], overlap=2, actor=world.lead)
    assert result.created == 1
    third = world.items[2]
    assert set(Assignment.objects.filter(item=third).values_list("annotator__username", flat=True)) == {
        "bob",
        "lena",
    }


def test_a_lead_cannot_remove_a_lead_or_an_owner(world: World, study: Study) -> None:
    with pytest.raises(MembershipRefused, match="Only an owner can remove olivia"):
        remove_member(study, world.owner, actor=world.lead)
    assert membership(study, "olivia").role == Role.OWNER


def test_an_annotator_cannot_remove_anyone(world: World, study: Study) -> None:
    with pytest.raises(MembershipRefused):
        remove_member(study, world.bob, actor=world.alice)


def test_the_last_owner_can_be_neither_removed_nor_demoted(world: World, study: Study) -> None:
    with pytest.raises(StudyError, match="only owner"):
        remove_member(study, world.owner, actor=world.owner)
    client = login(Client(), world.owner)
    response = client.post(
        reverse("accounts:member-role", args=[study.slug, membership(study, "olivia").pk]), {"role": "lead"}
    )
    assert response.status_code == 302
    assert membership(study, "olivia").role == Role.OWNER
    assert "only owner" in client.get(reverse("accounts:members", args=[study.slug])).content.decode()


def test_an_owner_removes_a_lead_and_a_second_owner_can_leave(
    world: World, study: Study, outsider: User
) -> None:
    remove_member(study, world.lead, actor=world.owner)
    Membership.objects.create(study=study, user=outsider, role=Role.OWNER)
    remove_member(study, world.owner, actor=world.owner)
    assert list(
        Membership.objects.filter(study=study, role=Role.OWNER).values_list("user__username", flat=True)
    ) == ["oscar"]


def test_the_members_page_changes_a_role_and_removes_a_member(world: World, study: Study) -> None:
    client = login(Client(), world.owner)
    page = reverse("accounts:members", args=[study.slug])
    bob = membership(study, "bob")
    client.post(reverse("accounts:member-role", args=[study.slug, bob.pk]), {"role": "lead"})
    assert membership(study, "bob").role == Role.LEAD
    response = client.post(reverse("accounts:member-remove", args=[study.slug, bob.pk]), follow=True)
    assert response.redirect_chain[-1][0] == page
    text = response.content.decode()
    assert "bob was removed; their submitted labels stay." in text and "2 open items went back" in text
    assert 'data-member="bob"' not in text


def test_a_lead_changing_an_annotator_to_lead_is_refused_on_the_page(world: World, study: Study) -> None:
    client = login(Client(), world.lead)
    bob = membership(study, "bob")
    response = client.post(
        reverse("accounts:member-role", args=[study.slug, bob.pk]), {"role": "lead"}, follow=True
    )
    assert "Only an owner can make someone a lead." in response.content.decode()
    assert membership(study, "bob").role == Role.ANNOTATOR


def test_a_member_of_another_study_is_404_on_the_remove_url(
    world: World, study: Study, outsider: User
) -> None:
    other = Membership.objects.create(study=world.other_study, user=outsider, role=Role.OWNER)
    client = login(Client(), world.owner)
    response = client.post(reverse("accounts:member-remove", args=[study.slug, other.pk]))
    assert response.status_code == 404
    assert Membership.objects.filter(pk=other.pk).exists()


def api(user: User) -> APIClient:
    client = APIClient()
    client.force_login(user)
    return client


def test_the_api_changes_a_role_and_removes_a_member(world: World, study: Study) -> None:
    url = f"/api/v1/studies/{study.slug}/members/bob/"
    response = api(world.owner).patch(url, {"role": "lead"}, format="json")
    assert response.status_code == 200 and response.json()["role"] == "lead"
    response = api(world.owner).delete(url)
    assert response.status_code == 200
    assert response.json() == {"username": "bob", "role": "lead", "released": 2}


def test_the_api_refuses_a_lead_promoting_to_owner_or_removing_an_owner_with_403(
    world: World, study: Study
) -> None:
    client = api(world.lead)
    promote = client.patch(f"/api/v1/studies/{study.slug}/members/alice/", {"role": "owner"}, format="json")
    assert (
        promote.status_code == 403 and "Only an owner can make someone an owner" in promote.json()["detail"]
    )
    remove = client.delete(f"/api/v1/studies/{study.slug}/members/olivia/")
    assert remove.status_code == 403
    assert api(world.owner).delete(f"/api/v1/studies/{study.slug}/members/olivia/").status_code == 400
    assert api(world.lead).delete(f"/api/v1/studies/{study.slug}/members/nobody/").status_code == 404
