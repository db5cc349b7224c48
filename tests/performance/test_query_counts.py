"""The hot pages run the same number of queries whatever the size of the study (issue 10).

Each page is requested once to warm caches (the codebook index, a first agreement snapshot), then counted
exactly with `django_assert_num_queries`, at 20 and at 120 items (`conftest.SIZES`). The numbers are the
ones measured; a page that starts a query per item, per row or per annotator fails here. The same pages
under gunicorn on 10,000 and 100,000 items are in docs/performance.md.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test import Client
from rest_framework.test import APIClient

from apps.accounts.models import ApiToken, User
from apps.adjudication.forms import encode_cursor
from apps.adjudication.models import Review, ReviewState
from apps.annotation.models import Assignment, AssignmentStatus
from apps.annotation.payload import value_field
from apps.core.generations import figures_changed
from apps.corpus.models import Item
from apps.taxonomy.index import CodebookIndex
from tests.conftest import login


def _client_for(username: str) -> Client:
    return login(Client(), User.objects.get(username=username))


def _first_open(study: Any) -> Assignment:
    first = (
        Assignment.objects.filter(study=study, status=AssignmentStatus.OPEN)
        .select_related("annotator")
        .order_by("id")
        .first()
    )
    assert first is not None, "the generated study has an open round"
    return first


def _count(
    client: Client, django_assert_num_queries: Any, url: str, expected: int, status: int = 200
) -> None:
    client.get(url)  # warm-up: caches, a first snapshot
    with django_assert_num_queries(expected):
        response = client.get(url)
    assert response.status_code == status, (url, response.status_code)


def test_next_item_runs_a_constant_number_of_queries(
    bench_study: Any, django_assert_num_queries: Any
) -> None:
    annotator = _first_open(bench_study).annotator
    client = _client_for(annotator.username)
    _count(client, django_assert_num_queries, "/studies/perf/label/next/", NEXT_ITEM, status=302)


def _howto(study: Any) -> tuple[int, str]:
    """The codebook's version and a leaf how-to topic: labels every submission below may send."""
    index = CodebookIndex.for_study(study)
    tree = index.tree("howto_topic")
    return index.version, index.category(next(c for c in tree if not tree.children(c))).key


def _warmup_for(study: Any, assignment: Assignment) -> Assignment:
    """Another annotator's open assignment on another item: submitting it first prepares the connection's
    statements (PostgreSQL, once per connection; the test client's users share one)."""
    warmup = (
        Assignment.objects.filter(study=study, status=AssignmentStatus.OPEN)
        .exclude(item=assignment.item)
        .exclude(annotator=assignment.annotator)
        .select_related("annotator")
        .order_by("id")
        .first()
    )
    assert warmup is not None
    return warmup


def test_submit_runs_a_constant_number_of_queries(bench_study: Any, django_assert_num_queries: Any) -> None:
    assignment = _first_open(bench_study)
    version, topic = _howto(bench_study)
    data = {
        "codebook_version": str(version),
        "finding": "1",
        value_field(1, "issue_type"): "howto",
        value_field(1, "howto_topic"): topic,
    }
    warmup = _warmup_for(bench_study, assignment)
    warm = _client_for(warmup.annotator.username)
    assert warm.post(f"/studies/perf/label/{warmup.pk}/submit/", data).status_code == 302
    client = _client_for(assignment.annotator.username)
    with django_assert_num_queries(SUBMIT if connection.vendor == "postgresql" else SUBMIT_ORM):
        response = client.post(f"/studies/perf/label/{assignment.pk}/submit/", data)
    assert response.status_code == 302
    assert Assignment.objects.get(pk=assignment.pk).status == AssignmentStatus.SUBMITTED


def test_the_api_submit_runs_a_constant_number_of_queries(
    bench_study: Any, django_assert_num_queries: Any
) -> None:
    """`POST .../assignments/<id>/annotation/` with a token, what scripts and the peers' clients use: its
    count is pinned as the page's is, so that a statement added on the API's path shows here."""
    assignment = _first_open(bench_study)
    version, topic = _howto(bench_study)
    body = {
        "findings": [{"values": {"issue_type": ["howto"], "howto_topic": [topic]}}],
        "codebook_version": version,
    }
    warmup = _warmup_for(bench_study, assignment)
    warm = _token_client(warmup.annotator)
    assert warm.post(f"{API}/assignments/{warmup.pk}/annotation/", body, format="json").status_code == 201
    client = _token_client(assignment.annotator)
    assert client.get(f"{API}/codebook/").status_code == 200  # the token's first use records its time
    with django_assert_num_queries(API_SUBMIT if connection.vendor == "postgresql" else API_SUBMIT_ORM):
        response = client.post(f"{API}/assignments/{assignment.pk}/annotation/", body, format="json")
    assert response.status_code == 201, response.content
    assert Assignment.objects.get(pk=assignment.pk).status == AssignmentStatus.SUBMITTED


API = "/api/v1/studies/perf"


def _token_client(user: User) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {ApiToken.issue(user, 'query counts')[1]}")
    return client


def test_workbench_runs_a_constant_number_of_queries(
    bench_study: Any, django_assert_num_queries: Any
) -> None:
    assignment = _first_open(bench_study)
    client = _client_for(assignment.annotator.username)
    _count(client, django_assert_num_queries, f"/studies/perf/label/{assignment.pk}/", WORKBENCH)


def test_annotator_queue_runs_a_constant_number_of_queries(
    bench_study: Any, django_assert_num_queries: Any
) -> None:
    """My queue lists open and submitted assignments with their item and round, which it reads as the
    columns it shows (`QUEUE_COLUMNS`), never as models that a forgotten column would query row by row."""
    annotator = _first_open(bench_study).annotator
    assert Assignment.objects.filter(annotator=annotator, status=AssignmentStatus.SUBMITTED).exists()
    _count(
        _client_for(annotator.username), django_assert_num_queries, "/studies/perf/queue/", ANNOTATOR_QUEUE
    )


def _deep_item(study: Any) -> str:
    """The grid's cursor of a page 90 % of the way into the study's items by round."""
    from apps.corpus.grid import encode_cursor

    rows = list(
        Item.objects.filter(study=study).order_by("round_number", "id").values_list("round_number", "id")
    )
    return encode_cursor(*rows[int(len(rows) * 0.9)])


def _deep_cursor(study: Any) -> str:
    rows = list(
        Review.objects.filter(study=study, state=ReviewState.DISAGREEMENT)
        .order_by("updated_at", "item_id")
        .values_list("updated_at", "item_id")
    )
    # one before the 90th percentile, so that the deep page is never empty, even with 20 items
    return encode_cursor(rows[max(0, int(len(rows) * 0.9) - 1)])


@pytest.mark.parametrize(
    ("page", "path", "expected"),
    [
        ("study page", "", "STUDY_PAGE"),
        ("item list", "items/", "ITEM_LIST"),
        ("item list, deep page", "items/?sort=round&after={deep_item}", "ITEM_LIST"),
        (
            "item list, filtered and searched",
            "items/?source=github&screening=relevant&q=the&sort=-round",
            "ITEM_LIST",
        ),
        ("disagreement queue", "disagreements/", "QUEUE"),
        ("disagreement queue, deep page", "disagreements/?after={deep_cursor}", "QUEUE"),
        ("agreement dashboard", "agreement/", "DASHBOARD"),
        ("codebook page", "codebook/", "CODEBOOK"),
        ("export page", "export/", "EXPORT"),
    ],
)
def test_lead_pages_run_a_constant_number_of_queries(
    bench_study: Any, django_assert_num_queries: Any, page: str, path: str, expected: str
) -> None:
    url = "/studies/perf/" + path.format(
        deep_item=_deep_item(bench_study), deep_cursor=_deep_cursor(bench_study)
    )
    _count(_client_for("bench-lead"), django_assert_num_queries, url, globals()[expected])


@pytest.mark.parametrize(
    ("path", "expected"),
    [("", "STUDY_PAGE_COUNTING"), ("disagreements/", "QUEUE_COUNTING"), ("codebook/", "CODEBOOK_COUNTING")],
)
def test_the_first_view_after_a_change_counts_again_in_a_constant_number_of_queries(
    bench_study: Any, django_assert_num_queries: Any, path: str, expected: str
) -> None:
    """The pages whose whole-study figures are cached (`apps.core.generations`) count them again after a
    change to the study, in as many queries at 20 items as at 120."""
    client = _client_for("bench-lead")
    client.get(f"/studies/perf/{path}")
    figures_changed(bench_study.pk)
    with django_assert_num_queries(globals()[expected]):
        assert client.get(f"/studies/perf/{path}").status_code == 200


# The exact counts measured (the same at both sizes; see the module docstring). Every page starts with the
# session, then the user with their membership of the study (accounts/backends.py): two queries.
NEXT_ITEM = 3
# A first submission on PostgreSQL: session, user with membership; BEGIN, the locks, every write and the next
# item in one statement (annotation/services/submit_sql.py), the item's consolidation state with its new
# Review, the items grid's labelling columns of the item (adjudication/progress.py), COMMIT; before all of
# it, whether a training round's pass mark locks this assignment's round for the user (one indexed EXISTS,
# annotation/views/workbench.py `_refuse_locked`; the lock itself is read only when one exists).
SUBMIT = 8
# The ORM path (SQLite): without row locks the first annotation and the first review are inserted in
# savepoints, so that a twin request's insert can be recovered from; with the same lock check.
SUBMIT_ORM = 24
# The API's first submission on PostgreSQL: the token with the user's membership of the study (one
# statement, accounts/authentication.py); the training gate; BEGIN, the submission's one statement, the
# item's consolidation state (which opens its Review), the grid's labelling columns, COMMIT; its answer is
# built from what the submission wrote (decision 0004), so nothing is read back.
API_SUBMIT = 7
# The ORM path (SQLite), as the page's, and the answer's annotation read back with its round.
API_SUBMIT_ORM = 23
# My queue: session, user with membership; the training lock, my rounds (cached figures aside), the open
# rows of the first round with any, my 50 latest submissions, which of the open ones were sent back.
ANNOTATOR_QUEUE = 6
WORKBENCH = 8  # with the item's fix evidence (its links: one query, corpus/_fix-pane.html)
# The study page, the disagreement queue and the codebook page keep their whole-study figures in the cache
# between changes of the study (apps/core/generations.py): a view with nothing changed since the last one
# runs the first count, the first view after a change the second.
STUDY_PAGE = 4  # and the lead's own open and submitted assignments
STUDY_PAGE_COUNTING = 12  # items, rounds, assignments per annotator and round, decisions, disagreements...
ITEM_LIST = 5  # the grid: its page, its count (up to 1,000), the user's saved views
QUEUE = 5  # the codebook, the page, its assignments
QUEUE_COUNTING = 11  # and the filter's rounds and annotators, counts per round, discussion, items short
DASHBOARD = 8  # label aggregates and the confusion matrix from the cache (agreement.freshness)
CODEBOOK = 3  # the codebook row (its dimensions and categories: the process's index cache)
CODEBOOK_COUNTING = 5  # and the label and gold counts of every category
EXPORT = 9
