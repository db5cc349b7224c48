"""The queue, the side-by-side page and the history: who may see them, what they show, what they save."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from apps.accounts.models import Study, User
from apps.adjudication.models import Decision, Provenance, Review, ReviewState
from apps.adjudication.services import decide
from apps.annotation.models import Round
from apps.core.generations import figures_changed
from apps.corpus.models import Item
from apps.corpus.services import ensure_rendered
from apps.taxonomy.models import Category
from tests.adjudication.conftest import CRASH, HANG, HOWTO, submit
from tests.conftest import login
from tests.factories import ItemFactory, StudyFactory
from tests.html import steady

pytestmark = pytest.mark.django_db

MakeItem = Callable[..., Item]


@pytest.fixture
def disagreement(make_item: MakeItem, annotator_a: User, annotator_b: User) -> Item:
    item = make_item(annotator_a, annotator_b, title="NCCL timeout at step 1000")
    submit(item, annotator_a, CRASH, memo="SIGABRT in the log.")
    submit(item, annotator_b, HANG, memo="It froze first.")
    return item


def resolve_url(item: Item) -> str:
    return reverse("adjudication:resolve", args=[item.study.slug, item.pk])


def queue_url(study: Study) -> str:
    return reverse("adjudication:queue", args=[study.slug])


# --- Access --------------------------------------------------------------------------------------------


def test_annotators_get_403_and_outsiders_404_on_every_adjudication_page(
    client: Client, disagreement: Item, annotator_a: User, outsider: User
) -> None:
    urls = [
        queue_url(disagreement.study),
        resolve_url(disagreement),
        reverse("adjudication:history", args=[disagreement.study.slug, disagreement.pk]),
    ]
    login(client, annotator_a)
    for url in urls:
        assert client.get(url).status_code == 403
    assert client.post(resolve_url(disagreement), {"action": "save"}).status_code == 403
    login(client, outsider)
    for url in urls:
        assert client.get(url).status_code == 404
    assert not Decision.objects.exists()


def test_an_item_of_another_study_is_404_even_for_a_lead(
    client: Client, lead: User, disagreement: Item
) -> None:
    foreign = ItemFactory(study=StudyFactory())
    login(client, lead)
    assert client.get(reverse("adjudication:resolve", args=["ddp", foreign.pk])).status_code == 404
    assert client.get(reverse("adjudication:history", args=["ddp", foreign.pk])).status_code == 404


# --- The queue -----------------------------------------------------------------------------------------


def test_the_queue_lists_open_disagreements_only(
    client: Client, lead: User, disagreement: Item, make_item: MakeItem, annotator_a: User, annotator_b: User
) -> None:
    agreed = make_item(annotator_a, annotator_b, title="Agreed item")
    submit(agreed, annotator_a, HOWTO)
    submit(agreed, annotator_b, HOWTO)
    login(client, lead)
    response = client.get(queue_url(disagreement.study))
    body = response.content.decode()
    assert response.status_code == 200
    assert "NCCL timeout at step 1000" in body
    assert "Agreed item" not in body
    assert "Symptom" in body  # the disagreeing dimension, by name


@pytest.fixture
def mixed_queue(
    study: Study, make_item: MakeItem, annotator_a: User, annotator_b: User, annotator_c: User, round1: Round
) -> dict[str, Item]:
    round2 = Round.objects.create(study=study, number=2)
    crash_hang = make_item(annotator_a, annotator_b, title="crash-vs-hang")
    submit(crash_hang, annotator_a, CRASH)
    submit(crash_hang, annotator_b, HANG)
    fix_only = make_item(annotator_a, annotator_c, title="fix-only", round_=round2)
    submit(fix_only, annotator_a, [{"type": ["fault"], "symptom": ["wrong-output"], "fix": ["code"]}])
    submit(fix_only, annotator_c, [{"type": ["fault"], "symptom": ["wrong-output"], "fix": ["upgrade"]}])
    segfault = make_item(annotator_b, annotator_c, title="segfault-vs-hang", round_=round2)
    submit(segfault, annotator_b, [{"type": ["fault"], "symptom": ["segfault"], "fix": ["code"]}])
    submit(segfault, annotator_c, [{"type": ["fault"], "symptom": ["hang"], "fix": ["code"]}])
    return {"crash_hang": crash_hang, "fix_only": fix_only, "segfault": segfault}


def titles(response: object) -> set[str]:
    body = response.content.decode()  # type: ignore[attr-defined]
    return {t for t in ("crash-vs-hang", "fix-only", "segfault-vs-hang") if t in body}


def test_the_queue_filters_by_round_dimension_category_and_annotator_pair(
    client: Client,
    lead: User,
    mixed_queue: dict[str, Item],
    annotator_a: User,
    annotator_c: User,
    round1: Round,
) -> None:
    login(client, lead)
    url = queue_url(mixed_queue["crash_hang"].study)
    assert titles(client.get(url)) == {"crash-vs-hang", "fix-only", "segfault-vs-hang"}
    assert titles(client.get(url, {"round": round1.pk})) == {"crash-vs-hang"}
    assert titles(client.get(url, {"dimension": "fix"})) == {"fix-only"}
    assert titles(client.get(url, {"dimension": "symptom"})) == {"crash-vs-hang", "segfault-vs-hang"}
    crash = Category.objects.get(key="crash")  # includes its subcategory segfault
    assert titles(client.get(url, {"category": crash.pk})) == {"crash-vs-hang", "segfault-vs-hang"}
    pair = {"annotator": annotator_a.pk, "with_annotator": annotator_c.pk}
    assert titles(client.get(url, pair)) == {"fix-only"}


def test_the_queue_refuses_a_round_of_another_study_without_leaking_it(
    client: Client, lead: User, mixed_queue: dict[str, Item]
) -> None:
    other = Round.objects.create(study=StudyFactory(), number=1)
    login(client, lead)
    response = client.get(queue_url(mixed_queue["crash_hang"].study), {"round": other.pk})
    assert response.status_code == 200
    assert "Select a valid choice" in response.content.decode()


def test_the_queue_counts_open_disagreements_per_round(
    client: Client, lead: User, mixed_queue: dict[str, Item]
) -> None:
    login(client, lead)
    counts = client.get(queue_url(mixed_queue["crash_hang"].study)).context["counts"]
    assert [(label, n) for _, label, n in counts] == [("Round 1", 1), ("Round 2", 2)]


def test_the_queue_sorts_by_category_name(client: Client, lead: User, mixed_queue: dict[str, Item]) -> None:
    login(client, lead)
    response = client.get(
        queue_url(mixed_queue["crash_hang"].study), {"sort": "category", "dimension": "symptom"}
    )
    order = [row["title"] for row in response.context["rows"]]
    assert order == ["crash-vs-hang", "segfault-vs-hang"]  # "Crash" < "Hang"
    assert [row["sorted_by"] for row in response.context["rows"]] == ["Crash", "Hang"]  # shown in the row
    assert "· Crash</span>" in response.content.decode()


def test_an_htmx_filter_gets_the_rows_partial_only(
    client: Client, lead: User, mixed_queue: dict[str, Item]
) -> None:
    login(client, lead)
    response = client.get(
        queue_url(mixed_queue["crash_hang"].study), {"dimension": "fix"}, headers={"HX-Request": "true"}
    )
    body = response.content.decode()
    assert body.lstrip().startswith('<section id="queue-rows"')
    assert "fix-only" in body and "<html" not in body


def open_reviews(study: Study, n: int, round_: Round) -> None:
    start = timezone.now() - timedelta(days=1)
    for i in range(n):
        item = ItemFactory(study=study, title=f"queued {i:03d}")
        Review.objects.create(
            item=item, study=study, round=round_, state=ReviewState.DISAGREEMENT,
            disagreeing_dimensions=["symptom"], updated_at=start + timedelta(minutes=i),
        )  # fmt: skip


def test_the_queue_pages_by_keyset_oldest_first(
    client: Client, lead: User, study: Study, round1: Round
) -> None:
    open_reviews(study, 53, round1)
    login(client, lead)
    first = client.get(queue_url(study))
    rows = first.context["rows"]
    assert len(rows) == 50 and rows[0]["title"] == "queued 000"
    second = client.get(queue_url(study) + first.context["next_url"])
    assert [r["title"] for r in second.context["rows"]] == [
        "queued 050",
        "queued 051",
        "queued 052",
    ]
    assert second.context["next_url"] is None


def test_a_queue_row_shows_its_item_round_annotators_and_claim_without_a_query_of_its_own(
    client: Client,
    lead: User,
    second_lead: User,
    make_item: MakeItem,
    annotator_a: User,
    annotator_b: User,
    round1: Round,
) -> None:
    """The rows are built in the view (`_shown_rows`) from a page that reads only what they show: every
    value still reaches the page, and a claim costs no query of its own (a row's round: the test below)."""
    long_title = "Gradient all-reduce hangs " + "x" * 100
    item = make_item(annotator_a, annotator_b, title=long_title)
    submit(item, annotator_a, CRASH)
    submit(item, annotator_b, HANG)
    login(client, lead)
    url = f"{queue_url(item.study)}?round={round1.pk}"
    with CaptureQueriesContext(connection) as plain:
        assert client.get(url).status_code == 200
    Round.objects.filter(pk=round1.pk).update(revealed_at=timezone.now())
    three_minutes_ago = timezone.now() - timedelta(minutes=3)
    Review.objects.filter(item=item).update(claimed_by=second_lead, claimed_at=three_minutes_ago)
    figures_changed(item.study_id)
    client.get(url)  # the figures are counted again, as after any change
    with CaptureQueriesContext(connection) as revealed_and_claimed:
        body = client.get(url).content.decode()
    assert len(revealed_and_claimed) <= len(plain)
    link = reverse("adjudication:resolve", args=[item.study.slug, item.pk])
    assert f'href="{link}?round={round1.pk}"' in body  # the link keeps the filters
    assert "Gradient all-reduce hangs " + "x" * 63 + "…" in body and "x" * 65 not in body  # 90 characters
    assert "not resolved by discussion" in body
    assert 'title="opened 3\xa0minutes ago">leo</span>' in body
    assert f"<td>{annotator_a}, {annotator_b}</td>" in body  # the study shows names by default
    Study.objects.filter(pk=item.study_id).update(show_annotator_names=False)
    body = client.get(url).content.decode()
    assert "<td>2 annotators</td>" in body and f"{annotator_a}, {annotator_b}" not in body


def test_the_queue_runs_a_constant_number_of_queries(
    client: Client, lead: User, study: Study, round1: Round
) -> None:
    login(client, lead)
    open_reviews(study, 3, round1)
    with CaptureQueriesContext(connection) as few:
        assert client.get(queue_url(study)).status_code == 200
    open_reviews(study, 30, round1)
    figures_changed(study.pk)  # as every write does: the queue's side figures are counted again
    with CaptureQueriesContext(connection) as many:
        assert client.get(queue_url(study)).status_code == 200
    assert len(many) == len(few)
    with CaptureQueriesContext(connection) as unchanged:
        assert client.get(queue_url(study)).status_code == 200
    # nothing changed: the filter choices, counts per round, discussion outcomes and the items waiting for a
    # hand decision come from the cache (six queries fewer)
    assert len(unchanged) == len(many) - 6


# --- The side-by-side page -----------------------------------------------------------------------------


def test_the_lead_sees_both_annotators_side_by_side_with_differences_and_definitions(
    client: Client, lead: User, disagreement: Item
) -> None:
    login(client, lead)
    response = client.get(resolve_url(disagreement))
    body = response.content.decode()
    assert response.status_code == 200
    assert response.context["columns"][0]["name"] == "alice"
    assert "SIGABRT in the log." in body and "It froze first." in body
    assert 'class="adj-cell differs"' in body
    assert "The program stops." in body and "Nothing happens, forever." in body  # definitions in conflict
    assert "Slow but finishing runs." in body
    assert 'src="/static/js/adjudication.js"' in body
    assert "<script>" not in body and "style=" not in body


def test_annotator_names_are_hidden_when_the_study_says_so(
    client: Client, lead: User, disagreement: Item
) -> None:
    study = disagreement.study
    study.show_annotator_names = False
    study.save()
    login(client, lead)
    body = steady(client.get(resolve_url(disagreement)).content.decode())
    assert "Annotator 1" in body and "Annotator 2" in body
    assert "alice" not in body and "bob" not in body


def claim_url(item: Item) -> str:
    return reverse("adjudication:claim", args=[item.study.slug, item.pk])


def test_opening_an_item_writes_nothing_and_the_page_sends_the_claim(
    client: Client, lead: User, disagreement: Item
) -> None:
    ensure_rendered(disagreement)  # the body's HTML is a cache the first view of any item fills
    login(client, lead)
    with CaptureQueriesContext(connection) as queries:
        body = client.get(resolve_url(disagreement)).content.decode()
    writes = [
        q["sql"] for q in queries if q["sql"].lstrip().upper().startswith(("INSERT", "UPDATE", "DELETE"))
    ]
    assert writes == []
    review = Review.objects.get(item=disagreement)
    assert (review.claimed_by, review.claimed_at) == (None, None)
    assert f'hx-post="{claim_url(disagreement)}" hx-trigger="load"' in body


def test_claiming_an_item_shows_it_to_another_lead_until_the_claim_is_ten_minutes_old(
    client: Client, lead: User, second_lead: User, disagreement: Item
) -> None:
    login(client, lead)
    response = client.post(claim_url(disagreement), HTTP_HX_REQUEST="true")
    assert (response.status_code, response.content) == (204, b"")
    assert Review.objects.get(item=disagreement).claimed_by == lead
    login(client, second_lead)
    response = client.get(resolve_url(disagreement))
    assert "lena</strong> opened this item" in response.content.decode()
    client.post(claim_url(disagreement), HTTP_HX_REQUEST="true")  # the page's claim: refused, lena's holds
    assert Review.objects.get(item=disagreement).claimed_by == lead
    Review.objects.filter(item=disagreement).update(claimed_at=timezone.now() - timedelta(minutes=11))
    response = client.get(resolve_url(disagreement))
    assert "claim-warning" not in response.content.decode()
    client.post(claim_url(disagreement), HTTP_HX_REQUEST="true")
    assert Review.objects.get(item=disagreement).claimed_by == second_lead


def test_a_claim_without_htmx_goes_back_to_the_page_and_only_leads_may_claim(
    client: Client, lead: User, annotator_a: User, outsider: User, disagreement: Item
) -> None:
    login(client, lead)
    assert client.get(claim_url(disagreement)).status_code == 405
    response = client.post(claim_url(disagreement))
    assert (response.status_code, response["Location"]) == (302, resolve_url(disagreement))
    Review.objects.filter(item=disagreement).update(claimed_by=None, claimed_at=None)
    assert login(client, annotator_a).post(claim_url(disagreement)).status_code == 403
    assert login(client, outsider).post(claim_url(disagreement)).status_code == 404
    assert Review.objects.get(item=disagreement).claimed_by is None


def form_data(findings: list[dict[str, list[str]]], **extra: str) -> dict[str, object]:
    data: dict[str, object] = {"finding": [str(n) for n in range(1, len(findings) + 1)], **extra}
    for n, values in enumerate(findings, start=1):
        for key, chosen in values.items():
            data[f"v-{n}-{key}"] = chosen
    return data


def test_saving_a_pick_decides_and_goes_on_to_the_next_disagreement(
    client: Client, lead: User, disagreement: Item, make_item: MakeItem, annotator_a: User, annotator_b: User
) -> None:
    following = make_item(annotator_a, annotator_b)
    submit(following, annotator_a, CRASH)
    submit(following, annotator_b, HOWTO)
    login(client, lead)
    response = client.post(resolve_url(disagreement), form_data(HANG, action="save", expected_decision=""))  # type: ignore[arg-type]
    assert response.status_code == 302
    assert response["Location"] == resolve_url(following)
    decision = Decision.objects.get(item=disagreement)
    assert (decision.provenance, decision.decided_by) == (Provenance.ADJUDICATED, lead)


def test_a_decision_goes_on_to_the_next_disagreement_in_the_queues_filters(
    client: Client, lead: User, mixed_queue: dict[str, Item]
) -> None:
    # The oldest open disagreement is crash-vs-hang, in round 1; the lead works through round 2.
    round2 = Round.objects.get(number=2)
    fix_only, segfault = mixed_queue["fix_only"], mixed_queue["segfault"]
    login(client, lead)
    queue = client.get(queue_url(fix_only.study), {"round": round2.pk, "sort": "oldest"})
    filtered = f"?round={round2.pk}&sort=oldest"
    assert f'href="{resolve_url(fix_only)}{filtered.replace("&", "&amp;")}"' in queue.content.decode()
    page = client.get(resolve_url(fix_only) + filtered).content.decode()
    assert f'action="{resolve_url(fix_only)}{filtered.replace("&", "&amp;")}"' in page
    assert f'href="{queue_url(fix_only.study)}{filtered.replace("&", "&amp;")}"' in page
    decided = [{"type": ["fault"], "symptom": ["wrong-output"], "fix": ["code"]}]
    response = client.post(resolve_url(fix_only) + filtered, form_data(decided, expected_decision=""))  # type: ignore[arg-type]
    assert response.status_code == 302
    assert response["Location"] == resolve_url(segfault) + filtered


def test_the_last_decision_in_the_filters_goes_back_to_the_filtered_queue(
    client: Client, lead: User, mixed_queue: dict[str, Item], round1: Round
) -> None:
    crash_hang = mixed_queue["crash_hang"]
    login(client, lead)
    response = client.post(
        f"{resolve_url(crash_hang)}?round={round1.pk}",
        form_data(HANG, expected_decision=""),  # type: ignore[arg-type]
        headers={"HX-Request": "true"},
    )
    assert response["HX-Redirect"] == f"{queue_url(crash_hang.study)}?round={round1.pk}"
    queue = client.get(response["HX-Redirect"]).content.decode()
    assert "No open disagreement is left in these filters." in queue
    assert "No open disagreements match these filters." in queue


def test_an_htmx_save_redirects_the_client_to_the_queue_when_nothing_is_left(
    client: Client, lead: User, disagreement: Item
) -> None:
    login(client, lead)
    response = client.post(
        resolve_url(disagreement),
        form_data(CRASH, action="save", expected_decision=""),  # type: ignore[arg-type]
        headers={"HX-Request": "true"},
    )
    assert response.status_code == 200
    assert response["HX-Redirect"] == queue_url(disagreement.study)


def test_an_override_without_a_rationale_is_refused_with_the_reason(
    client: Client, lead: User, disagreement: Item
) -> None:
    login(client, lead)
    wrong = [{"type": ["fault"], "symptom": ["wrong-output"], "fix": ["upgrade"]}]
    response = client.post(
        resolve_url(disagreement),
        form_data(wrong, action="save", expected_decision=""),  # type: ignore[arg-type]
        headers={"HX-Request": "true"},
    )
    assert response.status_code == 422
    body = response.content.decode()
    assert "write a rationale" in body
    assert body.lstrip().startswith("<form")
    assert 'value="wrong-output" selected' in body  # the lead's choices are kept
    assert not Decision.objects.exists()


def test_a_concurrent_decision_gives_a_conflict_message_and_keeps_the_leads_choices(
    client: Client, lead: User, owner: User, disagreement: Item
) -> None:
    winner = decide(disagreement, CRASH, actor=owner, expected_decision_id=None)
    login(client, lead)
    response = client.post(resolve_url(disagreement), form_data(HANG, action="save", expected_decision=""))  # type: ignore[arg-type]
    assert response.status_code == 409
    body = response.content.decode()
    assert "olivia decided this item" in body
    assert f'name="expected_decision" value="{winner.pk}"' in body
    assert Decision.objects.filter(item=disagreement).count() == 1
    again = client.post(
        resolve_url(disagreement),
        form_data(HANG, action="save", expected_decision=str(winner.pk), rationale="The hang came first."),  # type: ignore[arg-type]
    )
    assert again.status_code == 302
    assert Decision.objects.get(item=disagreement, is_current=True).supersedes == winner


def test_form_buttons_take_an_annotators_labels_and_add_or_remove_findings(
    client: Client, lead: User, disagreement: Item
) -> None:
    login(client, lead)
    url = resolve_url(disagreement)
    taken = client.post(url, {"action": "take:1", "expected_decision": ""})
    assert taken.status_code == 200
    assert 'value="hang" selected' in taken.content.decode()
    one_value = client.post(url, form_data(CRASH, action="take:1:0:symptom", expected_decision=""))  # type: ignore[arg-type]
    body = one_value.content.decode()
    assert 'value="hang" selected' in body and 'value="code" checked' in body
    added = client.post(url, form_data(CRASH, action="add", expected_decision=""))  # type: ignore[arg-type]
    assert len([b for b in added.context["blocks"] if b["in_decision"]]) == 2
    removed = client.post(url, form_data([*CRASH, *HOWTO], action="remove:0", expected_decision=""))  # type: ignore[arg-type]
    decided = [b for b in removed.context["blocks"] if b["in_decision"]]
    assert len(decided) == 1
    assert not Decision.objects.exists()


def test_an_item_still_being_annotated_shows_why_it_cannot_be_decided(
    client: Client, lead: User, make_item: MakeItem, annotator_a: User, annotator_b: User
) -> None:
    item = make_item(annotator_a, annotator_b)
    submit(item, annotator_a, CRASH)
    login(client, lead)
    body = client.get(resolve_url(item)).content.decode()
    assert "1 of 2 annotations submitted" in body
    response = client.post(resolve_url(item), form_data(CRASH, action="save", expected_decision=""))  # type: ignore[arg-type]
    assert response.status_code == 422
    assert "not fully annotated" in response.content.decode()


# --- History -------------------------------------------------------------------------------------------


def test_the_history_shows_every_decision_with_who_why_and_what_changed(
    client: Client, lead: User, owner: User, disagreement: Item
) -> None:
    first = decide(disagreement, CRASH, actor=lead, expected_decision_id=None)
    decide(disagreement, HANG, actor=owner, rationale="The hang came first.", expected_decision_id=first.pk)
    login(client, lead)
    response = client.get(reverse("adjudication:history", args=["ddp", disagreement.pk]))
    body = response.content.decode()
    assert [e["status"] for e in response.context["entries"]] == ["current", "superseded"]
    assert "The hang came first." in body
    assert "olivia" in body and "lena" in body
    assert "crash → hang" in body  # what the reversal changed


def test_a_tampered_expected_decision_is_refused_without_saving(
    client: Client, lead: User, disagreement: Item
) -> None:
    login(client, lead)
    response = client.post(
        resolve_url(disagreement), form_data(CRASH, action="save", expected_decision="abc")
    )  # type: ignore[arg-type]
    assert response.status_code == 422
    assert "malformed decision reference" in response.content.decode()
    assert not Decision.objects.exists()


def test_an_item_its_one_annotator_finished_is_listed_for_a_hand_decision_above_the_queue(
    client: Client, study: Study, lead: User, make_item: MakeItem, annotator_a: User, disagreement: Item
) -> None:
    """One annotator's labels are never consolidated (completion.ready): such an item would wait for ever
    where no lead looks, so the queue lists it, linked to its decision page."""
    alone = make_item(annotator_a, title="Only annotator A labelled this")
    submit(alone, annotator_a, CRASH)
    still_open = make_item(annotator_a, title="Nobody submitted this yet")
    login(client, lead)
    page = client.get(queue_url(study)).content.decode()
    assert Review.objects.get(item=alone).state == ReviewState.ANNOTATING
    waiting = page.split('data-testid="short-of-annotators"')[1].split("</section>")[0]
    assert resolve_url(alone) in waiting and "Only annotator A labelled this" in waiting
    assert still_open.title not in waiting and disagreement.title not in waiting
    assert client.get(resolve_url(alone)).status_code == 200
