"""The study page, the rounds page and the codebook page keep their figures (counts over the whole study)
in the cache between changes, and every way of changing the study is counted by the next page at once:
a write in the browser or the API, a command. (A writing job: tests/corpus/test_tasks.py.)"""

from __future__ import annotations

from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from apps.accounts.models import Study, User
from apps.adjudication.status import overview
from apps.annotation.models import Assignment, Round
from apps.core import generations
from apps.corpus.models import Item
from tests.annotation.conftest import Book, make_round
from tests.conftest import login

pytestmark = pytest.mark.django_db

# Queries of a view whose figures come from the cache: the session, the user with their membership, and
# what the page reads besides its figures (study page: the lead's own open and submitted counts; rounds
# page: the members for the assign form; codebook page: the codebook, its dimensions and its categories,
# which a server takes from its process's index cache but a test's open transaction reads every time).
CACHED_QUERIES = {"study-detail": 4, "rounds": 3, "codebook": 5}


def page(name: str, study: Study) -> str:
    app = {"study-detail": "adjudication", "rounds": "annotation", "codebook": "taxonomy"}[name]
    return reverse(f"{app}:{name}", args=[study.slug])


def queries(client: Client, url: str) -> tuple[int, Any]:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    assert response.status_code == 200
    return len(captured.captured_queries), response


@pytest.mark.parametrize("name", sorted(CACHED_QUERIES))
def test_a_second_view_reads_the_figures_from_the_cache(
    name: str, client: Client, study: Study, book: Book, items: list[Item], lead: User, annotator_a: User
) -> None:
    make_round(study, 1, items[:4], {annotator_a: items[:4]})
    login(client, lead).get(page(name, study))  # the session
    generations.figures_changed(study.pk)
    first, _ = queries(client, page(name, study))
    second, _ = queries(client, page(name, study))
    assert second == CACHED_QUERIES[name]
    assert first > second


def test_a_round_drawn_in_the_browser_is_on_the_next_page_at_once(
    client: Client, study: Study, book: Book, items: list[Item], lead: User
) -> None:
    login(client, lead)
    assert "No rounds yet" in client.get(page("rounds", study)).content.decode()
    before = client.get(page("study-detail", study)).context["status"]["rounds"]
    drawn = client.post(reverse("annotation:draw", args=[study.slug]), {"number": 1, "size": 4, "seed": 7})
    assert drawn.status_code == 302
    rounds = client.get(drawn["Location"]).context["rounds"]
    assert [(r["round"].number, r["round"].n_items) for r in rounds] == [(1, 4)]
    assert (before, client.get(page("study-detail", study)).context["status"]["rounds"]) == (0, 1)


def test_a_submission_through_the_api_is_counted_by_the_study_page(
    client: Client, study: Study, book: Book, items: list[Item], lead: User, annotator_a: User
) -> None:
    from apps.accounts.models import ApiToken
    from tests.api.conftest import with_token

    round_ = make_round(study, 1, items[:2], {annotator_a: items[:2]})
    login(client, lead)
    assert client.get(page("study-detail", study)).context["status"]["assignments"]["submitted"] == 0
    assignment = Assignment.objects.get(round=round_, item=items[0])
    api = with_token(ApiToken.issue(annotator_a, "script")[1])
    body = {
        "codebook_version": book.codebook.version,
        "findings": [{"values": {"issue_type": ["howto"], "howto_topic": ["parallel"]}}],
    }
    url = reverse("api-assignment-annotation", args=[study.slug, assignment.pk])
    assert api.post(url, body, format="json").status_code == 201
    status = client.get(page("study-detail", study)).context["status"]
    assert status["assignments"] == {"open": 1, "submitted": 1}


def test_a_command_that_writes_is_counted_by_the_next_page(
    client: Client, study: Study, book: Book, items: list[Item], lead: User
) -> None:
    login(client, lead)
    assert client.get(page("study-detail", study)).context["status"]["rounds"] == 0
    call_command("sample", study.slug, "--round", "1", "--size", "3", "--seed", "1", stdout=None)
    assert Round.objects.filter(study=study).count() == 1
    assert client.get(page("study-detail", study)).context["status"]["rounds"] == 1


def test_the_overview_is_computed_when_the_cache_cannot_be_reached(
    study: Study, book: Book, items: list[Item], monkeypatch: pytest.MonkeyPatch
) -> None:
    class Down:
        def __getattr__(self, name: str) -> Any:
            def fail(*args: Any, **kwargs: Any) -> Any:
                raise ConnectionError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

            return fail

    monkeypatch.setattr(generations, "cache", Down())
    assert overview(study).status["items"] == len(items)
    generations.study_written(study.pk)  # a write's middleware hook: warns, does not fail
