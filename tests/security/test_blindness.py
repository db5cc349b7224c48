"""Blind labelling: bob never reads alice's labels before a decision, by any page, partial or endpoint.

Alice's labels carry markers (her memo, and a code she proposed that only she and the leads may see;
tests/api/world.py). Every URL of the matrix that bob may open is requested as a page and as an htmx
partial, for every object of the world (each item, each of bob's assignments), and no answer may hold a
marker. The lead, who may read labels, does see them: the markers are real.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.core.cache import cache
from django.db import transaction
from django.urls import reverse
from rest_framework.test import APIClient

from apps.accounts.models import User
from apps.adjudication.models import Review, ReviewState
from apps.annotation import services as labelling
from tests.api.world import ALICE_CODE_KEY, ALICE_CODE_NAME, ALICE_MEMO, BOB_LABELS, World
from tests.html import steady

from .matrix import MATRIX, refusal

pytestmark = pytest.mark.django_db

MARKERS = (ALICE_MEMO, ALICE_CODE_NAME, ALICE_CODE_KEY)


def _variants(name: str, kwargs: dict[str, Any], world: World) -> Iterator[dict[str, Any]]:
    """The URL's kwargs for each object bob might point it at: every item, every assignment of his."""
    yield kwargs
    for key in ("pk", "item_id"):
        if key not in kwargs:
            continue
        if "item" in name or key == "item_id":
            for item in world.items:
                yield {**kwargs, key: item.pk}
        if "assignment" in name or name.startswith("annotation:"):
            for (user, _), assignment in world.assignments.items():
                if user == "bob":
                    yield {**kwargs, key: assignment.pk}


def _leaks(client: APIClient, url: str, markers: tuple[str, ...] = MARKERS) -> list[str]:
    found = []
    for headers in ({}, {"HX-Request": "true"}):
        response = client.get(url, headers=headers)
        body = b"".join(response.streaming_content) if response.streaming else response.content
        text = body.decode("utf-8", "replace")
        found += [
            f"{url} ({'htmx' if headers else 'page'}, {response.status_code}): {m}"
            for m in markers
            if m in text
        ]
    return found


def _sweep(world: World, user: User, role: str, markers: tuple[str, ...] = MARKERS) -> tuple[list[str], int]:
    client = APIClient()
    client.force_login(user)
    leaks: list[str] = []
    opened = 0
    for name, rule in MATRIX.items():
        if "GET" not in rule.methods or refusal(rule, role) is not None or name.startswith("admin:"):
            continue
        for kwargs in _variants(name, rule.kwargs(world), world):
            url = reverse(name, kwargs=kwargs or None) + rule.query
            leaks += _leaks(client, url, markers)
            opened += 1
    return leaks, opened


def test_the_other_annotator_never_sees_alices_labels_anywhere(world: World) -> None:
    leaks, opened = _sweep(world, world.bob, "other_annotator")
    assert opened > 20  # the sweep really went through the study's pages and endpoints
    assert not leaks, "\n".join(leaks)


def test_bobs_workbench_on_an_item_alice_already_labelled_shows_none_of_her_labels(world: World) -> None:
    client = APIClient()
    client.force_login(world.bob)
    url = reverse(
        "annotation:workbench", kwargs={"slug": world.study.slug, "pk": world.assignment("bob", 1).pk}
    )
    response = client.get(url)
    assert response.status_code == 200
    assert not _leaks(client, url)


def test_the_api_refuses_bob_every_path_to_alices_annotation(world: World) -> None:
    client = APIClient()
    client.force_login(world.bob)
    slug = world.study.slug
    alice_assignment = world.assignment("alice", 1).pk
    refused = {
        f"/api/v1/studies/{slug}/assignments/{alice_assignment}/annotation/": 404,
        f"/api/v1/studies/{slug}/assignments/{alice_assignment}/": 404,
        f"/api/v1/studies/{slug}/annotations/": 403,
        f"/api/v1/studies/{slug}/annotations/?annotator=alice": 403,
        f"/api/v1/studies/{slug}/items/{world.items[1].pk}/labels/": 403,
        f"/api/v1/studies/{slug}/disagreements/": 403,
        f"/api/v1/studies/{slug}/decisions/": 403,
        f"/api/v1/studies/{slug}/agreement/": 403,
        f"/api/v1/studies/{slug}/agreement/snapshots/": 403,
        f"/api/v1/studies/{slug}/exports/": 403,
    }
    for url, status in refused.items():
        assert client.get(url).status_code == status, url
    mine = client.get(f"/api/v1/studies/{slug}/my/annotations/").json()["results"]
    assert {a["annotator"] for a in mine} == {"bob"}


def test_the_codebook_does_not_show_bob_alices_proposed_code(world: World) -> None:
    client = APIClient()
    client.force_login(world.bob)
    data = client.get(f"/api/v1/studies/{world.study.slug}/codebook/").json()
    keys = {c["key"] for d in data["dimensions"] for c in d["categories"]}
    assert ALICE_CODE_KEY not in keys
    assert "hang" in keys


def test_bob_cannot_post_labels_on_alices_assignment(world: World) -> None:
    client = APIClient()
    client.force_login(world.bob)
    url = f"/api/v1/studies/{world.study.slug}/assignments/{world.assignment('alice', 2).pk}/annotation/"
    response = client.post(url, {"findings": [{"values": {"type": ["howto"]}}]}, format="json")
    assert response.status_code == 404


def test_the_lead_does_see_the_markers(world: World) -> None:
    """The markers are real: the lead, who may read labels, finds them where bob must not."""
    leaks, _ = _sweep(world, world.lead, "lead")
    assert any(ALICE_MEMO in leak for leak in leaks)
    assert any(ALICE_CODE_KEY in leak or ALICE_CODE_NAME in leak for leak in leaks)


def test_an_item_in_disagreement_is_not_decided_so_it_stays_blind(world: World) -> None:
    """The world's item 1 is an open disagreement, not a decision: the sweep above covers it blind."""
    review = Review.objects.get(item=world.items[0])
    assert review.state == ReviewState.DISAGREEMENT


# --- side channels: nothing bob reads moves with alice's labels on an item they share ------------------


def _everything_bob_reads(world: World) -> dict[str, str]:
    """Every answer bob can get (the matrix's URLs he may open, each object, page and htmx partial)."""
    client = APIClient()
    client.force_login(world.bob)
    seen = {}
    for name, rule in MATRIX.items():
        if (
            "GET" not in rule.methods
            or refusal(rule, "other_annotator") is not None
            or name.startswith("admin:")
        ):
            continue
        for kwargs in _variants(name, rule.kwargs(world), world):
            url = reverse(name, kwargs=kwargs or None) + rule.query
            for headers in ({}, {"HX-Request": "true"}):
                response = client.get(url, headers=headers)
                body = b"".join(response.streaming_content) if response.streaming else response.content
                text = steady(body.decode("utf-8", "replace"))
                seen[f"{url} ({'htmx' if headers else 'page'})"] = f"{response.status_code} {text}"
    return seen


def _bob_reads_after(world: World, alice_labels: dict[str, Any]) -> dict[str, str]:
    """Alice labels item 3 (shared, both open) with `alice_labels`, then bob submits his: what bob reads
    then. Undone afterwards, so the other outcome can be tried on the same world."""
    savepoint = transaction.savepoint()
    try:
        version = labelling.load_codebook(world.study).version
        alice, bob = world.assignment("alice", 2), world.assignment("bob", 2)
        labelling.submit_annotation(alice, alice_labels, world.alice, codebook_version=version)
        labelling.submit_annotation(bob, BOB_LABELS, world.bob, codebook_version=version)
        state = Review.objects.get(item=world.items[2]).state
        return {"review state (not shown to bob)": state, **_everything_bob_reads(world)}
    finally:
        transaction.savepoint_rollback(savepoint)
        cache.clear()


def test_nothing_bob_reads_tells_him_whether_alice_chose_as_he_did(world: World) -> None:
    """The side channel of issue #18: on a two-category dimension, a count that moves when bob submits
    (open disagreements, unanimous decisions) tells him alice's label. Bob's every page, partial and
    endpoint must read the same whether alice agreed with him or not."""
    agreed = _bob_reads_after(world, {"findings": BOB_LABELS["findings"], "memo": ""})
    disagreed = _bob_reads_after(
        world,
        {"findings": [{"values": {"type": ["fault"], "symptom": ["hang"], "fix": ["code"]}}], "memo": ""},
    )
    assert agreed.pop("review state (not shown to bob)") != disagreed.pop("review state (not shown to bob)")
    assert agreed.keys() == disagreed.keys() and len(agreed) > 40
    moved = [url for url in agreed if agreed[url] != disagreed[url]]
    assert not moved, "these tell bob whether alice agreed:\n" + "\n".join(moved)


def test_the_status_endpoint_gives_an_annotator_no_count_that_moves_with_labels(world: World) -> None:
    client = APIClient()
    client.force_login(world.bob)
    status = client.get(f"/api/v1/studies/{world.study.slug}/status/").json()
    assert status["disagreements_open"] is None and status["decisions"] is None
    assert status["assignments"] == {"open": 3, "submitted": 3} and status["items"] == 4


def test_the_lead_keeps_the_full_status(world: World) -> None:
    client = APIClient()
    client.force_login(world.lead)
    status = client.get(f"/api/v1/studies/{world.study.slug}/status/").json()
    assert status["disagreements_open"] == 1
    assert set(status["decisions"]) == {"unanimous", "majority", "discussed", "adjudicated", "imported"}


def _bobs_shared_item_after(world: World, alice_labels: dict[str, Any]) -> dict[str, str]:
    """Alice, then bob, label item 3: bob's own page of it, his annotation, and his attempt to change it."""
    savepoint = transaction.savepoint()
    try:
        version = labelling.load_codebook(world.study).version
        alice, bob = world.assignment("alice", 2), world.assignment("bob", 2)
        labelling.submit_annotation(alice, alice_labels, world.alice, codebook_version=version)
        labelling.submit_annotation(bob, BOB_LABELS, world.bob, codebook_version=version)
        client = APIClient()
        client.force_login(world.bob)
        page = reverse("annotation:workbench", kwargs={"slug": world.study.slug, "pk": bob.pk})
        api = f"/api/v1/studies/{world.study.slug}/assignments/{bob.pk}/annotation/"
        seen = {}
        for headers in ({}, {"HX-Request": "true"}):
            response = client.get(page, headers=headers)
            seen[f"page {headers}"] = f"{response.status_code} " + steady(response.content.decode())
        seen["api"] = steady(client.get(api).content.decode())
        draft = reverse("annotation:draft", kwargs={"slug": world.study.slug, "pk": bob.pk})
        response = client.post(draft, {"f1-type": "fault", "memo": "draft"}, headers={"HX-Request": "true"})
        seen["autosave"] = f"{response.status_code} {steady(response.content.decode())}"
        edit = {
            "findings": [{"values": {"type": ["fault"], "symptom": ["crash"], "fix": ["config"]}}],
            "memo": "no",
        }
        response = client.post(api, edit, format="json")
        seen["edit"] = f"{response.status_code} {steady(response.content.decode())}"
        return seen
    finally:
        transaction.savepoint_rollback(savepoint)
        cache.clear()


def test_bobs_own_page_and_edit_of_a_shared_item_read_the_same_whether_alice_agreed(world: World) -> None:
    """Once both submitted, an automatic decision (they agreed) and an open disagreement must look alike
    to bob: 'this item is decided' on his page, or an edit refused only when she agreed, would tell him."""
    agreed = _bobs_shared_item_after(world, {"findings": BOB_LABELS["findings"], "memo": ""})
    disagreed = _bobs_shared_item_after(
        world,
        {"findings": [{"values": {"type": ["fault"], "symptom": ["hang"], "fix": ["code"]}}], "memo": ""},
    )
    moved = [what for what in agreed if agreed[what] != disagreed[what]]
    assert not moved, "these tell bob whether alice agreed: " + ", ".join(moved)


# --- after the reveal: round 1's labels on the items bob labelled, nothing else -------------------------

ROUND2_MEMO = "ALICE-ROUND-TWO-MEMO-c4d1"


def _reveal_round_one_with_a_blind_round_two(world: World) -> None:
    """Round 2 (item 4, alice submitted with her own memo, bob open) stays blind; round 1 is revealed."""
    labelling.add_items_to_round(world.study, 2, [world.items[3].pk], actor=world.lead)
    labelling.assign_round(world.study, 2, ["alice", "bob"], overlap=2, actor=world.lead)
    version = labelling.load_codebook(world.study).version
    alice_two = world.study.assignments.get(round__number=2, annotator=world.alice)
    labels = {"findings": [{"values": {"type": ["howto"]}}], "memo": ROUND2_MEMO}
    labelling.submit_annotation(alice_two, labels, world.alice, codebook_version=version)
    labelling.reveal_round(world.study, 1, force=True, actor=world.lead)
    cache.clear()


def _bobs_view_of_item_one(url: str, world: World) -> bool:
    """The places where bob may now read alice's round-1 labels of item 1: his own item 1, his round."""
    bob_one = str(world.assignment("bob", 0).pk)
    return url.rstrip("/").split("/")[-1] == bob_one or "/label/" + bob_one in url or "/discussion" in url


def test_after_the_reveal_bob_sees_alices_labels_only_on_the_item_he_labelled(world: World) -> None:
    _reveal_round_one_with_a_blind_round_two(world)
    leaks, opened = _sweep(world, world.bob, "other_annotator", (*MARKERS, ROUND2_MEMO))
    assert opened > 20
    # Alice's proposed code is on item 2, which bob has not labelled; round 2 is still blind.
    assert not [leak for leak in leaks if ALICE_CODE_KEY in leak or ALICE_CODE_NAME in leak], leaks
    assert not [leak for leak in leaks if ROUND2_MEMO in leak], leaks
    outside = [leak for leak in leaks if not _bobs_view_of_item_one(leak.split(" ")[0], world)]
    assert not outside, "\n".join(outside)
    assert any(ALICE_MEMO in leak for leak in leaks)  # the reveal does show her memo on item 1


def test_after_the_reveal_the_lead_still_sees_round_two(world: World) -> None:
    _reveal_round_one_with_a_blind_round_two(world)
    client = APIClient()
    client.force_login(world.lead)
    data = client.get(f"/api/v1/studies/{world.study.slug}/annotations/?round=2").content.decode()
    assert ROUND2_MEMO in data


MODEL_MARKER = "zeta-model-4b7e"


def test_no_annotator_page_holds_a_models_output_on_a_reliability_round(world: World, tmp_path: Any) -> None:
    """Issue #21 point 5: a model labelled every item of round 1 (a reliability round, blind), and a lead
    even switched its suggestions on while the round was a labelling round, then made it a reliability
    round again. Neither annotator finds the model's name on any page, partial or endpoint (their own
    workbenches included); the lead does."""
    from io import StringIO

    from django.core.management import call_command

    from apps.annotation.models import RoundKind
    from apps.raters.suggestions import switch_suggestions

    path = tmp_path / "model.csv"
    path.write_text(
        "item,dimension,label\n" + "".join(f"{item.url},type,fault\n" for item in world.items),
        encoding="utf-8",
    )
    call_command(
        "import_model_labels", world.study.slug, str(path), "--rater", MODEL_MARKER, stdout=StringIO()
    )
    labelling.set_round_kind(world.study, 1, RoundKind.LABELLING)
    switch_suggestions(world.study, 1, MODEL_MARKER, world.lead)
    labelling.set_round_kind(world.study, 1, RoundKind.RELIABILITY)
    markers = (MODEL_MARKER,)
    for user, role in ((world.alice, "annotator"), (world.bob, "other_annotator")):
        leaks, opened = _sweep(world, user, role, markers)
        assert opened > 20
        client = APIClient()
        client.force_login(user)
        for (owner, _), assignment in world.assignments.items():
            if owner == user.username:
                leaks += _leaks(
                    client, reverse("annotation:workbench", args=[world.study.slug, assignment.pk]), markers
                )
        assert not leaks, "\n".join(leaks)
    lead_leaks, _ = _sweep(world, world.lead, "lead", markers)
    assert lead_leaks  # the marker is real: the Models screen shows the rater to the lead
