"""The disagreement queue's order kept in the cache (`queries.queue_order`): the filters that make its
statement walk every open disagreement read a page by id from that order, and page exactly as the SQL
keyset does."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from apps.accounts.models import Study, User
from apps.adjudication import queries
from apps.adjudication.models import Review, ReviewState
from apps.adjudication.queries import QueueFilters
from apps.annotation.models import Round
from apps.core.generations import figures_changed
from tests.conftest import login
from tests.factories import ItemFactory

SYMPTOM = QueueFilters(dimension="symptom")


def open_reviews(study: Study, round_: Round, n: int, dimensions: list[str]) -> list[int]:
    start = timezone.now() - timedelta(days=1)
    items = []
    for i in range(n):
        item = ItemFactory(study=study, title=f"queued {i:03d}")
        Review.objects.create(
            item=item, study=study, round=round_, state=ReviewState.DISAGREEMENT,
            disagreeing_dimensions=dimensions, updated_at=start + timedelta(minutes=(i * 7) % n),
        )  # fmt: skip
        items.append(item.pk)
    return items


def walk(study: Study, filters: QueueFilters, *, cached: bool) -> list[int]:
    seen: list[int] = []
    after: tuple[Any, int] | None = None
    while True:
        if cached:
            rows, after = queries.queue_rows(study, filters, after, 10)
        else:
            rows, after = queries.queue_page(queries.queue(study, filters), after, 10)
        seen += [row.item_id for row in rows]
        if after is None:
            return seen


def test_paging_the_kept_order_gives_what_the_sql_keyset_gives(study: Study, round1: Round) -> None:
    wanted = open_reviews(study, round1, 35, ["symptom"])
    open_reviews(study, round1, 5, ["fix"])  # not in the filter
    for filters in (
        SYMPTOM,
        QueueFilters(sort="category"),
        QueueFilters(dimension="symptom", sort="category"),
    ):
        by_sql = walk(study, filters, cached=False)
        assert walk(study, filters, cached=True) == by_sql
        assert len(by_sql) == len(set(by_sql))
        # a row read by id shows the key the statement would have computed for it
        kept, _ = queries.queue_rows(study, filters, None, 50)
        computed, _ = queries.queue_page(queries.queue(study, filters), None, 50)
        assert [(r.item_id, r.sort_key) for r in kept] == [(r.item_id, r.sort_key) for r in computed]
    assert sorted(walk(study, SYMPTOM, cached=True)) == sorted(wanted)
    assert queries.queue_order(study, QueueFilters(round_id=round1.pk)) is None  # the index serves it


def test_a_page_of_the_kept_order_is_read_by_id(
    client: Client, lead: User, study: Study, round1: Round
) -> None:
    open_reviews(study, round1, 12, ["symptom"])
    login(client, lead)
    url = reverse("adjudication:queue", args=[study.slug])
    client.get(url, {"dimension": "symptom", "sort": "category"})
    with CaptureQueriesContext(connection) as queries_run:
        response = client.get(url, {"dimension": "symptom", "sort": "category"})
    assert len(response.context["rows"]) == 12
    review_reads = [q["sql"] for q in queries_run if 'FROM "adjudication_review"' in q["sql"]]
    assert len(review_reads) == 1 and '"item_id" IN (' in review_reads[0]
    # the filters are not applied again (compiling them was 5 ms a page at 100k): only the state is checked
    assert "LIKE" not in review_reads[0].upper() and "EXISTS" not in review_reads[0].upper()


def test_an_item_decided_since_the_order_was_kept_is_left_out(study: Study, round1: Round) -> None:
    items = open_reviews(study, round1, 4, ["symptom"])
    assert queries.queue_order(study, SYMPTOM) is not None
    Review.objects.filter(item_id=items[0]).update(state=ReviewState.DECIDED)  # no request: the order is kept
    rows, _ = queries.queue_rows(study, SYMPTOM, None)
    assert items[0] not in [row.item_id for row in rows] and len(rows) == 3


def test_a_cursor_the_recounted_order_no_longer_holds_is_followed_in_sql(study: Study, round1: Round) -> None:
    items = open_reviews(study, round1, 25, ["symptom"])
    first, cursor = queries.queue_rows(study, SYMPTOM, None, 10)
    assert cursor is not None
    Review.objects.filter(item_id=cursor[1]).update(state=ReviewState.DECIDED)
    figures_changed(study.pk)  # the order is counted again, without the cursor's item
    second, _ = queries.queue_rows(study, SYMPTOM, cursor, 10)
    expected = walk(study, SYMPTOM, cached=False)
    shown = [row.item_id for row in first[:9]] + [row.item_id for row in second]
    assert shown == expected[: len(shown)] and len(set(shown) & set(items)) == 19


def test_a_later_page_bounds_its_walk_by_the_key_so_the_index_can_start_there(
    study: Study, round1: Round
) -> None:
    """The keyset's OR alone was a filter: PostgreSQL read 15,000 rows of `review_queue` to reach a page at
    90 % of the queue at 100k. With `key >= cursor` beside it, the index scan starts at the cursor."""
    open_reviews(study, round1, 15, ["symptom"])
    first, cursor = queries.queue_page(queries.queue(study, QueueFilters()), None, 10)
    assert cursor is not None
    with CaptureQueriesContext(connection) as run:
        second, _ = queries.queue_page(queries.queue(study, QueueFilters()), cursor, 10)
    page_read = next(q["sql"] for q in run if 'FROM "adjudication_review"' in q["sql"])
    assert '"adjudication_review"."updated_at" >= ' in page_read
    assert len(first) == 10 and len(second) == 5
    assert not {r.item_id for r in first} & {r.item_id for r in second}
