"""The items grid: sorts and keyset pages, full-text search, bulk actions, saved views, keyboard screening,
the labelling columns kept on the item, and readable titles. Run on SQLite and PostgreSQL."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from django.db import connection, transaction
from django.test import Client
from django.urls import reverse

from apps.accounts.models import Study, User
from apps.annotation.services import add_items_to_round, assign_round
from apps.corpus.models import Item, Progress, Relevance, SavedView
from apps.corpus.search import fts5_query, matches
from apps.corpus.titles import place, readable_title
from tests.conftest import login
from tests.factories import ItemFactory

HTMX = {"HTTP_HX_REQUEST": "true"}


def url(name: str, *args: Any) -> str:
    return reverse(f"corpus:{name}", args=["ddp", *args])


def shown(response: Any) -> list[int]:
    assert response.status_code == 200
    return [item.id for item, _place in response.context["rows"]]


def walk(client: Client, **params: str) -> list[int]:
    """Every id of the grid for these parameters, page after page."""
    ids: list[int] = []
    cursor = ""
    while True:
        response = client.get(url("item-list"), {**params, **({"after": cursor} if cursor else {})})
        ids += shown(response)
        cursor = response.context["next_cursor"]
        if not cursor:
            return ids


# --- pure helpers --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("address", "title", "where"),
    [
        ("https://github.com/horovod/horovod/issues/1981", "horovod/horovod#1981", "horovod/horovod"),
        ("https://stackoverflow.com/questions/52198119", "stackoverflow 52198119", "stackoverflow"),
        ("https://datascience.stackexchange.com/questions/7", "datascience 7", "datascience"),
        ("https://gitlab.com/group/proj/-/issues/3", "group/proj#3", "group/proj"),
        ("https://issues.apache.org/jira/browse/SPARK-12", "SPARK-12", "issues.apache.org"),
        ("https://example.org/notes/1/", "example.org/notes/1", "example.org"),
    ],
)
def test_a_url_only_item_gets_a_readable_title_and_place(address: str, title: str, where: str) -> None:
    assert readable_title(address) == title
    assert place(address) == where


def test_the_fts5_query_quotes_every_term_and_keeps_phrases_exclusions_and_or() -> None:
    assert fts5_query("nccl hang") == '"nccl" AND "hang"'
    assert fts5_query('"all reduce" -gpu') == '"all reduce" NOT "gpu"'
    assert fts5_query("nccl or gloo") == '("nccl" OR "gloo")'
    assert fts5_query('NEAR( "x') == '"NEAR" AND "x"'
    assert fts5_query("-only") == ""


# --- pages -------------------------------------------------------------------------------------------------


def test_a_url_only_item_shows_its_readable_title_in_the_grid(
    client: Client, study: Study, lead: User
) -> None:
    ItemFactory(study=study, url="https://github.com/horovod/horovod/issues/1981", title="", body="")
    text = login(client, lead).get(url("item-list")).content.decode()
    assert "horovod/horovod#1981" in text
    assert ">https://github.com/horovod/horovod/issues/1981<" not in text


@pytest.mark.parametrize(
    "column", ["title", "created", "round", "progress", "decision", "place", "screening"]
)
@pytest.mark.parametrize("descending", [False, True])
def test_every_sort_walks_every_item_once_in_order_across_pages(
    client: Client, study: Study, lead: User, column: str, descending: bool
) -> None:
    base = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
    progress = list(Progress.values)
    for n in range(130):
        ItemFactory(
            study=study,
            url=f"https://github.com/o/r{n % 7}/issues/{n}",
            title=f"Item {n % 11}",
            created_at=None if n % 9 == 0 else base + dt.timedelta(days=n % 13),
            relevance=Relevance.values[n % 3],
        )
    for n, item in enumerate(Item.objects.order_by("id")):
        Item.objects.filter(pk=item.pk).update(
            round_number=n % 4,
            progress=progress[n % len(progress)],
            decision=["", "unanimous", "majority"][n % 3],
        )
    login(client, lead)
    sort = ("-" if descending else "") + column

    ids = walk(client, sort=sort)

    field = {"created": "created_at", "round": "round_number", "place": "url", "screening": "relevance"}.get(
        column, column
    )
    rows = list(Item.objects.filter(study=study).values_list(field, "id"))
    dated = sorted((r for r in rows if r[0] is not None), reverse=descending)
    undated = sorted((r for r in rows if r[0] is None), key=lambda r: r[1], reverse=descending)
    expected = [pk for _, pk in (undated + dated if descending else dated + undated)]
    assert ids == expected


def test_full_text_search_finds_words_of_the_body_and_stems_them(
    client: Client, study: Study, lead: User
) -> None:
    hang = ItemFactory(study=study, title="Training stops", body="The allreduce hangs after NCCL upgrade")
    ItemFactory(study=study, title="Pandas question", body="How do I merge frames?")
    login(client, lead)

    assert shown(client.get(url("item-list"), {"q": "hang nccl"})) == [hang.id]
    assert shown(client.get(url("item-list"), {"q": "allreduce -nccl"})) == []
    Item.objects.filter(pk=hang.pk).update(body="nothing left")  # the index follows an update
    assert shown(client.get(url("item-list"), {"q": "nccl"})) == []


def test_full_text_search_reads_the_index_not_every_body(study: Study) -> None:
    """A search must be answered from the full-text index (the stored column's GIN index on PostgreSQL, the
    FTS5 table on SQLite): recomputing the text vector of every body took over 20 s for a word no item has
    at 100,000 items. On PostgreSQL, sequential and plain index scans are switched off, so that the plan can
    only be cheap through a bitmap scan of the full-text index, whatever a tiny test table would favour."""
    ItemFactory(study=study, title="Training stops", body="The allreduce hangs after NCCL upgrade")
    found = Item.objects.filter(matches("deadlock"))
    if connection.vendor == "postgresql":
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SET LOCAL enable_seqscan = off")
            cursor.execute("SET LOCAL enable_indexscan = off")
            plan = found.explain()
        assert "item_fts" in plan, plan
    else:
        assert "corpus_item_fts" in found.explain()
    assert list(found) == []


def test_bulk_screening_of_a_search_result_screens_exactly_its_matches(
    client: Client, study: Study, lead: User
) -> None:
    hits = [ItemFactory(study=study, title=f"NCCL timeout {n}") for n in range(3)]
    other = ItemFactory(study=study, title="Pandas merge")
    login(client, lead)

    response = client.post(
        url("items-bulk"),
        {"scope": "all", "query": "q=nccl", "action": "exclude", "reason": "Not distributed"},
    )

    assert response.status_code == 302 and response["Location"].endswith("?q=nccl")
    screened = dict(Item.objects.values_list("id", "relevance"))
    assert {screened[i.id] for i in hits} == {Relevance.IRRELEVANT}
    assert screened[other.id] == Relevance.UNSCREENED
    assert Item.objects.get(pk=hits[0].pk).relevance_reason == "Not distributed"


def test_bulk_screening_out_without_a_reason_writes_nothing(client: Client, study: Study, lead: User) -> None:
    item = ItemFactory(study=study)
    login(client, lead)
    client.post(url("items-bulk"), {"ids": [item.pk], "action": "exclude", "reason": ""})
    assert Item.objects.get(pk=item.pk).relevance == Relevance.UNSCREENED


def test_bulk_actions_touch_only_the_studys_items(client: Client, study: Study, lead: User) -> None:
    other = Study.objects.create(slug="other", name="Other")
    foreign = ItemFactory(study=other)
    login(client, lead)
    client.post(url("items-bulk"), {"ids": [foreign.pk], "action": "include"})
    assert Item.objects.get(pk=foreign.pk).relevance == Relevance.UNSCREENED


def test_bulk_export_streams_the_checked_items_as_csv(client: Client, study: Study, lead: User) -> None:
    a = ItemFactory(study=study, url="https://stackoverflow.com/questions/52198119", title="")
    ItemFactory(study=study)
    response = login(client, lead).post(url("items-bulk"), {"ids": [a.pk], "action": "export"})
    text = b"".join(response.streaming_content).decode()  # type: ignore[attr-defined]
    lines = text.strip().splitlines()
    assert lines[0].startswith("id,url,title") and len(lines) == 2
    assert "stackoverflow 52198119" in lines[1]


def test_an_annotator_cannot_bulk_screen_and_sees_no_labelling_columns(
    client: Client, study: Study, annotator_a: User
) -> None:
    item = ItemFactory(study=study)
    login(client, annotator_a)
    assert client.post(url("items-bulk"), {"ids": [item.pk], "action": "include"}).status_code == 403
    page = client.get(url("item-list"), {"sort": "decision"})
    assert page.context["sort"].column == "id"
    assert "Decision" not in [label for _key, label, _next in page.context["columns"]]


def test_saved_views_belong_to_their_user(
    client: Client, study: Study, lead: User, annotator_a: User
) -> None:
    login(client, lead)
    client.post(url("saved-view-save"), {"name": "NCCL", "query": "q=nccl&sort=-created&after=xyz"})
    view = SavedView.objects.get()
    assert (view.user, view.query) == (lead, "q=nccl&sort=-created")
    assert "NCCL" in client.get(url("item-list")).content.decode()

    login(client, annotator_a)
    assert "q=nccl" not in client.get(url("item-list")).content.decode()
    assert client.post(url("saved-view-delete", view.pk)).status_code == 404


def test_keyboard_screening_records_a_decision_and_shows_the_next_unscreened_item(
    client: Client, study: Study, lead: User
) -> None:
    first, screened, third = (ItemFactory(study=study, title=f"Item {n}") for n in range(3))
    Item.objects.filter(pk=screened.pk).update(relevance=Relevance.RELEVANT)
    login(client, lead)

    page = client.get(url("screen"))
    assert page.context["item"] == first and 'data-key="i"' in page.content.decode()

    response = client.post(
        url("screen-item", first.pk), {"decision": "exclude", "reason": "", "query": ""}, **HTMX
    )

    assert response.context["item"] == third  # the screened one is passed over
    assert response.content.decode().lstrip().startswith('<section class="card screen-card" id="screen-card"')
    first.refresh_from_db()
    assert (first.relevance, first.relevance_reason) == (Relevance.IRRELEVANT, "Excluded while screening")


# --- the labelling columns follow rounds and assignments ----------------------------------------------------


def test_the_grid_columns_follow_rounds_and_assignments(
    study: Study, lead: User, annotator_a: User, annotator_b: User
) -> None:
    items = [ItemFactory(study=study) for _ in range(3)]
    add_items_to_round(study, 2, [i.pk for i in items[:2]], actor=lead)
    state = dict(Item.objects.values_list("id", "progress"))
    assert state[items[0].pk] == Progress.WAITING and state[items[2].pk] == Progress.UNSAMPLED
    assert Item.objects.get(pk=items[0].pk).round_number == 2

    assign_round(study, 2, [annotator_a.username, annotator_b.username], overlap=2)
    assert set(Item.objects.filter(round_number=2).values_list("progress", flat=True)) == {Progress.LABELLING}


def test_add_to_round_from_the_grid_takes_the_filtered_items(
    client: Client, study: Study, lead: User
) -> None:
    hits = [ItemFactory(study=study, title=f"NCCL {n}") for n in range(2)]
    ItemFactory(study=study, title="Pandas")
    login(client, lead)
    response = client.post(
        reverse("annotation:add-from-grid", args=["ddp"]), {"scope": "all", "query": "q=nccl", "round": "1"}
    )
    assert response.status_code == 302
    assert set(Item.objects.filter(round_number=1).values_list("id", flat=True)) == {i.pk for i in hits}


def test_the_migration_fills_the_columns_of_items_that_existed_before_them(
    study: Study, lead: User, annotator_a: User, annotator_b: User
) -> None:
    import importlib

    from django.apps import apps as registry

    items = [ItemFactory(study=study) for _ in range(4)]
    add_items_to_round(study, 1, [i.pk for i in items[:3]], actor=lead)
    assign_round(study, 1, [annotator_a.username, annotator_b.username], overlap=2)
    add_items_to_round(study, 2, [items[2].pk], actor=lead)
    kept = {i["id"]: i for i in Item.objects.values("id", "round_number", "progress", "decision")}
    assert {row["progress"] for row in kept.values()} >= {Progress.LABELLING, Progress.UNSAMPLED}
    Item.objects.update(round_number=0, progress=Progress.UNSAMPLED, decision="")  # as before the columns

    migration = importlib.import_module("apps.adjudication.migrations.0004_backfill_grid_columns")
    migration.backfill(registry, None)

    assert {i["id"]: i for i in Item.objects.values("id", "round_number", "progress", "decision")} == kept
