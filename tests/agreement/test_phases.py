"""Agreement before and after discussion: blind figures read the frozen record, `discussed` the revisions."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from apps.agreement.ratings import RatingsError, load_study_ratings
from apps.agreement.services import command_snapshot, dimension_report
from apps.annotation import services
from tests.api.world import BOB_LABELS, World, build_world

pytestmark = pytest.mark.django_db

FAULT = {"findings": [{"values": {"type": ["fault"], "symptom": ["hang"], "fix": ["config"]}}]}


@pytest.fixture
def world(study: Any, owner: Any, lead: Any, annotator_a: Any, annotator_b: Any, outsider: Any) -> World:
    """Round 1: item 1 disagrees (fault / howto), item 3 agrees (howto / howto); then revealed."""
    study.discuss_after_reveal = True
    study.save(update_fields=["discuss_after_reveal"])
    w = build_world(study, owner, lead, annotator_a, annotator_b, outsider)
    version = services.load_codebook(study).version
    services.submit_annotation(w.assignment("alice", 2), BOB_LABELS, w.alice, codebook_version=version)
    services.submit_annotation(w.assignment("bob", 2), BOB_LABELS, w.bob, codebook_version=version)
    return w


def _type_agreement(world: World, phase: str) -> dict[str, Any]:
    ratings = load_study_ratings(world.study, dimension="type", phase=phase)
    return dimension_report(ratings, "type", round_number=1)


def test_blind_figures_never_change_after_the_reveal_and_discussed_ones_follow_revisions(
    world: World,
) -> None:
    before_reveal = _type_agreement(world, "blind")
    assert before_reveal["percent_agreement"] == 0.5 and before_reveal["phase"] == "blind"
    services.reveal_round(world.study, 1, force=True)
    services.revise_annotation(world.assignment("bob", 0), FAULT, world.bob)
    blind, discussed = _type_agreement(world, "blind"), _type_agreement(world, "discussed")
    assert blind["percent_agreement"] == 0.5 and blind["cohen_kappa"] == before_reveal["cohen_kappa"]
    assert discussed["percent_agreement"] == 1.0 and discussed["phase"] == "discussed"


def test_before_the_reveal_both_phases_read_the_same_labels(world: World) -> None:
    assert (
        _type_agreement(world, "blind")["percent_agreement"]
        == _type_agreement(world, "discussed")["percent_agreement"]
    )


def test_an_unknown_phase_is_refused_by_name(world: World) -> None:
    with pytest.raises(RatingsError, match="unknown phase 'after'; valid phases: blind, discussed"):
        load_study_ratings(world.study, phase="after")


def test_the_agreement_command_reports_the_phase_it_was_asked(world: World, capsys: Any) -> None:
    services.reveal_round(world.study, 1, force=True)
    services.revise_annotation(world.assignment("bob", 0), FAULT, world.bob)
    args = [world.study.slug, "--dimension", "type", "--round", "1", "--format", "json"]
    call_command("agreement", *args)
    blind = json.loads(capsys.readouterr().out)
    call_command("agreement", *args, "--phase", "discussed")
    discussed = json.loads(capsys.readouterr().out)
    assert (blind["phase"], blind["percent_agreement"]) == ("blind", 0.5)
    assert (discussed["phase"], discussed["percent_agreement"]) == ("discussed", 1.0)
    with pytest.raises(CommandError, match="--phase"):
        call_command("agreement", "--ratings", "x.csv", "--phase", "blind")


def test_the_api_computes_a_report_in_either_phase(world: World) -> None:
    from rest_framework.test import APIClient

    services.reveal_round(world.study, 1, force=True)
    services.revise_annotation(world.assignment("bob", 0), FAULT, world.bob)
    client = APIClient()
    client.force_login(world.lead)
    url = f"/api/v1/studies/{world.study.slug}/agreement/snapshots/"
    body = client.post(url, {"dimension": "type", "round": 1, "phase": "discussed"}, format="json").json()
    assert body["result"]["phase"] == "discussed" and body["result"]["percent_agreement"] == 1.0
    snapshot = command_snapshot(world.study, dimension="type", round_number=1)
    assert snapshot.result["percent_agreement"] == 0.5


def test_the_dashboard_shows_a_revealed_rounds_blind_and_after_discussion_figures(
    world: World, client: Any
) -> None:
    client.force_login(world.lead)
    url = reverse("agreement:dashboard", kwargs={"slug": world.study.slug})
    assert "Before and after discussion" not in client.get(url).content.decode()
    services.reveal_round(world.study, 1, force=True)
    services.revise_annotation(world.assignment("bob", 0), FAULT, world.bob)
    page = client.get(url).content.decode()
    assert "Before and after discussion" in page
    row = page.split('data-dimension="type" data-round="1"', 1)[1].split("</tr>", 1)[0]
    assert ">0.000" in row.split("blind-kappa", 1)[1].split("</td>")[0]  # alice fault/howto, bob howto/howto
    assert ">1.000" in row.split("discussed-kappa", 1)[1].split("</td>")[0]  # bob revised item 1 to fault


def test_after_discussion_the_command_api_and_dashboard_say_what_discussion_resolved_and_why(
    world: World, client: Any, capsys: Any
) -> None:
    """#20 point 6: the share of disagreements resolved by discussion and by the adjudicator and the
    count per cause, with the figures after discussion; on the dashboard per category too."""
    from rest_framework.test import APIClient

    from apps.annotation.models import Round
    from apps.annotation.services import causes

    services.reveal_round(world.study, 1, force=True)
    services.revise_annotation(world.assignment("bob", 0), FAULT, world.bob)  # item 1 now agrees
    round_ = Round.objects.get(study=world.study, number=1)
    causes.set_cause(round_, world.items[0], world.bob, "slip", note="misread the trace")
    expected = {
        "1": {
            "resolved_by_discussion": 1,
            "adjudicated": 0,
            "unresolved": 0,
            "share_discussion": 1.0,
            "share_adjudicator": 0.0,
            "causes": {"slip": 1},
        }
    }

    call_command("agreement", world.study.slug, "--round", "1", "--phase", "discussed", "--format", "json")
    every = json.loads(capsys.readouterr().out)
    assert all(report["discussion"] == expected for report in every.values())
    call_command("agreement", world.study.slug, "--dimension", "type", "--format", "json")
    assert "discussion" not in json.loads(capsys.readouterr().out)  # blind: no discussion yet

    api = APIClient()
    api.force_login(world.lead)
    url = f"/api/v1/studies/{world.study.slug}/agreement/snapshots/"
    body = api.post(url, {"dimension": "type", "round": 1, "phase": "discussed"}, format="json").json()
    assert body["result"]["discussion"] == expected

    client.force_login(world.lead)
    dashboard = reverse("agreement:dashboard", kwargs={"slug": world.study.slug})
    page = client.get(dashboard, {"dimension": "type", "round": "1"}).content.decode()
    resolved = page.split('id="discussion-resolved"', 1)[1].split("</table>", 1)[0]
    assert 'data-cause="slip">slip: 1</span>' in resolved and "1 (100 %)" in resolved
    assert "Cohen's kappa after discussion" in page
    fault = page.split('data-category="fault"', 1)[1].split("</tr>", 1)[0]
    assert ">1.000" in fault.split("after-kappa", 1)[1]


def test_the_before_and_after_table_downloads_with_the_pages_figures(world: World, client: Any) -> None:
    import csv
    import io

    services.reveal_round(world.study, 1, force=True)
    services.revise_annotation(world.assignment("bob", 0), FAULT, world.bob)
    client.force_login(world.lead)
    page = client.get(reverse("agreement:dashboard", kwargs={"slug": world.study.slug})).content.decode()
    for fmt in ("csv", "md", "tex"):
        assert f"/agreement/tables/discussion.{fmt}?" in page
    url = reverse("agreement:table", args=[world.study.slug, "discussion", "csv"])
    rows = list(csv.DictReader(io.StringIO(client.get(url).content.decode())))
    line = next(r for r in rows if r["Round"] == "1" and r["Dimension"] == "Issue type")
    assert float(line["Cohen κ blind"]) == 0.0 and float(line["Cohen κ after"]) == 1.0
