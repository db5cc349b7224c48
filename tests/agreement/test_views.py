"""The agreement dashboard: who may see it, what it shows, n/a with reasons, snapshots, drill-down, charts."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from pytest_django import Settings

from apps.accounts.models import Study, User
from apps.agreement.charts import Series, Threshold, line_chart
from apps.agreement.models import AgreementSnapshot
from apps.core.models import JobStatus
from apps.corpus.models import Item
from apps.taxonomy.models import Codebook
from tests.agreement.conftest import Annotate
from tests.conftest import login
from tests.factories import ItemFactory


@pytest.fixture
def labelled(
    study: Study,
    codebook: Codebook,
    annotate: Annotate,
    items: list[Item],
    annotator_a: User,
    annotator_b: User,
) -> Study:
    """Everyone says *bug* (alpha undefined for kind); symptoms disagree on two items of four."""
    symptoms = [("segfault", "segfault"), ("oom", "segfault"), ("deadlock", "deadlock"), ("slow", "deadlock")]
    for n, (item, (mine, theirs)) in enumerate(zip(items, symptoms, strict=False)):
        round_number = 1 if n < 2 else 2
        annotate(round_number, item, annotator_a, [{"kind": ["bug"], "symptom": [mine], "fix": ["code"]}])
        annotate(
            round_number, item, annotator_b, [{"kind": ["bug"], "symptom": [theirs], "fix": ["code", "docs"]}]
        )
    return study


def url(name: str, *args: object) -> str:
    return reverse(f"agreement:{name}", args=["ddp", *args])


# ------------------------------------------------------------------------------------------ access
@pytest.mark.django_db
@pytest.mark.parametrize("name", ["dashboard", "cell-items"])
def test_an_annotator_gets_403_and_an_outsider_404(
    client: Client, labelled: Study, annotator_a: User, outsider: User, name: str
) -> None:
    assert login(client, annotator_a).get(url(name)).status_code == 403
    client.logout()
    assert login(client, outsider).get(url(name)).status_code == 404
    assert not AgreementSnapshot.objects.exists()


@pytest.mark.django_db
def test_anonymous_users_are_sent_to_log_in(client: Client, labelled: Study) -> None:
    response = client.get(url("dashboard"))
    assert response.status_code == 302 and "login" in response["Location"]


@pytest.mark.django_db
def test_only_leads_may_compute_or_poll(
    client: Client, labelled: Study, lead: User, annotator_a: User, outsider: User
) -> None:
    snapshot = AgreementSnapshot.objects.create(study=labelled, params={"kind": "dashboard"})
    login(client, annotator_a)
    assert client.post(url("compute")).status_code == 403
    assert client.get(url("progress", snapshot.pk)).status_code == 403
    login(client, outsider)
    assert client.post(url("compute")).status_code == 404
    login(client, lead)
    assert client.get(url("compute")).status_code == 405


# ------------------------------------------------------------------------------------------ the page
@pytest.mark.django_db
def test_the_lead_sees_figures_computed_and_stored_with_the_codebook_version(
    client: Client, labelled: Study, lead: User
) -> None:
    response = login(client, lead).get(url("dashboard"))
    assert response.status_code == 200
    html = response.content.decode()
    snapshot = AgreementSnapshot.objects.get()
    assert snapshot.status == JobStatus.SUCCEEDED
    assert snapshot.codebook_version == 3 and snapshot.created_by == lead and snapshot.level is None
    assert "codebook v3" in html
    assert "Every dimension and round" in html and "Round 1" in html and "All rounds" in html
    assert "95% CI n/a: alpha is undefined in every bootstrap replicate" in html  # kind: always bug
    symptom = client.get(url("dashboard"), {"dimension": "symptom"}).content.decode()
    assert "95% CI [" in symptom
    assert '<svg xmlns="http://www.w3.org/2000/svg" class="chart"' in html and 'role="img"' in html
    assert "alice · bob" in html
    # Unchanged labels: the next visit shows the same snapshot.
    login(client, lead).get(url("dashboard"))
    assert AgreementSnapshot.objects.count() == 1


@pytest.mark.django_db
def test_an_undefined_coefficient_reads_n_a_with_its_reason_never_a_number(
    client: Client, labelled: Study, lead: User
) -> None:
    html = login(client, lead).get(url("dashboard"), {"dimension": "kind"}).content.decode()
    reason = "expected disagreement is zero: all 8 pairable ratings are &#x27;bug&#x27;"
    card = re.search(r'<div class="card stat undefined">(.*?)Krippendorff&#x27;s alpha', html, re.DOTALL)
    assert card is not None
    assert f'<span class="na" title="{reason}">n/a</span>' in card.group(1)
    assert f'<span class="na-reason">{reason}</span>' in card.group(1)  # visible, not only a tooltip
    # In tables, the reason is a numbered note under the table, and the tooltip.
    assert re.search(r'<li id="category-note-\d+">n/a: expected disagreement is zero', html)


@pytest.mark.django_db
def test_the_page_has_no_inline_style_or_script(client: Client, labelled: Study, lead: User) -> None:
    html = login(client, lead).get(url("dashboard")).content.decode()
    assert " style=" not in html
    assert "<script>" not in html and "<script " not in html.replace('<script src="', "")


@pytest.mark.django_db
def test_categories_are_listed_worst_first(client: Client, labelled: Study, lead: User) -> None:
    html = login(client, lead).get(url("dashboard"), {"dimension": "symptom"}).content.decode()
    table = html[html.index("Per category, worst first") : html.index("Per annotator pair")]
    order = re.findall(r'<th scope="row" class="category">([^<]+)</th>', table)
    # alpha: segfault < deadlock < oom = slow (never agreed on) ... undefined ones (unused) last.
    assert order.index("Crash &gt; Segfault") < order.index("Hang &gt; Deadlock")
    assert order[-1] in {"Hang &gt; Livelock", "pending"}


@pytest.mark.django_db
def test_the_level_switch_compares_at_the_top_of_the_tree(
    client: Client, labelled: Study, lead: User
) -> None:
    html = login(client, lead).get(url("dashboard"), {"level": "1", "dimension": "symptom"}).content.decode()
    assert 'aria-current="true">Top level (1)</a>' in html
    assert AgreementSnapshot.objects.get().level == 1
    assert "Crash &gt; Segfault" not in html
    assert '<th scope="row" class="category">Crash</th>' in html


@pytest.mark.django_db
def test_a_stale_snapshot_of_a_small_study_is_recomputed(
    client: Client, labelled: Study, lead: User, annotate: Annotate, annotator_a: User
) -> None:
    login(client, lead).get(url("dashboard"))
    annotate(3, ItemFactory(study=labelled), annotator_a, [{"kind": ["bug"]}])
    html = client.get(url("dashboard")).content.decode()
    assert AgreementSnapshot.objects.count() == 2
    assert "Round 3" in html


@pytest.mark.django_db
def test_the_dashboard_says_when_the_codebook_moved_on(
    client: Client, labelled: Study, lead: User, settings: Settings
) -> None:
    login(client, lead).get(url("dashboard"))
    Codebook.objects.filter(study=labelled).update(version=4)
    settings.AGREEMENT_SYNC_MAX_RATINGS = 5  # large: no recompute on a visit
    html = client.get(url("dashboard")).content.decode()
    assert "computed on <strong>codebook v3</strong>" in html
    assert "the codebook is now v4" in html


@pytest.mark.django_db
def test_the_recompute_button_stores_a_new_snapshot(client: Client, labelled: Study, lead: User) -> None:
    login(client, lead).get(url("dashboard"))
    response = client.post(url("compute"), {"level": "1"})
    assert response.status_code == 302 and response["Location"] == url("dashboard") + "?level=1"
    assert list(AgreementSnapshot.objects.values_list("level", flat=True).order_by("pk")) == [None, 1]


@pytest.mark.django_db
def test_the_page_reads_a_constant_number_of_queries(
    client: Client, labelled: Study, lead: User, annotate: Annotate, annotator_a: User, annotator_b: User
) -> None:
    login(client, lead).get(url("dashboard"))
    with CaptureQueriesContext(connection) as few:
        client.get(url("dashboard"))
    for _ in range(5):
        item = ItemFactory(study=labelled)
        for user in (annotator_a, annotator_b):
            annotate(1, item, user, [{"kind": ["bug"], "symptom": ["oom"]}])
    client.get(url("dashboard"))
    with CaptureQueriesContext(connection) as many:
        client.get(url("dashboard"))
    assert len(many.captured_queries) == len(few.captured_queries)


# ------------------------------------------------------------------------------------ background
@pytest.mark.django_db
def test_a_large_study_shows_a_polled_progress_bar(
    client: Client, labelled: Study, lead: User, settings: Settings
) -> None:
    settings.AGREEMENT_SYNC_MAX_RATINGS = 5
    html = login(client, lead).get(url("dashboard")).content.decode()
    snapshot = AgreementSnapshot.objects.get()
    assert snapshot.status == JobStatus.QUEUED  # its task is enqueued when the request's work commits
    assert f'hx-get="{url("progress", snapshot.pk)}" hx-trigger="every 1s"' in html
    partial = client.get(url("progress", snapshot.pk), headers={"HX-Request": "true"})
    assert partial.status_code == 200 and b"<html" not in partial.content
    assert b"Computing agreement in the background" in partial.content

    AgreementSnapshot.objects.filter(pk=snapshot.pk).update(status=JobStatus.SUCCEEDED)
    done = client.get(url("progress", snapshot.pk), headers={"HX-Request": "true"})
    assert done["HX-Refresh"] == "true"


@pytest.mark.django_db
def test_a_failed_computation_is_reported_not_polled(
    client: Client, labelled: Study, lead: User, settings: Settings
) -> None:
    login(client, lead)
    from apps.agreement import services

    state = services.dashboard_state(labelled, None)
    AgreementSnapshot.objects.create(
        study=labelled,
        params={"kind": "dashboard", "level": None, "fingerprint": state.fingerprint},
        status=JobStatus.FAILED,
        error="KeyError: boom",
    )
    html = client.get(url("dashboard")).content.decode()
    assert "The last computation failed: KeyError: boom" in html
    assert 'hx-trigger="every 1s"' not in html
    assert AgreementSnapshot.objects.count() == 1


# ------------------------------------------------------------------------------------ confusion
@pytest.mark.django_db
def test_the_confusion_matrix_is_a_partial_for_htmx_with_links_to_its_items(
    client: Client, labelled: Study, lead: User, items: list[Item]
) -> None:
    login(client, lead).get(url("dashboard"))
    response = client.get(
        url("dashboard"),
        {"dimension": "symptom", "round": "all", "a": "bob", "b": "alice"},
        headers={"HX-Request": "true", "HX-Target": "confusion"},
    )
    html = response.content.decode()
    assert response.status_code == 200
    assert html.lstrip().startswith('<section class="card" id="confusion"')
    assert "Rows: bob; columns: alice" in html
    links = re.findall(r'<a href="(/studies/ddp/agreement/items/\?[^"]+)">(\d+)</a>', html)
    assert sum(int(n) for _, n in links) == 4
    link = next(href for href, _ in links if "row=segfault" in href and "col=oom" in href)
    page = client.get(link.replace("&amp;", "&"))
    assert page.status_code == 200
    body = page.content.decode()
    assert items[1].title in body and items[0].title not in body
    assert "<strong>bob</strong> chose <strong>Crash &gt; Segfault</strong>" in body


@pytest.mark.django_db
def test_a_cell_page_with_bad_parameters_says_what_is_wrong(
    client: Client, labelled: Study, lead: User
) -> None:
    response = login(client, lead).get(
        url("cell-items"), {"dimension": "colour", "a": "alice", "b": "bob", "row": "x", "col": "y"}
    )
    assert response.status_code == 400
    assert (
        b"unknown dimension" in response.content
        and b"valid dimensions: kind, symptom, fix" in response.content
    )


@pytest.mark.django_db
def test_the_same_annotator_twice_asks_for_two(client: Client, labelled: Study, lead: User) -> None:
    html = login(client, lead).get(url("dashboard"), {"a": "alice", "b": "alice"}).content.decode()
    assert "Pick two different annotators." in html


# ----------------------------------------------------------------------------------- charts (pure)
def test_a_chart_escapes_its_texts_and_breaks_lines_where_values_are_undefined() -> None:
    svg = line_chart(
        ["R1", "R<2>", "R3", "R4"],
        [
            Series("kappa <b>", [0.5, None, 0.7, 0.8], "#123456"),
            Series("alpha", [None, None, None, None], "#654321"),
        ],
        title='Agreement "by" round',
        chart_id="c",
        thresholds=[Threshold(0.8, "good")],
    )
    assert svg.startswith('<svg xmlns="http://www.w3.org/2000/svg"') and svg.endswith("</svg>")
    assert "<b>" not in svg and "kappa &lt;b&gt;" in svg and "R&lt;2&gt;" in svg
    assert "Agreement &quot;by&quot; round" in svg
    assert svg.count("<polyline") == 1  # 0.5 | gap | 0.7-0.8
    assert svg.count("<circle") == 3
    assert "alpha (n/a)" in svg
    assert " style=" not in svg
    assert "R<2>" not in svg and "kappa <b>: R1 0.500, R<2> n/a" not in svg
    assert "kappa &lt;b&gt;: R1 0.500, R&lt;2&gt; n/a, R3 0.700, R4 0.800" in svg


def test_a_chart_reaches_below_zero_for_negative_coefficients() -> None:
    svg = line_chart(["1", "2"], [Series("k", [-0.35, 0.2], "#000")], title="t", chart_id="c")
    assert ">-0.4</text>" in svg and ">1</text>" in svg


def test_a_chart_refuses_series_of_the_wrong_length_or_non_finite_values() -> None:
    with pytest.raises(ValueError, match="2 values for 3 x labels"):
        line_chart(["a", "b", "c"], [Series("k", [0.1, 0.2], "#000")], title="t", chart_id="c")
    with pytest.raises(ValueError, match="non-finite"):
        line_chart(["a"], [Series("k", [float("nan")], "#000")], title="t", chart_id="c")


def test_a_large_studys_dashboard_shows_its_last_figures_as_updating_while_the_labels_are_counted(
    client: Client, labelled: Study, lead: User, settings: Settings
) -> None:
    from apps.agreement import freshness, services, views

    login(client, lead).get(url("dashboard"))  # figures computed on this request
    settings.AGREEMENT_SYNC_MAX_RATINGS = 5
    freshness.labels_changed(study_id=labelled.pk)  # the task sent on commit never runs in this test

    with CaptureQueriesContext(connection) as ran:
        html = client.get(url("dashboard")).content.decode()
    assert "Updating:" in html and 'id="fingerprint-check"' in html and "Every dimension and round" in html
    assert "Counting the current labels" in html and '<option value="bob" selected>' in html
    assert not any("labelvalue" in q["sql"].lower() for q in ran)  # the labels were not counted on the view
    confusion = client.get(url("dashboard"), headers={"HX-Request": "true", "HX-Target": "confusion"})
    assert "items rated by both agree" in confusion.content.decode()  # asked for by the page once shown
    check = url("check")
    waiting = client.get(check, {"polls": "3"}, headers={"HX-Request": "true"})
    assert 'id="fingerprint-check"' in waiting.content.decode() and "polls=4" in waiting.content.decode()

    last = client.get(check, {"polls": str(views.CHECK_POLLS)}, headers={"HX-Request": "true"})
    assert last.headers["HX-Refresh"] == "true"  # no worker counted them: the page did
    assert services.known_fingerprint(labelled) is not None
    assert "Updating:" not in client.get(url("dashboard")).content.decode()
