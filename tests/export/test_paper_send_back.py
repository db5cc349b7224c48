"""The re-review worklist's "Send back" (#22 point 2): a lead gives an item's outdated labels back to the
annotators who made them; its decision is withdrawn; each annotator finds it in their queue, told only
what changed under their own label, with their earlier labels ticked; their new submission is consolidated
like any other and the item leaves the worklist."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from apps.accounts.models import Study, User
from apps.adjudication.models import Decision, Review, ReviewState
from apps.annotation.models import Annotation, Assignment, AssignmentStatus, SendBack
from apps.corpus.models import Item
from apps.export.package import build_package, import_study
from apps.export.paper.evolution import rereview_worklist
from apps.taxonomy.models import Category, Codebook
from apps.taxonomy.services.categories import edit_category

pytestmark = pytest.mark.django_db

ITEM = "https://stackoverflow.com/questions/2"  # alice chose oom, bob howto; the lead adjudicated


@pytest.fixture
def outdated(labelled: Study, lead: User) -> Item:
    """oom redefined after every label was made: alice's label on item 2 is on the worklist."""
    Annotation.objects.filter(assignment__study=labelled).update(codebook_version=1)
    oom = Category.objects.get(dimension__codebook__study=labelled, key="oom")
    edit_category(oom, definition="Runs out of device memory.", actor=lead)
    assert [w.item for w in rereview_worklist(labelled)] == [ITEM]
    return Item.objects.get(study=labelled, url=ITEM)


def send_back(client: Client, study: Study, item: Item) -> str:
    response = client.post(reverse("export:paper-send-back", args=[study.slug, item.pk]), follow=True)
    assert response.status_code == 200
    return response.content.decode()


def test_sending_back_withdraws_the_decision_and_reopens_only_the_outdated_labels(
    labelled: Study, outdated: Item, lead: User, lead_client: Client, annotator_a: User, annotator_b: User
) -> None:
    page = lead_client.get(reverse("export:paper", args=[labelled.slug])).content.decode()
    assert f"Send back to {annotator_a.username}" in page

    page = send_back(lead_client, labelled, outdated)

    assert f"Sent {ITEM} back to {annotator_a.username}; its decision is withdrawn." in page
    assert not Decision.objects.filter(item=outdated, is_current=True).exists()
    assert Decision.objects.filter(item=outdated, is_current=False).exists()  # kept, not current
    assert Review.objects.get(item=outdated).state == ReviewState.ANNOTATING
    alice = Assignment.objects.get(item=outdated, annotator=annotator_a)
    bob = Assignment.objects.get(item=outdated, annotator=annotator_b)
    assert (alice.status, alice.annotation.submitted_at) == (AssignmentStatus.OPEN, None)
    assert not alice.annotation.findings.exists()
    assert alice.annotation.draft["findings"][0]["values"]["symptom"] == ["oom"]
    assert bob.status == AssignmentStatus.SUBMITTED  # his labels were not outdated
    sent = SendBack.objects.get()
    assert (sent.assignment, sent.sent_by, sent.labels_before[0]["symptom"]) == (alice, lead, ["oom"])
    assert rereview_worklist(labelled) == []  # no submitted outdated label left


def test_the_annotator_is_told_what_changed_under_their_own_label_and_nothing_of_the_others(
    labelled: Study, outdated: Item, lead_client: Client, client: Client, annotator_a: User
) -> None:
    send_back(lead_client, labelled, outdated)
    alice = Assignment.objects.get(item=outdated, annotator=annotator_a)
    client.force_login(annotator_a)

    queue = client.get(reverse("annotation:queue", args=[labelled.slug])).content.decode()
    bench = client.get(reverse("annotation:workbench", args=[labelled.slug, alice.pk])).content.decode()

    assert "sent back" in queue
    assert 'id="wb-sent-back"' in bench
    assert (
        "The codebook changed after you labelled this item: Out of memory, chosen on v1, was redefined at v2."
        in bench
    )
    assert 'name="v-1-symptom" value="oom" checked' in bench  # her earlier label, ticked
    assert "howto" not in bench.split('id="wb-sent-back"', 1)[1].split("</div>", 1)[0]  # not bob's label
    assert annotator_a.username not in SendBack.objects.get().reason  # no names at all in the reason


def test_the_new_submission_is_consolidated_and_closes_the_send_back(
    labelled: Study, outdated: Item, lead_client: Client, client: Client, annotator_a: User
) -> None:
    send_back(lead_client, labelled, outdated)
    alice = Assignment.objects.get(item=outdated, annotator=annotator_a)
    client.force_login(annotator_a)
    version = Codebook.objects.get(study=labelled).version  # 2: oom was redefined

    response = client.post(
        reverse("annotation:submit", args=[labelled.slug, alice.pk]),
        {"codebook_version": str(version), "finding": ["1"], "v-1-type": ["howto"]},
    )

    assert response.status_code == 302, response.content.decode()[:2000]
    alice.refresh_from_db()
    assert alice.status == AssignmentStatus.SUBMITTED and alice.annotation.codebook_version == version
    decision = Decision.objects.get(item=outdated, is_current=True)  # she now agrees with bob: unanimous
    assert decision.provenance == "unanimous"
    bench = client.get(reverse("annotation:workbench", args=[labelled.slug, alice.pk])).content.decode()
    assert 'id="wb-sent-back"' not in bench
    assert rereview_worklist(labelled) == []


def test_an_item_off_the_worklist_cannot_be_sent_back(labelled: Study, lead_client: Client) -> None:
    item = Item.objects.get(study=labelled, url=ITEM)  # nothing changed in the codebook

    page = send_back(lead_client, labelled, item)

    assert f"{ITEM} is not on the re-review worklist: nothing to send back" in page
    assert Decision.objects.filter(item=item, is_current=True).exists()
    assert not SendBack.objects.exists()


def test_an_annotator_cannot_send_back(
    labelled: Study, outdated: Item, client: Client, annotator_a: User
) -> None:
    client.force_login(annotator_a)
    url = reverse("export:paper-send-back", args=[labelled.slug, outdated.pk])
    assert client.post(url).status_code == 403
    assert not SendBack.objects.exists()


def test_a_send_back_survives_the_package(
    labelled: Study, outdated: Item, lead_client: Client, annotator_a: User, tmp_path: Path, settings: Any
) -> None:
    send_back(lead_client, labelled, outdated)
    settings.EXPORT_ROOT = tmp_path
    path = tmp_path / "package.zip"
    build_package(labelled, path)
    with zipfile.ZipFile(path) as archive:
        (packed,) = json.loads(archive.read("discussion.json"))["send_backs"]
    assert (packed["item"], packed["annotator"], packed["sent_by"]) == (ITEM, annotator_a.username, "lena")

    restored = import_study("sent-back-again", path).study

    sent = SendBack.objects.get(assignment__study=restored)
    original = SendBack.objects.get(assignment__study=labelled)
    assert (sent.assignment.item.url, sent.assignment.annotator, sent.reason, sent.labels_before) == (
        ITEM, annotator_a, original.reason, original.labels_before
    )  # fmt: skip
    assert sent.assignment.status == AssignmentStatus.OPEN
