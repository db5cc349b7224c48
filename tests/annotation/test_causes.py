"""Causes of disagreement (#20 point 4): the study's editable list, a cause per item of a revealed round
given by whoever takes part in its thread, a codebook gap linked to the code it led to, and the counts
with what discussion resolved on the lead's queue."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from apps.annotation import services
from apps.annotation.models import Cause, DisagreementCause, Round
from apps.annotation.services import causes, threads
from apps.taxonomy.models import Category
from tests.api.world import World, build_world

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(study: Any, owner: Any, lead: Any, annotator_a: Any, annotator_b: Any, outsider: Any) -> World:
    return build_world(study, owner, lead, annotator_a, annotator_b, outsider)


def _revealed(world: World) -> Round:
    services.reveal_round(world.study, 1, force=True, discussion=True)
    return Round.objects.get(pk=world.round.pk)


def _cause_url(world: World, n: int = 0) -> str:
    return reverse("annotation:cause", args=[world.study.slug, 1, world.items[n].pk])


def test_the_list_starts_with_the_five_defaults_and_a_lead_edits_it(world: World) -> None:
    keys = [c.key for c in causes.study_causes(world.study)]
    assert keys == ["codebook_gap", "ambiguous_item", "slip", "guideline_unclear", "other"]

    added = causes.add_cause(world.study, "Tool bug (the workbench)")
    causes.rename_cause(world.study, "slip", "Slip")
    causes.retire_cause(world.study, "other")

    assert added.key == "tool_bug_the_workbench"
    assert [c.name for c in causes.study_causes(world.study)][-2:] == [
        "Guideline unclear",
        "Tool bug (the workbench)",
    ]
    assert Cause.objects.get(study=world.study, key="slip").name == "Slip"
    with pytest.raises(causes.CauseError, match="already has a cause 'slip'"):
        causes.add_cause(world.study, "slip")


def test_an_annotator_of_the_item_gives_its_cause_after_the_reveal_and_a_codebook_gap_links_its_code(
    world: World, client: Any
) -> None:
    round_ = _revealed(world)
    hang = Category.objects.get(dimension__codebook__study=world.study, key="hang")
    client.force_login(world.bob)
    client.post(
        _cause_url(world), {"cause": "codebook_gap", "note": "no code for timeouts", "category": hang.pk}
    )

    given = DisagreementCause.objects.get(round=round_, item=world.items[0])
    assert (given.cause.key, given.note, given.category, given.set_by) == (
        "codebook_gap",
        "no code for timeouts",
        hang,
        world.bob,
    )
    page = client.get(
        reverse("annotation:thread", args=[world.study.slug, 1, world.items[0].pk])
    ).content.decode()
    assert "Codebook gap" in page and "led to" in page and f"#category-{hang.pk}" in page

    client.force_login(world.alice)  # the other annotator has the last word
    client.post(_cause_url(world), {"cause": "ambiguous_item"})
    given.refresh_from_db()
    assert (given.cause.key, given.category, given.set_by) == ("ambiguous_item", None, world.alice)


def test_only_a_codebook_gap_links_a_code_and_an_unknown_or_retired_cause_is_named(world: World) -> None:
    round_ = _revealed(world)
    hang = Category.objects.get(dimension__codebook__study=world.study, key="hang")
    with pytest.raises(causes.CauseError, match="Only a codebook gap"):
        causes.set_cause(round_, world.items[0], world.lead, "slip", category_id=hang.pk)
    causes.retire_cause(world.study, "other")
    with pytest.raises(causes.CauseError, match=r"No cause 'other' in study ddp; its causes: codebook_gap, "):
        causes.set_cause(round_, world.items[0], world.lead, "other")
    assert not DisagreementCause.objects.exists()


def test_no_cause_before_the_reveal_or_from_someone_outside_the_thread(world: World, client: Any) -> None:
    with pytest.raises(threads.ThreadClosed):
        causes.set_cause(world.round, world.items[0], world.alice, "slip")
    _revealed(world)
    client.force_login(world.bob)  # bob has not labelled item 2: its thread is not open to him yet
    assert client.post(_cause_url(world, 1), {"cause": "slip"}).status_code == 403
    client.force_login(world.outsider)
    assert client.post(_cause_url(world), {"cause": "slip"}).status_code == 404
    assert not DisagreementCause.objects.exists()


def test_the_leads_queue_counts_the_causes_and_the_share_discussion_resolved(
    world: World, client: Any
) -> None:
    round_ = _revealed(world)
    causes.set_cause(round_, world.items[0], world.lead, "guideline_unclear")
    client.force_login(world.lead)
    page = client.get(reverse("adjudication:queue", args=[world.study.slug])).content.decode()
    assert 'data-cause="guideline_unclear">Guideline unclear: 1</span>' in page
    assert reverse("annotation:causes", args=[world.study.slug]) in page


def test_only_leads_edit_the_list(world: World, client: Any) -> None:
    url = reverse("annotation:causes", args=[world.study.slug])
    client.force_login(world.alice)
    assert client.post(url, {"action": "add", "name": "Mine"}).status_code == 403
    client.force_login(world.lead)
    client.post(url, {"action": "add", "name": "Mine"})
    client.post(url, {"action": "retire", "key": "slip"})
    page = client.get(url).content.decode()
    assert 'data-cause="mine"' in page and Cause.objects.get(study=world.study, key="slip").retired


def test_an_annotator_links_no_other_annotators_proposal_and_sees_none(world: World, client: Any) -> None:
    from apps.taxonomy.models import Dimension
    from apps.taxonomy.services import propose_category

    round_ = _revealed(world)
    symptom = Dimension.objects.get(codebook__study=world.study, key="symptom")
    bobs = propose_category(symptom, "Bob's secret code", None, "only bob", world.bob).category
    client.force_login(world.alice)
    page = client.get(
        reverse("annotation:thread", args=[world.study.slug, 1, world.items[0].pk])
    ).content.decode()
    assert "Bob&#x27;s secret code" not in page and "Bob's secret code" not in page
    with pytest.raises(causes.CauseError, match=f"No category {bobs.pk}"):
        causes.set_cause(round_, world.items[0], world.alice, "codebook_gap", category_id=bobs.pk)
    response = client.post(_cause_url(world), {"cause": "codebook_gap", "category": "²"})
    assert response.status_code == 302 and not DisagreementCause.objects.exists()
    causes.set_cause(round_, world.items[0], world.lead, "codebook_gap", category_id=bobs.pk)  # a lead may


def test_a_round_revealed_straight_to_adjudication_reports_no_discussion(world: World, client: Any) -> None:
    services.reveal_round(world.study, 1, force=True, discussion=False)
    client.force_login(world.lead)
    page = client.get(reverse("adjudication:queue", args=[world.study.slug])).content.decode()
    assert 'id="discussion-outcomes"' not in page


def test_a_cause_named_items_renders_on_the_dashboard(world: World, client: Any) -> None:
    round_ = _revealed(world)
    causes.add_cause(world.study, "Items")
    causes.set_cause(round_, world.items[0], world.lead, "items")
    client.force_login(world.lead)
    page = client.get(reverse("agreement:dashboard", args=[world.study.slug]))
    assert page.status_code == 200 and 'data-cause="items">items: 1</span>' in page.content.decode()
