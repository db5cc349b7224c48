"""The workbench and the lead's pages through the test client: blindness, refusals, query counts."""

from __future__ import annotations

import importlib
from datetime import UTC, datetime
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from apps.accounts.models import Study, User
from apps.annotation.models import Annotation, Assignment, AssignmentStatus, Round, RoundItem
from apps.annotation.services import submit_annotation
from apps.core import generations
from apps.corpus.models import Item, Relevance
from tests.annotation.conftest import FAULT_HANG, HOWTO, Book, make_round
from tests.conftest import login
from tests.factories import ItemFactory
from tests.html import steady

pytestmark = pytest.mark.django_db


@pytest.fixture
def shared(study: Study, items: list[Item], annotator_a: User, annotator_b: User, book: Book) -> Round:
    """Round 1: alice and bob both hold items 1-3."""
    Item.objects.filter(study=study).update(
        body_html="<p>Training hangs at allreduce</p>", rendered_at=timezone.now()
    )
    return make_round(study, 1, items[:3], {annotator_a: items[:3], annotator_b: items[:3]})


def _mine(round_: Round, user: User, item: Item) -> Assignment:
    return Assignment.objects.get(round=round_, annotator=user, item=item)


def _form(values: dict[str, list[str]], version: int = 3, **extra: str) -> dict[str, Any]:
    return {"codebook_version": str(version), "finding": ["1"], **values, **extra}


FAULT_FORM = {
    "v-1-issue_type": ["fault"],
    "v-1-symptom": ["hang"],
    "v-1-fix_pattern": ["fix-config"],
    "memo": ["looks like NCCL"],
}


def test_the_workbench_shows_the_item_the_codebook_and_progress(
    client: Client, study: Study, shared: Round, annotator_a: User, items: list[Item]
) -> None:
    login(client, annotator_a)
    response = client.get(
        reverse("annotation:workbench", args=[study.slug, _mine(shared, annotator_a, items[0]).pk])
    )
    html = response.content.decode()
    assert response.status_code == 200
    assert "Training hangs at allreduce" in html
    assert 'name="v-1-symptom" value="hang"' in html and "The job stops making progress." in html
    assert "0 / 3 done" in html
    assert 'data-applies-dim="issue_type" data-applies-cat="fault"' in html
    assert "<script>" not in html and 'style="' not in html
    # the shortcuts help lists every key the workbench's scripts answer, the Fix pane's `f` too
    assert "<tr><td><kbd>f</kbd></td><td>switch between the issue and its fix" in html


def test_the_workbench_progress_counts_my_submitted_assignments_of_the_round(
    client: Client, study: Study, shared: Round, annotator_a: User, annotator_b: User, items: list[Item]
) -> None:
    submit_annotation(_mine(shared, annotator_a, items[0]), FAULT_HANG, annotator_a, codebook_version=3)
    submit_annotation(_mine(shared, annotator_b, items[1]), FAULT_HANG, annotator_b, codebook_version=3)
    login(client, annotator_a)
    html = client.get(
        reverse("annotation:workbench", args=[study.slug, _mine(shared, annotator_a, items[1]).pk])
    ).content.decode()
    assert "1 / 3 done" in html  # mine only: another annotator's submission does not count


def test_an_item_without_text_shows_the_no_text_note(
    client: Client, study: Study, book: Book, annotator_a: User
) -> None:
    item = ItemFactory(study=study, body="", body_html="", rendered_at=timezone.now())
    round_ = make_round(study, 1, [item], {annotator_a: [item]})
    login(client, annotator_a)
    response = client.get(
        reverse("annotation:workbench", args=[study.slug, _mine(round_, annotator_a, item).pk])
    )
    assert "No text stored for this item" in response.content.decode()


def test_alice_cannot_open_bobs_assignment(
    client: Client, study: Study, shared: Round, annotator_a: User, annotator_b: User, items: list[Item]
) -> None:
    bobs = _mine(shared, annotator_b, items[0])
    login(client, annotator_a)
    for name in ("annotation:workbench",):
        assert client.get(reverse(name, args=[study.slug, bobs.pk])).status_code == 404
    for name in ("annotation:draft", "annotation:submit"):
        assert client.post(reverse(name, args=[study.slug, bobs.pk]), _form(FAULT_FORM)).status_code == 404
    assert not Annotation.objects.exists()


def test_an_outsider_gets_404(
    client: Client, study: Study, shared: Round, outsider: User, annotator_a: User, items: list[Item]
) -> None:
    login(client, outsider)
    url = reverse("annotation:workbench", args=[study.slug, _mine(shared, annotator_a, items[0]).pk])
    assert client.get(url).status_code == 404
    assert client.get(reverse("annotation:queue", args=[study.slug])).status_code == 404


def test_bobs_labels_appear_in_no_page_or_partial_of_alice(
    client: Client, study: Study, shared: Round, annotator_a: User, annotator_b: User, items: list[Item]
) -> None:
    submit_annotation(
        _mine(shared, annotator_b, items[0]),
        {**HOWTO, "memo": "BOB-SECRET-MEMO"},
        annotator_b,
        codebook_version=3,
    )
    alice = _mine(shared, annotator_a, items[0])
    login(client, annotator_a)
    pages = [
        client.get(reverse("annotation:workbench", args=[study.slug, alice.pk])),
        client.get(reverse("annotation:queue", args=[study.slug])),
        client.post(
            reverse("annotation:draft", args=[study.slug, alice.pk]),
            _form(FAULT_FORM),
            HTTP_HX_REQUEST="true",
        ),
        client.post(
            reverse("annotation:submit", args=[study.slug, alice.pk]), _form({"v-1-issue_type": ["bug"]})
        ),
    ]
    for response in pages:
        html = steady(response.content.decode())
        assert "BOB-SECRET-MEMO" not in html and "bob" not in html.lower()
        assert 'value="howto" checked' not in html and 'value="parallel" checked' not in html


def test_revealed_after_decision_only_when_the_study_says_so(
    client: Client, study: Study, shared: Round, annotator_a: User, annotator_b: User, items: list[Item]
) -> None:
    from django.apps import apps

    submit_annotation(
        _mine(shared, annotator_b, items[0]), {**HOWTO, "memo": "BOB-MEMO"}, annotator_b, codebook_version=3
    )
    apps.get_model("adjudication", "Review").objects.update_or_create(
        item=items[0], defaults={"study": study, "state": "decided"}
    )
    url = reverse("annotation:workbench", args=[study.slug, _mine(shared, annotator_a, items[0]).pk])
    login(client, annotator_a)
    hidden = client.get(url).content.decode()
    assert "BOB-MEMO" not in hidden and "is decided" in hidden
    Study.objects.filter(pk=study.pk).update(reveal_labels_after_decision=True)
    shown = client.get(url).content.decode()
    assert "BOB-MEMO" in shown and "How-to question" in shown


def test_submitting_from_the_form_goes_to_the_next_item(
    client: Client, study: Study, shared: Round, annotator_a: User, items: list[Item]
) -> None:
    first, second = _mine(shared, annotator_a, items[0]), _mine(shared, annotator_a, items[1])
    login(client, annotator_a)
    response = client.post(
        reverse("annotation:submit", args=[study.slug, first.pk]), _form(FAULT_FORM, seconds="31")
    )
    assert response.status_code == 302
    assert response["Location"] == reverse("annotation:workbench", args=[study.slug, second.pk])
    annotation = Annotation.objects.get(assignment=first)
    assert (annotation.memo, annotation.seconds_spent, annotation.draft) == ("looks like NCCL", 31, {})


def test_submitting_twice_from_two_tabs_stores_one_annotation(
    client: Client, study: Study, shared: Round, annotator_a: User, items: list[Item]
) -> None:
    first = _mine(shared, annotator_a, items[0])
    login(client, annotator_a)
    url = reverse("annotation:submit", args=[study.slug, first.pk])
    assert client.post(url, _form(FAULT_FORM)).status_code == 302
    assert client.post(url, _form(FAULT_FORM)).status_code == 302
    assert Annotation.objects.filter(assignment=first).count() == 1


def test_a_refused_submission_shows_the_problem_and_keeps_the_draft(
    client: Client, study: Study, shared: Round, annotator_a: User, items: list[Item]
) -> None:
    first = _mine(shared, annotator_a, items[0])
    login(client, annotator_a)
    values = {"v-1-issue_type": ["howto"], "v-1-symptom": ["hang"], "memo": ["half done"]}
    response = client.post(reverse("annotation:submit", args=[study.slug, first.pk]), _form(values))
    html = response.content.decode()
    assert response.status_code == 422
    assert (
        "Finding 1, Symptom, &#x27;Hang&#x27;: applies only when &#x27;Issue type&#x27; is &#x27;Fault&#x27;"
        in html
    )
    assert 'value="howto" checked' in html
    first.refresh_from_db()
    assert first.status == AssignmentStatus.OPEN
    assert Annotation.objects.get(assignment=first).draft["memo"] == "half done"


def test_a_refused_submission_names_the_dimension_by_its_name_and_links_to_it(
    client: Client, study: Study, shared: Round, annotator_a: User, items: list[Item]
) -> None:
    first = _mine(shared, annotator_a, items[0])
    login(client, annotator_a)
    response = client.post(
        reverse("annotation:submit", args=[study.slug, first.pk]),
        _form({"v-1-issue_type": ["fault"], "v-1-fix_pattern": ["fix-config"]}),
    )
    html = response.content.decode()
    assert response.status_code == 422
    assert (
        '<li id="wb-error-1" data-finding="1" data-dimension="symptom">'
        '<a href="#dim-1-symptom">Finding 1, Symptom: choose a category or mark it pending</a></li>'
    ) in html
    assert "&#x27;symptom&#x27;" not in html


def test_a_category_retired_after_the_draft_was_saved_shows_ticked_as_retired(
    client: Client, study: Study, shared: Round, annotator_a: User, lead: User, items: list[Item], book: Book
) -> None:
    from apps.taxonomy.services import retire_category

    first = _mine(shared, annotator_a, items[0])
    login(client, annotator_a)
    client.post(reverse("annotation:draft", args=[study.slug, first.pk]), _form(FAULT_FORM))
    retire_category(book.categories["hang"], actor=lead)
    html = client.get(reverse("annotation:workbench", args=[study.slug, first.pk])).content.decode()
    assert (
        '<li class="opt inactive" data-key="hang" data-lineage="training hang" '
        'data-search="training &amp; evaluation &gt; hang hang"><label>'
        '<input type="radio" name="v-1-symptom" value="hang" checked>'
    ) in html
    assert '<span class="pill bad">retired</span>' in html
    assert "Finding 1, Symptom: Training &amp; Evaluation &gt; Hang (retired)" in html
    # Submitted as it stands, it is refused by name; nothing of the draft is lost.
    response = client.post(reverse("annotation:submit", args=[study.slug, first.pk]), _form(FAULT_FORM, 4))
    assert response.status_code == 422
    assert "Finding 1, Symptom, &#x27;Hang&#x27;: is retired" in response.content.decode()
    assert Annotation.objects.get(assignment=first).draft["findings"][0]["values"]["symptom"] == ["hang"]


def test_a_stale_tab_is_told_to_reload(
    client: Client, study: Study, shared: Round, annotator_a: User, items: list[Item], book: Book
) -> None:
    from apps.taxonomy.models import CategoryStatus, Codebook

    Codebook.objects.filter(pk=book.codebook.pk).update(version=4)
    book.categories["hang"].status = CategoryStatus.RETIRED
    book.categories["hang"].save()
    first = _mine(shared, annotator_a, items[0])
    login(client, annotator_a)
    response = client.post(
        reverse("annotation:submit", args=[study.slug, first.pk]), _form(FAULT_FORM, version=3)
    )
    assert response.status_code == 409
    assert (
        "The codebook changed" in response.content.decode()
        and "Reload this item" in response.content.decode()
    )
    draft = Annotation.objects.get(assignment=first).draft
    assert draft["findings"][0]["values"]["symptom"] == ["hang"]
    reloaded = client.get(reverse("annotation:workbench", args=[study.slug, first.pk])).content.decode()
    assert "Draft restored" in reloaded and 'value="fault" checked' in reloaded


def test_the_draft_autosave_stores_unvalidated_work(
    client: Client, study: Study, shared: Round, annotator_a: User, items: list[Item]
) -> None:
    first = _mine(shared, annotator_a, items[0])
    login(client, annotator_a)
    response = client.post(
        reverse("annotation:draft", args=[study.slug, first.pk]),
        _form({"v-1-issue_type": ["fault"], "memo": ["not sure yet"]}),
        HTTP_HX_REQUEST="true",
    )
    assert response.status_code == 200 and "Draft saved at" in response.content.decode()
    annotation = Annotation.objects.get(assignment=first)
    assert annotation.submitted_at is None and annotation.draft["memo"] == "not sure yet"


def test_submitted_labels_can_be_revisited_and_edited(
    client: Client, study: Study, shared: Round, annotator_a: User, items: list[Item]
) -> None:
    first = _mine(shared, annotator_a, items[0])
    submit_annotation(first, FAULT_HANG, annotator_a, codebook_version=3)
    login(client, annotator_a)
    html = client.get(reverse("annotation:workbench", args=[study.slug, first.pk])).content.decode()
    assert "You can change your labels" in html and 'value="hang" checked' in html
    values = {"v-1-issue_type": ["howto"], "v-1-howto_topic": ["device"]}
    client.post(reverse("annotation:submit", args=[study.slug, first.pk]), _form(values, next="stay"))
    assert Annotation.objects.get(assignment=first).findings.get().values.count() == 2


def test_next_skips_to_the_first_open_item_and_then_to_the_queue(
    client: Client, study: Study, shared: Round, annotator_a: User, items: list[Item]
) -> None:
    login(client, annotator_a)
    first = _mine(shared, annotator_a, items[0])
    assert client.get(reverse("annotation:next", args=[study.slug]))["Location"].endswith(
        f"/label/{first.pk}/"
    )
    Assignment.objects.filter(annotator=annotator_a).update(status=AssignmentStatus.SUBMITTED)
    assert client.get(reverse("annotation:next", args=[study.slug]))["Location"] == reverse(
        "annotation:queue", args=[study.slug]
    )


def test_next_item_and_the_workbench_cost_the_same_queries_in_a_bigger_study(
    client: Client, study: Study, book: Book, annotator_a: User, django_assert_num_queries: Any
) -> None:
    """The session (1), the user with their membership of the study (1), then the next open assignment (1),
    or the assignment with its item and annotation (1), the codebook (3), decided? (1), progress (1),
    comments (1), the Fix pane's links (1): the same numbers with 3 items or 60 more."""

    def measure() -> None:
        with django_assert_num_queries(3):
            response = client.get(reverse("annotation:next", args=[study.slug]))
        with django_assert_num_queries(10):
            assert client.get(response["Location"]).status_code == 200

    login(client, annotator_a)
    small = [ItemFactory(study=study, rendered_at=timezone.now()) for _ in range(3)]
    make_round(study, 1, small, {annotator_a: small})
    measure()
    big = [ItemFactory(study=study, rendered_at=timezone.now()) for _ in range(60)]
    make_round(study, 2, big, {annotator_a: big})
    Assignment.objects.filter(round__number=1).update(status=AssignmentStatus.SUBMITTED)
    measure()


def test_the_queue_lists_only_my_work(
    client: Client, study: Study, shared: Round, annotator_a: User, annotator_b: User, items: list[Item]
) -> None:
    extra = make_round(study, 2, items[3:4], {annotator_b: items[3:4]})
    login(client, annotator_a)
    html = client.get(reverse("annotation:queue", args=[study.slug])).content.decode()
    assert "Issue 1" in html and "Issue 4" not in html and extra.pk
    mine = _mine(shared, annotator_a, items[0])  # each row links to its workbench
    assert f'href="{reverse("annotation:workbench", args=[study.slug, mine.pk])}"' in html


def test_the_queue_rows_name_untitled_items_unnamed_rounds_and_the_local_submission_time(
    client: Client, study: Study, annotator_a: User, settings: Any
) -> None:
    settings.TIME_ZONE = "Europe/Berlin"  # UTC+1 in January
    untitled = ItemFactory(study=study, title="", url="https://github.com/acme/tool/issues/77")
    titled = ItemFactory(study=study, title="Hangs on <init>")
    make_round(study, 1, [untitled, titled], {annotator_a: [untitled, titled]})
    named = make_round(study, 2, [titled], {annotator_a: [titled]})
    Round.objects.filter(pk=named.pk).update(name="Pilot")
    at = datetime(2026, 1, 5, 9, 30, tzinfo=UTC)
    Assignment.objects.filter(round=named).update(status=AssignmentStatus.SUBMITTED, submitted_at=at)
    login(client, annotator_a)
    response = client.get(reverse("annotation:queue", args=[study.slug]))
    rows = [(a.title, a.round, a.submitted) for a in response.context["open"]]
    assert rows == [("acme/tool#77", "Round 1", ""), ("Hangs on <init>", "Round 1", "")]
    assert [(a.title, a.round, a.submitted) for a in response.context["submitted"]] == [
        ("Hangs on <init>", "Pilot", "2026-01-05 10:30")
    ]
    html = response.content.decode()
    assert "Hangs on &lt;init&gt;" in html and "Hangs on <init>" not in html  # escaped
    assert "Pilot · 2026-01-05 10:30" in html


def test_rounds_page_shows_progress_per_annotator_for_leads_only(
    client: Client, study: Study, shared: Round, lead: User, annotator_a: User, items: list[Item]
) -> None:
    submit_annotation(
        _mine(shared, annotator_a, items[0]), FAULT_HANG, annotator_a, codebook_version=3, seconds_spent=40
    )
    login(client, annotator_a)
    assert client.get(reverse("annotation:rounds", args=[study.slug])).status_code == 403
    login(client, lead)
    html = client.get(reverse("annotation:rounds", args=[study.slug])).content.decode()
    assert "alice" in html and ">40<" in html


def test_a_lead_draws_assigns_and_adds_items_from_the_page(
    client: Client,
    study: Study,
    items: list[Item],
    book: Book,
    lead: User,
    annotator_a: User,
    annotator_b: User,
) -> None:
    login(client, lead)
    draw = client.post(
        reverse("annotation:draw", args=[study.slug]),
        {"number": 1, "size": 4, "seed": 7, "stratify": "source"},
    )
    assert draw.status_code == 302
    assert Round.objects.get(number=1).stratify_field == "source"
    assign = client.post(
        reverse("annotation:assign", args=[study.slug]),
        {"number": 1, "annotators": ["alice", "bob"], "overlap": 2},
    )
    assert assign.status_code == 302 and Assignment.objects.count() == 8
    free = [i for i in items if not RoundItem.objects.filter(item=i).exists()]
    added = client.post(
        reverse("annotation:add-items", args=[study.slug]),
        {"number": 1, "items": f"{free[0].pk}\n{free[1].url}"},
    )
    assert added.status_code == 302 and RoundItem.objects.filter(round__number=1).count() == 6
    bad = client.post(reverse("annotation:draw", args=[study.slug]), {"number": 2, "size": 99, "seed": 1})
    assert bad.status_code == 422 and "Cannot draw 99 items" in bad.content.decode()


def test_a_lead_reassigns_an_open_item(
    client: Client, study: Study, shared: Round, lead: User, annotator_a: User, carol: User, items: list[Item]
) -> None:
    alice = _mine(shared, annotator_a, items[0])
    login(client, lead)
    page = client.get(reverse("annotation:round-detail", args=[study.slug, 1]))
    assert page.status_code == 200
    client.post(reverse("annotation:reassign", args=[study.slug, 1, alice.pk]), {"annotator": "carol"})
    alice.refresh_from_db()
    assert alice.annotator == carol


def test_screening_marks_items_and_needs_a_reason_for_irrelevant(
    client: Client, study: Study, items: list[Item], lead: User
) -> None:
    login(client, lead)
    url = reverse("annotation:screen", args=[study.slug, items[0].pk])
    refused = client.post(url, {"relevance": "irrelevant", "reason": ""}, HTTP_HX_REQUEST="true")
    assert "Say why" in refused.content.decode()
    client.post(url, {"relevance": "irrelevant", "reason": "about TPUs"}, HTTP_HX_REQUEST="true")
    items[0].refresh_from_db()
    assert (items[0].relevance, items[0].relevance_reason, items[0].screened_by) == (
        Relevance.IRRELEVANT,
        "about TPUs",
        lead,
    )
    assert client.get(reverse("annotation:screening", args=[study.slug])).status_code == 200


def test_next_follows_round_numbers_not_the_order_rounds_were_created_in(
    client: Client, study: Study, annotator_a: User, items: list[Item]
) -> None:
    later = make_round(study, 2, [items[0]], {annotator_a: [items[0]]})
    earlier = make_round(study, 1, [items[1], items[2]], {annotator_a: [items[2], items[1]]})
    login(client, annotator_a)

    def next_location() -> str:
        return client.get(reverse("annotation:next", args=[study.slug]))["Location"]

    assert next_location().endswith(f"/label/{_mine(earlier, annotator_a, items[2]).pk}/")  # position 0
    Assignment.objects.filter(round=earlier).update(status=AssignmentStatus.SUBMITTED)
    assert next_location().endswith(f"/label/{_mine(later, annotator_a, items[0]).pk}/")


def test_the_queue_lists_the_next_open_items_in_round_number_order_and_says_when_more_wait(
    client: Client, study: Study, items: list[Item], annotator_a: User, book: Book, monkeypatch: Any
) -> None:
    # the module, not the view of the same name that the views package exports
    monkeypatch.setattr(importlib.import_module("apps.annotation.views.queue"), "QUEUE_SIZE", 5)
    later = make_round(study, 2, items[:4], {annotator_a: items[:4]})  # created first, numbered second
    first = make_round(study, 1, items[4:8], {annotator_a: items[4:8]})
    submitted = {"status": AssignmentStatus.SUBMITTED, "submitted_at": timezone.now()}
    Assignment.objects.filter(round=first, item=items[4]).update(**submitted)
    login(client, annotator_a)
    response = client.get(reverse("annotation:queue", args=[study.slug]))
    listed = [(a.round_number, a.item_id) for a in response.context["open"]]
    assert listed == [(1, i.pk) for i in items[5:8]] + [(2, i.pk) for i in items[:2]]
    assert response.context["more_open"] and 'id="more-open"' in response.content.decode()
    Assignment.objects.filter(round=later).delete()
    generations.figures_changed(study.pk)  # as the request that changes the rounds does
    response = client.get(reverse("annotation:queue", args=[study.slug]))
    assert len(response.context["open"]) == 3 and not response.context["more_open"]
