"""Suggestions (issue #21 point 5): a model's labels in the workbench of a labelling round a lead switched
on, never in a reliability round or on an item of a reliability round still blind; each annotation
records that it was shown one, and agreement with models leaves those labels out."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from apps.agreement.ratings import load_study_ratings
from apps.annotation import services as labelling
from apps.annotation.models import Annotation, Round, RoundKind
from apps.annotation.suggestions import suggestion_for
from apps.raters.suggestions import SuggestionError, switch_suggestions
from tests.api.world import World, build_world
from tests.raters.conftest import write_csv

pytestmark = pytest.mark.django_db

RATER = "zeta-model-4b7e"  # a marker: no annotator's page may show it while it must stay hidden


@pytest.fixture
def world(study: Any, owner: Any, lead: Any, annotator_a: Any, annotator_b: Any, outsider: Any) -> World:
    return build_world(study, owner, lead, annotator_a, annotator_b, outsider)


def _model_labels(world: World, tmp_path: Path, rows: list[tuple[object, ...]]) -> None:
    path = write_csv(tmp_path / "model.csv", "item,dimension,label,sample", rows)
    call_command("import_model_labels", world.study.slug, str(path), "--rater", RATER, stdout=StringIO())


@pytest.fixture
def suggested(world: World, tmp_path: Path) -> World:
    """The model labelled items 1 to 3 (three samples on item 3: hang, hang, crash); round 1 is made a
    labelling round and shows the model's suggestions."""
    rows: list[tuple[object, ...]] = []
    for n, item in enumerate(world.items[:3]):
        symptoms = ["hang", "hang", "crash"] if n == 2 else ["hang"]
        for sample, symptom in enumerate(symptoms):
            rows += [(item.url, "type", "fault", sample), (item.url, "symptom", symptom, sample)]
            rows += [(item.url, "fix", "config", sample)]
    _model_labels(world, tmp_path, rows)
    labelling.set_round_kind(world.study, 1, RoundKind.LABELLING)
    switch_suggestions(world.study, 1, RATER, world.lead)
    return world


def _workbench(client: Client, world: World, username: str, index: int) -> str:
    user = world.alice if username == "alice" else world.bob
    client.force_login(user)
    assignment = world.assignment(username, index)
    response = client.get(reverse("annotation:workbench", args=[world.study.slug, assignment.pk]))
    assert response.status_code == 200
    return response.content.decode()


def test_a_labelling_round_shows_the_switched_on_model_with_the_share_of_its_samples(
    client: Client, suggested: World
) -> None:
    page = _workbench(client, suggested, "alice", 2)
    assert f"Suggested by {RATER}" in page
    assert "Hang" in page and "67 % of 3 samples" in page and "33 % of 3 samples" in page
    shown = suggestion_for(Round.objects.get(pk=suggested.round.pk), suggested.items[2].pk)
    assert shown is not None and shown.samples == 3
    assert [(v.dimension, v.category, round(v.share, 3)) for v in shown.values] == [
        ("Issue type", "Fault", 1.0),
        ("Symptom", "Hang", 0.667),
        ("Symptom", "Crash", 0.333),
        ("Fix", "Config", 1.0),
    ]


def test_showing_a_suggestion_marks_the_annotation_assisted_and_the_submission_keeps_the_mark(
    client: Client, suggested: World
) -> None:
    assignment = suggested.assignment("alice", 2)
    assert not Annotation.objects.filter(assignment=assignment).exists()
    _workbench(client, suggested, "alice", 2)
    assert Annotation.objects.get(assignment=assignment).suggestion_shown  # recorded when shown
    version = labelling.load_codebook(suggested.study).version
    labels = {"findings": [{"values": {"type": ["fault"], "symptom": ["hang"], "fix": ["config"]}}]}
    labelling.submit_annotation(assignment, labels, suggested.alice, codebook_version=version)
    annotation = Annotation.objects.get(assignment=assignment)
    assert annotation.submitted_at is not None and annotation.suggestion_shown


def test_a_reliability_round_shows_no_suggestion_even_with_a_switch_left_on(
    client: Client, suggested: World
) -> None:
    labelling.set_round_kind(suggested.study, 1, RoundKind.RELIABILITY)
    page = _workbench(client, suggested, "alice", 2)
    assert RATER not in page and "Suggested by" not in page
    assert not Annotation.objects.filter(assignment=suggested.assignment("alice", 2)).exists()
    labelling.reveal_round(suggested.study, 1, force=True, actor=suggested.lead)
    revealed = Round.objects.get(pk=suggested.round.pk)
    assert suggestion_for(revealed, suggested.items[2].pk) is None  # nor after its reveal
    with pytest.raises(SuggestionError, match="is a reliability round"):
        switch_suggestions(suggested.study, 1, RATER, suggested.lead)


def test_no_round_shows_a_suggestion_on_an_item_of_a_reliability_round_still_blind(suggested: World) -> None:
    study, item = suggested.study, suggested.items[2]
    other = Round.objects.create(study=study, number=2, name="Round 2", method="manual")
    other.round_items.create(item=item, position=0)  # a reliability round, blind: the item's second round
    labelling_round = Round.objects.get(pk=suggested.round.pk)
    assert suggestion_for(labelling_round, item.pk) is None
    assert suggestion_for(labelling_round, suggested.items[1].pk) is not None  # not in round 2
    labelling.reveal_round(study, 2, force=True, actor=suggested.lead)
    assert suggestion_for(labelling_round, item.pk) is not None  # round 2 is no longer blind


def test_a_switch_to_an_unknown_rater_or_round_names_the_problem(suggested: World) -> None:
    with pytest.raises(SuggestionError, match="no model rater 'nobody'"):
        switch_suggestions(suggested.study, 1, "nobody", suggested.lead)
    with pytest.raises(SuggestionError, match="no round 9"):
        switch_suggestions(suggested.study, 9, RATER, suggested.lead)


def test_switched_off_the_workbench_shows_no_suggestion(client: Client, suggested: World) -> None:
    switch_suggestions(suggested.study, 1, None, suggested.lead)
    assert "Suggested by" not in _workbench(client, suggested, "alice", 2)


def test_agreement_with_a_model_leaves_assisted_labels_out_unless_asked(suggested: World) -> None:
    study = suggested.study
    Annotation.objects.filter(assignment=suggested.assignment("alice", 0)).update(suggestion_shown=True)
    people = load_study_ratings(study, dimension="type")
    assert suggested.alice.pk in set(people.rows["annotator"].tolist())  # people alone: every label

    def alices_items(include: bool) -> set[int]:
        ratings = load_study_ratings(
            study, dimension="type", raters=["alice", "bob", RATER], include_assisted=include
        )
        return {int(r["item"]) for r in ratings.rows if r["annotator"] == suggested.alice.pk}

    item0, item1 = suggested.items[0].pk, suggested.items[1].pk
    assert alices_items(False) == {item1}
    assert alices_items(True) == {item0, item1}


def test_the_agreement_command_compares_a_model_with_the_decisions_and_leaves_assisted_labels_out(
    suggested: World,
) -> None:
    from apps.adjudication.services import decide

    study = suggested.study
    lead = suggested.lead
    version = labelling.load_codebook(study).version
    bob_howto = {"findings": [{"values": {"type": ["howto"]}}]}
    labelling.submit_annotation(
        suggested.assignment("bob", 1), bob_howto, suggested.bob, codebook_version=version
    )
    fault = {"type": ["fault"], "symptom": ["hang"], "fix": ["config"]}
    decide(suggested.items[0], [fault], actor=lead, expected_decision_id=None)
    decide(suggested.items[1], [{"type": ["howto"]}], actor=lead, expected_decision_id=None)
    Annotation.objects.filter(assignment=suggested.assignment("alice", 0)).update(suggestion_shown=True)

    def report(*extra: str) -> dict[str, Any]:
        out = StringIO()
        call_command(
            "agreement", study.slug, "--dimension", "type", "--raters", f"alice,bob,{RATER}",
            "--format", "json", *extra, stdout=out, stderr=StringIO(),
        )  # fmt: skip
        result: dict[str, Any] = json.loads(out.getvalue())
        return result

    plain, kept = report(), report("--include-assisted")
    gold = plain["gold"][RATER]
    assert gold["n"] == 2 and gold["accuracy"] == 0.5  # fault right, howto wrong
    assert plain["n_ratings"] < kept["n_ratings"]  # alice's assisted label on item 1 left out, then kept


def test_the_api_compares_people_and_a_model_with_its_alt_test_and_gold(suggested: World) -> None:
    from rest_framework.test import APIClient

    client = APIClient()
    client.force_login(suggested.lead)
    url = f"/api/v1/studies/{suggested.study.slug}/agreement/snapshots/"
    body = {"dimension": "type", "raters": ["alice", "bob", RATER], "alt_test": RATER}
    response = client.post(url, body, format="json")
    assert response.status_code == 201, response.content
    result = response.json()["result"]
    assert result["n_annotators"] == 3
    assert {p["a"] for p in result["pairwise"]} | {p["b"] for p in result["pairwise"]} == {
        "alice",
        "bob",
        RATER,
    }
    assert result["gold"] == {RATER: None}  # nothing decided yet
    assert result["alt_test"]["rater"] == RATER
    refused = client.post(url, {"dimension": "type", "raters": ["alice", "nobody"]}, format="json")
    assert refused.status_code == 400 and "nobody" in refused.content.decode()
    refused = client.post(url, {"dimension": "type", "epsilon": 0.1}, format="json")
    assert refused.status_code == 400 and "alt_test" in refused.content.decode()
    client.force_login(suggested.alice)
    assert client.post(url, body, format="json").status_code == 403  # a model's figures are a lead's


def test_a_lead_makes_a_round_a_labelling_round_and_switches_suggestions_in_the_browser(
    client: Client, world: World, tmp_path: Path
) -> None:
    _model_labels(world, tmp_path, [(world.items[2].url, "type", "howto", 0)])
    client.force_login(world.lead)
    slug = world.study.slug
    refused = client.post(reverse("raters:suggestions", args=[slug, 1]), {"rater": RATER}, follow=True)
    assert "is a reliability round" in refused.content.decode()
    page = client.post(reverse("annotation:round-kind", args=[slug, 1]), {"kind": "labelling"}, follow=True)
    assert "Round 1 is a labelling round" in page.content.decode()
    page = client.post(reverse("raters:suggestions", args=[slug, 1]), {"rater": RATER}, follow=True)
    assert f"shows {RATER}&#x27;s labels as suggestions" in page.content.decode()
    assert f'<option value="{RATER}" selected>' in page.content.decode()
    assert "Suggested by" in _workbench(client, world, "alice", 2)
    client.force_login(world.lead)
    client.post(reverse("raters:suggestions", args=[slug, 1]), {"rater": ""})
    assert "Suggested by" not in _workbench(client, world, "alice", 2)
