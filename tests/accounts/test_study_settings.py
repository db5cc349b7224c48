"""Study settings (leads), archive and delete (owners), in the browser, the API and the command line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from apps.accounts.models import Study, User
from apps.annotation.models import Assignment, Round, overlap_of
from apps.corpus.models import Item
from apps.taxonomy.models import Category
from tests.api.world import World, isolated_world
from tests.conftest import login

pytestmark = pytest.mark.django_db

ARCHIVED = "is archived: unarchive it in Settings to change it"


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


def api_as(user: User) -> APIClient:
    client = APIClient()
    client.force_login(user)
    return client


def settings_form(study: Study, **changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": study.name,
        "description": study.description,
        "overlap": study.overlap,
        "consolidation_rule": study.consolidation_rule,
        "show_annotator_names": "on" if study.show_annotator_names else "",
        "require_rationale_on_override": "on" if study.require_rationale_on_override else "",
    }
    data.update(changes)
    return {k: v for k, v in data.items() if v != ""}


# --- settings -----------------------------------------------------------------------------------------


def test_lead_changes_the_settings_on_the_settings_page(client: Client, world: World) -> None:
    login(client, world.lead)
    url = reverse("accounts:settings", args=[world.study.slug])
    assert client.get(url).status_code == 200
    form = settings_form(world.study, name="Renamed", overlap=3, require_guidelines="on")
    response = client.post(url, form)
    assert response.status_code == 302
    study = Study.objects.get(pk=world.study.pk)
    assert (study.name, study.overlap, study.require_guidelines) == ("Renamed", 3, True)


def test_an_invalid_setting_comes_back_to_htmx_with_its_error_under_the_field(
    client: Client, world: World
) -> None:
    login(client, world.lead)
    url = reverse("accounts:settings", args=[world.study.slug])
    response = client.post(
        url, settings_form(world.study, overlap=0), HTTP_HX_REQUEST="true", HTTP_HX_TARGET="settings-form"
    )
    assert response.status_code == 422
    body = response.content.decode()
    assert 'id="settings-form"' in body and "<html" not in body
    assert "greater than or equal to 1" in body
    assert Study.objects.get(pk=world.study.pk).overlap == 2


def test_annotators_cannot_open_the_settings(client: Client, world: World) -> None:
    login(client, world.alice)
    assert client.get(reverse("accounts:settings", args=[world.study.slug])).status_code == 403


def test_api_patch_changes_settings_and_names_the_field_it_refuses(world: World) -> None:
    url = f"/api/v1/studies/{world.study.slug}/"
    response = api_as(world.lead).patch(url, {"overlap": 3, "show_annotator_names": False}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["overlap"] == 3 and response.json()["show_annotator_names"] is False
    refused = api_as(world.lead).patch(url, {"overlap": 0, "consolidation_rule": "most"}, format="json")
    assert refused.status_code == 400
    assert set(refused.json()["field_errors"]) == {"overlap", "consolidation_rule"}
    assert api_as(world.alice).patch(url, {"name": "x"}, format="json").status_code == 403


def test_changing_the_overlap_leaves_assigned_rounds_as_they_were(world: World) -> None:
    round_ = Round.objects.get(study=world.study, number=1)
    before = (overlap_of(round_.params), Assignment.objects.filter(round=round_).count())
    api_as(world.lead).patch(f"/api/v1/studies/{world.study.slug}/", {"overlap": 3}, format="json")
    round_.refresh_from_db()
    assert (overlap_of(round_.params), Assignment.objects.filter(round=round_).count()) == before


# --- archive ------------------------------------------------------------------------------------------


def test_only_an_owner_archives_and_an_archived_study_refuses_writes_until_unarchived(world: World) -> None:
    url = f"/api/v1/studies/{world.study.slug}/"
    assert api_as(world.lead).patch(url, {"archived": True}, format="json").status_code == 403
    response = api_as(world.owner).patch(url, {"archived": True}, format="json")
    assert response.status_code == 200 and response.json()["archived"] is True
    refused = api_as(world.lead).patch(url, {"name": "x"}, format="json")
    assert refused.status_code == 403 and ARCHIVED in refused.json()["detail"]
    draw = api_as(world.lead).post(f"/api/v1/studies/{world.study.slug}/rounds/", {}, format="json")
    assert draw.status_code == 403 and ARCHIVED in draw.json()["detail"]
    assert api_as(world.alice).get(url).status_code == 200  # reads still answer
    assert api_as(world.owner).patch(url, {"archived": False}, format="json").json()["archived"] is False
    assert api_as(world.lead).patch(url, {"name": "Back"}, format="json").status_code == 200


def test_archiving_in_the_browser_shows_the_banner_and_refuses_a_posted_form(
    client: Client, world: World
) -> None:
    login(client, world.owner)
    archive_url = reverse("accounts:archive", args=[world.study.slug])
    assert client.post(archive_url, {"archived": "1"}).status_code == 302
    page = client.get(reverse("corpus:item-list", args=[world.study.slug]))
    assert page.status_code == 200 and "This study is archived" in page.content.decode()
    refused = client.post(reverse("accounts:members", args=[world.study.slug]), {"username": "x"})
    assert refused.status_code == 403 and ARCHIVED in refused.content.decode()
    client.post(archive_url, {"archived": "0"})
    assert Study.objects.get(pk=world.study.pk).archived_at is None


def test_commands_that_write_refuse_an_archived_study_and_reports_still_run(world: World) -> None:
    Study.objects.filter(pk=world.study.pk).update(archived_at="2026-01-01T00:00:00Z")
    with pytest.raises(CommandError, match=ARCHIVED):
        call_command("sample", world.study.slug, "--round", "9", "--size", "1", "--seed", "1")
    with pytest.raises(CommandError, match=ARCHIVED):
        call_command("add_member", world.study.slug, "alice", "--role", "lead")
    call_command("study_status", world.study.slug, "--format", "json")  # no error


# --- delete -------------------------------------------------------------------------------------------


def test_deleting_needs_the_slug_typed_exactly_and_then_removes_everything(
    client: Client, world: World
) -> None:
    login(client, world.owner)
    url = reverse("accounts:delete", args=[world.study.slug])
    wrong = client.post(url, {"confirm": world.study.slug.upper()})
    assert wrong.status_code == 400 and "exactly" in wrong.content.decode()
    assert Study.objects.filter(pk=world.study.pk).exists()
    response = client.post(url, {"confirm": world.study.slug})
    assert response.status_code == 302 and response["Location"] == reverse("accounts:study-list")
    assert not Study.objects.filter(pk=world.study.pk).exists()
    assert not Item.objects.filter(study_id=world.study.pk).exists()
    assert not Category.objects.filter(dimension__codebook__study_id=world.study.pk).exists()
    assert User.objects.filter(pk=world.alice.pk).exists()  # people stay


def test_a_lead_cannot_delete_a_study(client: Client, world: World) -> None:
    login(client, world.lead)
    url = reverse("accounts:delete", args=[world.study.slug])
    assert client.post(url, {"confirm": world.study.slug}).status_code == 403
    assert Study.objects.filter(pk=world.study.pk).exists()


def test_api_delete_needs_the_slug_as_confirm(world: World) -> None:
    url = f"/api/v1/studies/{world.study.slug}/"
    refused = api_as(world.owner).delete(url, {}, format="json")
    assert refused.status_code == 400 and "confirm" in refused.json()["field_errors"]
    wrong = api_as(world.owner).delete(url, {"confirm": "nope"}, format="json")
    assert wrong.status_code == 400 and world.study.slug in wrong.json()["detail"]
    assert api_as(world.owner).delete(f"{url}?confirm={world.study.slug}").status_code == 204
    assert not Study.objects.filter(pk=world.study.pk).exists()


def test_an_archived_study_can_be_deleted(world: World) -> None:
    Study.objects.filter(pk=world.study.pk).update(archived_at="2026-01-01T00:00:00Z")
    response = api_as(world.owner).delete(
        f"/api/v1/studies/{world.study.slug}/", {"confirm": world.study.slug}, format="json"
    )
    assert response.status_code == 204


def test_a_revealed_study_with_frozen_blind_labels_is_deleted_whole(world: World) -> None:
    from apps.annotation import services as labelling
    from apps.annotation.models import BlindValue, DisagreementCause
    from apps.annotation.services.causes import add_cause, set_cause

    labelling.reveal_round(world.study, 1, force=True, discussion=True)
    cause = add_cause(world.study, "Vague post")
    set_cause(Round.objects.get(study=world.study, number=1), world.items[0], world.lead, cause.key)
    assert BlindValue.objects.filter(record__round__study=world.study).exists()
    assert DisagreementCause.objects.filter(cause=cause).exists()  # protects the cause
    response = api_as(world.owner).delete(
        f"/api/v1/studies/{world.study.slug}/", {"confirm": world.study.slug}, format="json"
    )
    assert response.status_code == 204
    assert not BlindValue.objects.exists() and not Study.objects.filter(pk=world.study.pk).exists()
