"""Guidelines: versions with the codebook they were written against, Markdown through the sanitizer, and
the "read the guidelines first" step of a study that requires it (queue, workbench, API)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from apps.accounts.models import Study, User
from apps.taxonomy import guidelines
from apps.taxonomy.models import Category, GuidelinesAcknowledgement
from apps.taxonomy.services import edit_category
from tests.api.world import World, isolated_world
from tests.conftest import login

pytestmark = pytest.mark.django_db

LABELS = {"findings": [{"values": {"type": ["howto"]}}], "memo": ""}


@pytest.fixture
def world(
    study: Study,
    owner: User,
    lead: User,
    annotator_a: User,
    annotator_b: User,
    outsider: User,
    settings: Any,
    tmp_path: Path,
) -> World:
    return isolated_world(settings, tmp_path, study, owner, lead, annotator_a, annotator_b, outsider)


def require(world: World) -> None:
    world.study.require_guidelines = True
    world.study.save(update_fields=["require_guidelines"])


def test_each_publication_is_a_new_version_against_the_current_codebook(world: World) -> None:
    first = guidelines.publish(world.study, "Read each item twice.", actor=world.lead)
    hang = Category.objects.get(dimension__codebook__study=world.study, key="hang")
    edit_category(hang, definition="The job stops making progress.", actor=world.lead)
    second = guidelines.publish(world.study, "Read each item twice.\nAsk Lena.", actor=world.lead)
    assert (first.number, second.number) == (1, 2)
    assert second.codebook_version == first.codebook_version + 1

    def hang_definition(version: Any) -> str:
        symptom = next(d for d in guidelines.codebook_data(version)["dimensions"] if d["key"] == "symptom")
        return str(next(c for c in symptom["categories"] if c["key"] == "hang")["definition"])

    assert hang_definition(first) == "Nothing happens, forever."  # as its readers saw it
    assert hang_definition(second) == "The job stops making progress."
    change = guidelines.diff(first, second)
    assert "+Ask Lena." in change.introduction_patch
    assert any("hang" in line and "definition" in line for line in change.codebook_changes)


def test_the_page_shows_definitions_and_the_introduction_through_the_sanitizer(
    client: Client, world: World
) -> None:
    guidelines.publish(
        world.study, "**Bold** advice <script>alert(1)</script><img src=x onerror=alert(2)>", actor=world.lead
    )
    login(client, world.alice)
    body = client.get(reverse("annotation:guidelines", args=[world.study.slug])).content.decode()
    assert "<strong>Bold</strong>" in body
    assert "<script>alert" not in body and "onerror" not in body
    assert "Nothing happens, forever." in body and "Something is broken." in body  # the definitions


def test_an_earlier_version_shows_what_changed_since_the_one_before(client: Client, world: World) -> None:
    guidelines.publish(world.study, "First words.", actor=world.lead)
    guidelines.publish(world.study, "Second words.", actor=world.lead, note="Reworded")
    login(client, world.bob)
    page = client.get(reverse("annotation:guidelines-version", args=[world.study.slug, 2]))
    body = page.content.decode()
    assert page.status_code == 200 and "What changed since version 1" in body and "Second words." in body
    assert client.get(reverse("annotation:guidelines-version", args=[world.study.slug, 9])).status_code == 404


def test_only_leads_publish(client: Client, world: World) -> None:
    login(client, world.alice)
    url = reverse("annotation:guidelines", args=[world.study.slug])
    assert client.post(url, {"introduction": "mine"}).status_code == 403
    login(client, world.lead)
    assert client.post(url, {"introduction": "Hello", "note": "first"}).status_code == 302
    assert guidelines.current(world.study) is not None


def test_an_annotator_who_must_read_is_sent_to_the_guidelines_until_they_acknowledge(
    client: Client, world: World
) -> None:
    require(world)
    version = guidelines.publish(world.study, "Read me.", actor=world.lead)
    login(client, world.alice)
    target = reverse("annotation:guidelines", args=[world.study.slug])
    queue = reverse("annotation:queue", args=[world.study.slug])
    workbench = reverse("annotation:workbench", args=[world.study.slug, world.assignment("alice", 2).pk])
    for url in (queue, workbench, reverse("annotation:next", args=[world.study.slug])):
        response = client.get(url)
        assert (response.status_code, response["Location"]) == (302, target), url
    api = APIClient()
    api.force_login(world.alice)
    submit = f"/api/v1/studies/{world.study.slug}/assignments/{world.assignment('alice', 2).pk}/annotation/"
    refused = api.post(submit, LABELS, format="json")
    assert refused.status_code == 403 and "Read the guidelines" in refused.json()["detail"]

    response = client.post(
        reverse("annotation:guidelines-acknowledge", args=[world.study.slug]), {"version": "1"}
    )
    assert (response.status_code, response["Location"]) == (302, queue)
    assert GuidelinesAcknowledgement.objects.filter(version=version, user=world.alice).count() == 1
    assert client.get(queue).status_code == 200
    assert client.get(workbench).status_code == 200
    assert api.post(submit, LABELS, format="json").status_code in (200, 201)

    guidelines.publish(world.study, "Read me again: something changed.", actor=world.lead)
    assert client.get(queue)["Location"] == target  # a new version must be read again


def test_acknowledging_a_version_that_is_no_longer_current_is_refused(client: Client, world: World) -> None:
    guidelines.publish(world.study, "One.", actor=world.lead)
    guidelines.publish(world.study, "Two.", actor=world.lead)
    login(client, world.alice)
    client.post(reverse("annotation:guidelines-acknowledge", args=[world.study.slug]), {"version": "1"})
    assert not GuidelinesAcknowledgement.objects.filter(user=world.alice).exists()


def test_nobody_is_sent_to_the_guidelines_when_the_study_does_not_require_them_or_has_none(
    client: Client, world: World
) -> None:
    queue = reverse("annotation:queue", args=[world.study.slug])
    login(client, world.alice)
    require(world)
    assert client.get(queue).status_code == 200  # required, but nothing published yet
    guidelines.publish(world.study, "Read me.", actor=world.lead)
    login(client, world.lead)
    assert client.get(queue).status_code == 200  # leads write them
    world.study.require_guidelines = False
    world.study.save(update_fields=["require_guidelines"])
    login(client, world.alice)
    assert client.get(queue).status_code == 200


def test_leads_see_who_has_read_the_current_version(client: Client, world: World) -> None:
    version = guidelines.publish(world.study, "Read me.", actor=world.lead)
    guidelines.acknowledge(version, world.alice)
    guidelines.acknowledge(version, world.alice)  # once
    login(client, world.lead)
    body = client.get(reverse("annotation:guidelines", args=[world.study.slug])).content.decode()
    assert "Who has read version 1" in body and "alice" in body and "Not yet: bob" in body
