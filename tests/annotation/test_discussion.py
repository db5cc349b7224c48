"""Round phases: the reveal freezes the blind record; revisions in discussion; `discussed` decisions."""

from __future__ import annotations

import io
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse
from rest_framework.test import APIClient

from apps.adjudication.models import Decision, Review, ReviewState
from apps.annotation import services
from apps.annotation.models import BlindRecord, BlindValue, Revision, Round, RoundPhase
from apps.annotation.phases import is_blind
from apps.core.generations import figures_changed
from tests.api.world import BOB_LABELS, World, build_world

pytestmark = pytest.mark.django_db

AGREED_WITH_ALICE = {"findings": [{"values": {"type": ["fault"], "symptom": ["hang"], "fix": ["config"]}}]}


@pytest.fixture
def world(study: Any, owner: Any, lead: Any, annotator_a: Any, annotator_b: Any, outsider: Any) -> World:
    study.discuss_after_reveal = True
    study.save(update_fields=["discuss_after_reveal"])
    return build_world(study, owner, lead, annotator_a, annotator_b, outsider)


def _revealed(world: World) -> Round:
    services.reveal_round(world.study, 1, force=True, actor=world.lead)
    figures_changed(world.study.pk)  # as the request, command or API call that reveals does
    return Round.objects.get(pk=world.round.pk)


def test_a_round_is_blind_until_revealed_then_in_discussion(world: World) -> None:
    assert is_blind(world.round)
    result = services.reveal_round(world.study, 1, force=True, actor=world.lead)
    assert result.revealed and result.frozen == 3 and result.open == 3
    round_ = Round.objects.get(pk=world.round.pk)
    assert not is_blind(round_) and round_.phase == RoundPhase.DISCUSSION and round_.revealed_by == world.lead


def test_a_round_that_skips_discussion_goes_straight_to_adjudication(world: World) -> None:
    Round.objects.filter(pk=world.round.pk).update(discussion=False)
    assert _revealed(world).phase == RoundPhase.ADJUDICATION


def test_the_lead_chooses_at_the_reveal_whether_the_round_discusses(world: World, client: Any) -> None:
    """The study's default (here: discuss) is only a default: the reveal form, the command and the API
    each choose for the round, so a study can discuss without anyone touching the admin."""
    client.force_login(world.lead)
    page = client.get(reverse("annotation:round-detail", args=[world.study.slug, 1])).content.decode()
    assert 'name="then" value="discussion" checked' in page
    client.post(
        reverse("annotation:reveal", args=[world.study.slug, 1]), {"force": "1", "then": "adjudication"}
    )
    round_ = Round.objects.get(pk=world.round.pk)
    assert (round_.phase, round_.discussion) == (RoundPhase.ADJUDICATION, False)


def test_a_study_that_does_not_discuss_can_discuss_one_round(world: World) -> None:
    world.study.discuss_after_reveal = False
    world.study.save(update_fields=["discuss_after_reveal"])
    call_command(
        "reveal_round", world.study.slug, "--round", "1", "--force", "--discussion", stdout=io.StringIO()
    )
    assert Round.objects.get(pk=world.round.pk).phase == RoundPhase.DISCUSSION


def test_the_api_reveal_takes_the_rounds_choice(world: World) -> None:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {world.token(world.lead)}")
    url = reverse("api-round-reveal", args=[world.study.slug, 1])
    response = client.post(url, {"force": True, "discussion": False}, format="json")
    assert response.status_code == 200 and response.json()["phase"] == RoundPhase.ADJUDICATION


def test_revealing_with_open_assignments_needs_force_and_says_how_many(world: World) -> None:
    with pytest.raises(services.OpenAssignments, match="3 open assignments"):
        services.reveal_round(world.study, 1)
    assert is_blind(Round.objects.get(pk=world.round.pk))
    assert not BlindRecord.objects.exists()


def test_reveal_is_idempotent_and_the_blind_record_never_changes(world: World) -> None:
    _revealed(world)
    before = list(
        BlindValue.objects.order_by("pk").values_list("record__assignment", "dimension", "category")
    )
    again = services.reveal_round(world.study, 1, force=True)
    assert not again.revealed and again.frozen == 0
    services.revise_annotation(world.assignment("bob", 0), AGREED_WITH_ALICE, world.bob)
    after = list(BlindValue.objects.order_by("pk").values_list("record__assignment", "dimension", "category"))
    assert before == after and len(before) == 7  # alice 3 + 3, bob 1
    record = BlindRecord.objects.get(assignment=world.assignment("bob", 0))
    assert record.labels == [{"type": ["howto"]}] and record.memo == BOB_LABELS["memo"]


def test_a_revision_that_agrees_is_decided_as_discussed_and_keeps_the_history(world: World) -> None:
    _revealed(world)
    assert Review.objects.get(item=world.items[0]).state == ReviewState.DISAGREEMENT
    result = services.revise_annotation(world.assignment("bob", 0), AGREED_WITH_ALICE, world.bob)
    assert result.changed
    decision = Decision.objects.get(item=world.items[0], is_current=True)
    assert decision.provenance == "discussed"
    revision = Revision.objects.get(annotation__assignment=world.assignment("bob", 0))
    assert revision.labels_before == [{"type": ["howto"]}]
    assert revision.labels_after == [{"type": ["fault"], "symptom": ["hang"], "fix": ["config"]}]


def test_the_discussion_page_shows_a_revised_annotators_blind_labels_beside_the_revision(
    world: World, client: Any
) -> None:
    _revealed(world)
    services.revise_annotation(world.assignment("bob", 0), AGREED_WITH_ALICE, world.bob)
    client.force_login(world.alice)
    page = client.get(reverse("annotation:discussion", args=[world.study.slug, 1])).content.decode()
    article = page.split(f'id="revealed-{world.items[0].pk}"', 1)[1].split("</article>", 1)[0]
    revised = article.split('<span class="pill">revised</span>', 1)[1]
    assert "Blind labels, before the revision" in revised
    blind = revised.split("<summary>Blind labels, before the revision</summary>", 1)[1].split(
        "</details>", 1
    )[0]
    assert "How-to" in blind and "Hang" not in blind  # bob's blind how-to, not his revised fault


def test_a_lead_closes_the_discussion_and_the_round_goes_to_adjudication(world: World, client: Any) -> None:
    _revealed(world)
    client.force_login(world.lead)
    page = client.get(reverse("annotation:round-detail", args=[world.study.slug, 1])).content.decode()
    assert 'id="close-discussion"' in page
    client.post(reverse("annotation:close-discussion", args=[world.study.slug, 1]))
    assert Round.objects.get(pk=world.round.pk).phase == RoundPhase.ADJUDICATION
    with pytest.raises(services.NotInDiscussion, match="in adjudication"):
        services.revise_annotation(world.assignment("bob", 0), AGREED_WITH_ALICE, world.bob)
    with pytest.raises(services.NotInDiscussion, match="is not in discussion: it is in adjudication"):
        services.close_discussion(world.study, 1)


def test_a_revision_that_still_disagrees_waits_for_the_lead(world: World) -> None:
    _revealed(world)
    other = {"findings": [{"values": {"type": ["fault"], "symptom": ["crash"], "fix": ["code"]}}]}
    services.revise_annotation(world.assignment("bob", 0), other, world.bob)
    assert Review.objects.get(item=world.items[0]).state == ReviewState.DISAGREEMENT
    assert not Decision.objects.filter(item=world.items[0], is_current=True).exists()


def test_revising_before_the_reveal_is_refused_with_the_reason(world: World) -> None:
    with pytest.raises(services.NotInDiscussion, match="still blind"):
        services.revise_annotation(world.assignment("bob", 0), AGREED_WITH_ALICE, world.bob)
    assert not Revision.objects.exists()


def test_revising_another_annotators_assignment_is_refused(world: World) -> None:
    _revealed(world)
    with pytest.raises(services.NotYourAssignment):
        services.revise_annotation(
            world.assignment("alice", 0), {"findings": BOB_LABELS["findings"]}, world.bob
        )


def test_revising_a_decided_item_is_refused(world: World) -> None:
    _revealed(world)
    services.revise_annotation(world.assignment("bob", 0), AGREED_WITH_ALICE, world.bob)
    with pytest.raises(services.AlreadyDecided):
        services.revise_annotation(
            world.assignment("alice", 0), {"findings": BOB_LABELS["findings"]}, world.alice
        )


def test_revising_in_adjudication_is_refused(world: World) -> None:
    Round.objects.filter(pk=world.round.pk).update(discussion=False)
    _revealed(world)
    with pytest.raises(services.NotInDiscussion, match="adjudication"):
        services.revise_annotation(world.assignment("bob", 0), AGREED_WITH_ALICE, world.bob)


def test_the_reveal_round_command_needs_force_then_is_idempotent(world: World, capsys: Any) -> None:
    with pytest.raises(CommandError, match="3 open assignments"):
        call_command("reveal_round", world.study.slug, "--round", "1")
    call_command("reveal_round", world.study.slug, "--round", "1", "--force")
    assert "3 annotations frozen" in capsys.readouterr().out
    call_command("reveal_round", world.study.slug, "--round", "1", "--force")
    assert "already revealed" in capsys.readouterr().out
    with pytest.raises(CommandError, match="no round 7"):
        call_command("reveal_round", world.study.slug, "--round", "7")


def test_the_lead_reveals_in_the_browser_only_once_confirmed(world: World, client: Any) -> None:
    client.force_login(world.lead)
    detail = reverse("annotation:round-detail", kwargs={"slug": world.study.slug, "number": 1})
    assert "3 assignments still open" in client.get(detail).content.decode()
    url = reverse("annotation:reveal", kwargs={"slug": world.study.slug, "number": 1})
    page = client.post(url, follow=True).content.decode()
    assert "3 open assignments" in page and is_blind(Round.objects.get(pk=world.round.pk))
    client.post(url, {"force": "1"})
    assert Round.objects.get(pk=world.round.pk).phase == RoundPhase.DISCUSSION


def test_after_the_reveal_bob_sees_alices_labels_and_memo_beside_his_disagreements_first(
    world: World, client: Any
) -> None:
    from tests.api.world import ALICE_CODE_KEY, ALICE_MEMO

    client.force_login(world.bob)
    url = reverse("annotation:discussion", kwargs={"slug": world.study.slug, "number": 1})
    assert ALICE_MEMO not in client.get(url).content.decode()
    _revealed(world)
    page = client.get(url).content.decode()
    assert ALICE_MEMO in page and "alice" in page and "disagreement" in page
    assert ALICE_CODE_KEY not in page  # item 2: bob has not labelled it
    workbench = reverse(
        "annotation:workbench", kwargs={"slug": world.study.slug, "pk": world.assignment("bob", 0).pk}
    )
    body = client.get(workbench).content.decode()
    assert ALICE_MEMO in body and "is in discussion" in body
    assert (
        reverse("annotation:revise", kwargs={"slug": world.study.slug, "pk": world.assignment("bob", 0).pk})
        in body
    )


def test_names_are_hidden_on_the_reveal_when_the_study_hides_them(world: World, client: Any) -> None:
    world.study.show_annotator_names = False
    world.study.save(update_fields=["show_annotator_names"])
    _revealed(world)
    client.force_login(world.bob)
    page = client.get(
        reverse("annotation:discussion", kwargs={"slug": world.study.slug, "number": 1})
    ).content
    assert b"Annotator A" in page and b">alice<" not in page


def test_revising_in_the_browser_before_the_reveal_is_a_409(world: World, client: Any) -> None:
    client.force_login(world.bob)
    url = reverse("annotation:revise", kwargs={"slug": world.study.slug, "pk": world.assignment("bob", 0).pk})
    response = client.post(url, {"f1-type": "fault"})
    assert response.status_code == 409 and b"still blind" in response.content


def _labels_file(tmp_path: Any, text: str) -> str:
    path = tmp_path / "revisions.csv"
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_import_labels_phase_discussed_revises_and_consolidates_as_discussed(
    world: World, tmp_path: Any, capsys: Any
) -> None:
    _revealed(world)
    url = world.items[0].url
    path = _labels_file(
        tmp_path,
        f"item,annotator,dimension,label,round\n{url},bob,type,fault,1\n{url},bob,symptom,hang,1\n"
        f"{url},bob,fix,config,1\n",
    )
    call_command("import_labels", world.study.slug, path, "--phase", "discussed")
    assert "1 updated" in capsys.readouterr().out
    assert Decision.objects.get(item=world.items[0], is_current=True).provenance == "discussed"
    assert Revision.objects.get(annotation__assignment=world.assignment("bob", 0)).imported


def test_import_labels_phase_discussed_names_the_row_it_refuses_and_writes_nothing(
    world: World, tmp_path: Any
) -> None:
    url, open_url = world.items[0].url, world.items[2].url
    path = _labels_file(tmp_path, f"item,annotator,dimension,label,round\n{url},bob,type,howto,1\n")
    with pytest.raises(CommandError, match=r"row 2, round '1': Round 1 is still blind"):
        call_command("import_labels", world.study.slug, path, "--phase", "discussed")
    _revealed(world)
    path = _labels_file(
        tmp_path,
        f"item,annotator,dimension,label,round\n{url},bob,type,howto,1\n{open_url},bob,type,howto,1\n",
    )
    with pytest.raises(CommandError, match=r"row 3, round '1': Submit your labels first"):
        call_command("import_labels", world.study.slug, path, "--phase", "discussed")
    assert not Revision.objects.exists()


def test_the_leads_queue_shows_what_discussion_resolved_and_what_waits(world: World, client: Any) -> None:
    version = services.load_codebook(world.study).version
    services.submit_annotation(
        world.assignment("alice", 2), AGREED_WITH_ALICE, world.alice, codebook_version=version
    )
    services.submit_annotation(world.assignment("bob", 2), BOB_LABELS, world.bob, codebook_version=version)
    _revealed(world)
    services.revise_annotation(world.assignment("bob", 0), AGREED_WITH_ALICE, world.bob)  # item 1 resolved
    client.force_login(world.lead)
    page = client.get(reverse("adjudication:queue", kwargs={"slug": world.study.slug})).content.decode()
    row = page.split('id="discussion-outcomes"', 1)[1].split("</section>", 1)[0]
    assert '<td class="num resolved">1 <span class="muted small">(50 %)</span></td>' in row
    assert '<td class="num unresolved">1</td>' in row
    assert '<td class="num adjudicated">0 <span class="muted small">(0 %)</span></td>' in row
    assert "not resolved by discussion" in page  # item 3 still waits, flagged in the queue


def test_once_decided_its_annotators_see_the_decision_and_whether_they_matched(
    world: World, client: Any
) -> None:
    _revealed(world)
    services.revise_annotation(world.assignment("bob", 0), AGREED_WITH_ALICE, world.bob)
    client.force_login(world.bob)
    workbench = reverse(
        "annotation:workbench", kwargs={"slug": world.study.slug, "pk": world.assignment("bob", 0).pk}
    )
    body = client.get(workbench).content.decode()
    assert "Decided: resolved by discussion" in body and "your labels matched" in body
    page = client.get(reverse("annotation:decided", kwargs={"slug": world.study.slug})).content.decode()
    own = page.split('id="own-agreement"', 1)[1].split("</section>", 1)[0]
    assert '<td class="num matched">1</td>' in own and "100%" in own


def test_an_annotator_whose_labels_differed_from_the_lead_sees_it_and_only_their_own_figure(
    world: World, client: Any
) -> None:
    from apps.adjudication.services import decide

    _revealed(world)
    gold = [{"type": ["fault"], "symptom": ["hang"], "fix": ["config"]}]
    decide(
        world.items[0],
        gold,
        actor=world.lead,
        rationale="A hang, as the logs say.",
        expected_decision_id=None,
    )
    client.force_login(world.bob)
    page = client.get(reverse("annotation:decided", kwargs={"slug": world.study.slug})).content.decode()
    assert "differed" in page and "A hang, as the logs say." in page and "adjudicated by a lead" in page
    assert '<td class="num matched">0</td>' in page and "alice" not in page  # bob's own figure only


def test_a_decision_in_a_blind_round_is_not_shown_to_its_annotators(world: World, client: Any) -> None:
    version = services.load_codebook(world.study).version
    services.submit_annotation(
        world.assignment("alice", 2), BOB_LABELS, world.alice, codebook_version=version
    )
    services.submit_annotation(world.assignment("bob", 2), BOB_LABELS, world.bob, codebook_version=version)
    assert Decision.objects.filter(item=world.items[2], is_current=True).exists()  # unanimous, blind
    client.force_login(world.bob)
    page = client.get(reverse("annotation:decided", kwargs={"slug": world.study.slug})).content.decode()
    assert "No decided item of a revealed round yet." in page


def test_the_phase_shows_in_the_annotators_queue_and_on_the_workbench(world: World, client: Any) -> None:
    client.force_login(world.bob)
    queue = reverse("annotation:queue", args=[world.study.slug])
    workbench = reverse("annotation:workbench", args=[world.study.slug, world.assignment("bob", 0).pk])
    assert '<td class="round-phase">Blind labelling' in client.get(queue).content.decode()
    _revealed(world)
    page = client.get(queue).content.decode()
    assert '<td class="round-phase">Discussion' in page and "see the labels" in page
    assert "is in discussion" in client.get(workbench).content.decode()
