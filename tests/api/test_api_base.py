"""The API base (apps/core/api.py) for every endpoint at once: forged page cursors, deeply nested and
oversized bodies, and yes/no query parameters are refused with a 400 (or 413) in the API's JSON shape.

List endpoints are found from the URL conf, not listed by hand, so a new list cannot miss the checks.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import pytest
from django.urls import URLPattern, URLResolver, reverse
from rest_framework import generics
from rest_framework.test import APIClient

from apps.annotation.models import Annotation
from apps.taxonomy.models import Codebook
from config import api_urls
from tests.api.conftest import as_user
from tests.api.world import ALICE_LABELS, World, add_jobs
from tests.security.matrix import MATRIX

pytestmark = pytest.mark.django_db


def _api_views(patterns: list[URLPattern | URLResolver] | None = None) -> Iterator[tuple[str, type]]:
    """(URL name, view class) of every class-based endpoint of /api/v1/."""
    for pattern in api_urls.urlpatterns if patterns is None else patterns:
        if isinstance(pattern, URLResolver):
            yield from _api_views(pattern.url_patterns)
        elif pattern.name and hasattr(pattern.callback, "view_class"):
            yield pattern.name, pattern.callback.view_class


def _list_urls(world: World, client: APIClient) -> dict[str, str]:
    """URL name → URL of every endpoint whose GET answers a page (`next` and `results`)."""
    found = {}
    for name, _view in _api_views():
        rule = MATRIX[name]
        if "GET" not in rule.methods:
            continue
        url = reverse(name, kwargs=rule.kwargs(world) or None)
        response = client.get(url)
        body = response.json() if response["Content-Type"].startswith("application/json") else None
        if response.status_code == 200 and isinstance(body, dict) and {"next", "results"} <= body.keys():
            found[name] = url
    return found


def _cursor(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


FORGED_CURSORS = {
    "not base64": "%%%not-a-cursor",
    "base64 of nothing useful": "bm9wZQ",
    "a negative offset": _cursor("o=-1&p=1"),
    "a reverse flag that is not 0 or 1": _cursor("r=maybe"),
}
# Positions that no number column holds (a list ordered by slug takes any text as a position).
FORGED_POSITIONS = {
    "a word where an id goes": _cursor("p=abc"),
    "an id past any integer column": _cursor("p=" + "9" * 30),
    "a date where an id goes": _cursor("p=2024-01-01T00:00:00"),
}


def test_a_forged_cursor_is_a_json_400_on_every_list_endpoint(world: World) -> None:
    add_jobs(world)
    client = as_user(world.owner)
    lists = _list_urls(world, client)
    paginated = {name for name, view in _api_views() if issubclass(view, generics.ListAPIView)}
    assert paginated <= lists.keys(), f"lists not reached: {paginated - lists.keys()}"
    named_in_the_issue = {
        "api-item-list",
        "api-my-queue",
        "api-my-annotations",
        "api-decision-list",
        "api-annotation-list",
        "api-disagreements",
    }
    assert named_in_the_issue <= lists.keys()
    views = dict(_api_views())
    wrong = []
    for name, url in sorted(lists.items()):
        forged = dict(FORGED_CURSORS)
        if getattr(views[name], "cursor_ordering", "id") != "slug":
            forged.update(FORGED_POSITIONS)
        for what, cursor in forged.items():
            response = client.get(url, {"cursor": cursor})
            body = response.json() if response["Content-Type"] == "application/json" else {}
            if response.status_code != 400 or "cursor is not valid" not in body.get("detail", ""):
                wrong.append(f"{name} with {what}: {response.status_code} {response.content[:120]!r}")
    assert not wrong, "\n".join(wrong)


def test_a_genuine_cursor_still_pages_through_a_list(world: World) -> None:
    client = as_user(world.owner)
    first = client.get(f"/api/v1/studies/{world.study.slug}/items/?page_size=2").json()
    second = client.get(first["next"]).json()
    assert len(first["results"]) == len(second["results"]) == 2
    assert {i["id"] for i in first["results"]}.isdisjoint(i["id"] for i in second["results"])


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize("depth", [100, 5_000, 100_000])
def test_a_deeply_nested_body_is_a_400_on_the_submit_and_the_codebook_load(world: World, depth: int) -> None:
    slug = world.study.slug
    submit = f"/api/v1/studies/{slug}/assignments/{world.assignment('alice', 2).pk}/annotation/"
    alice, owner = as_user(world.alice), as_user(world.owner)
    version = Codebook.objects.get(study=world.study).version
    for client, method, url in ((alice, "post", submit), (owner, "put", f"/api/v1/studies/{slug}/codebook/")):
        body = '{"findings": ' + _nested(depth) + ', "name": "x", "dimensions": []}'
        response = getattr(client, method)(url, body, content_type="application/json")
        assert response.status_code == 400, (url, response.content[:200])
        assert response.json() == {"detail": "JSON parse error - the body is nested deeper than 64 levels."}
    assert not Annotation.objects.filter(assignment=world.assignment("alice", 2)).exists()
    assert Codebook.objects.get(study=world.study).version == version


def test_half_a_surrogate_pair_in_a_json_body_is_a_400_naming_where_and_writes_nothing(world: World) -> None:
    """JSON.stringify writes a string cut in the middle of an emoji as an escaped lone surrogate, which no
    UTF-8 column can hold: a codebook's names (no text field checks them) failed the write with a 500."""
    slug = world.study.slug
    version = Codebook.objects.get(study=world.study).version
    category = {"key": "a", "name": "A \ud83d"}  # json.dumps writes it as the escape "\ud83d"
    codebook = {"name": "X", "dimensions": [{"key": "d", "name": "D", "categories": [category]}]}
    submit = f"/api/v1/studies/{slug}/assignments/{world.assignment('alice', 2).pk}/annotation/"
    cases = (
        (
            as_user(world.owner).put,
            f"/api/v1/studies/{slug}/codebook/",
            codebook,
            "dimensions[0].categories[0].name",
        ),
        (as_user(world.alice).post, submit, {**ALICE_LABELS, "memo": "cut \udc00"}, "memo"),
    )
    for send, url, body, where in cases:
        response = send(url, json.dumps(body), content_type="application/json")
        assert response.status_code == 400, response.content[:300]
        assert response.json()["detail"].startswith(f"JSON parse error - {where}: half of a UTF-16 surrogate")
    assert Codebook.objects.get(study=world.study).version == version
    assert not Annotation.objects.filter(assignment=world.assignment("alice", 2)).exists()


def test_the_import_list_reads_json_with_the_same_bounded_parser(world: World) -> None:
    """It named DRF's plain JSON parser, which lets a lone surrogate through to the job's parameters."""
    url = f"/api/v1/studies/{world.study.slug}/imports/"
    body = json.dumps({"kind": "github", "repo": "a/b", "labels": "bug \ud83d"})
    response = as_user(world.owner).post(url, body, content_type="application/json")
    assert response.status_code == 400, response.content[:300]
    assert response.json()["detail"].startswith("JSON parse error - labels: half of a UTF-16 surrogate pair")


def test_a_body_nested_as_deep_as_a_real_codebook_is_read(world: World) -> None:
    """The limit leaves room: a category tree as deep as the codebook allows (20 levels) loads."""
    category: dict[str, Any] = {"key": "leaf", "name": "Leaf"}
    for level in range(19):
        category = {"key": f"c{level}", "name": f"Level {level}", "children": [category]}
    codebook = {"name": "Deep", "dimensions": [{"key": "d", "name": "D", "categories": [category]}]}
    response = as_user(world.owner).put(
        f"/api/v1/studies/{world.study.slug}/codebook/?dry_run=true", codebook, format="json"
    )
    assert response.status_code == 200, response.content[:300]
    assert response.json()["dry_run"] is True


@pytest.mark.parametrize("content_type", ["application/json", "application/x-www-form-urlencoded"])
def test_a_body_over_the_size_limit_is_a_json_413(world: World, settings: Any, content_type: str) -> None:
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 2048
    body = '{"memo": "' + "x" * 4096 + '"}' if content_type == "application/json" else "memo=" + "x" * 4096
    url = f"/api/v1/studies/{world.study.slug}/assignments/{world.assignment('alice', 2).pk}/annotation/"
    response = as_user(world.alice).post(url, body, content_type=content_type)
    assert response.status_code == 413
    assert response["Content-Type"] == "application/json"
    assert "larger than the limit" in response.json()["detail"]
    assert not Annotation.objects.filter(assignment=world.assignment("alice", 2)).exists()


def test_the_schema_documents_the_413_of_every_write() -> None:
    client = APIClient()
    schema = client.get("/api/schema/?format=json").json()
    put = schema["paths"]["/api/v1/studies/{slug}/codebook/"]["put"]
    assert "413" in put["responses"]


# --- yes/no query parameters: one parser ---------------------------------------------------------------


CODEBOOK_RENAMED = {"name": "Renamed", "dimensions": []}


@pytest.mark.parametrize("value", ["maybe", "", "2", "truee", "null"])
def test_codebook_put_with_a_dry_run_that_is_not_a_boolean_is_a_400_and_writes_nothing(
    world: World, value: str
) -> None:
    before = Codebook.objects.get(study=world.study)
    response = as_user(world.owner).put(
        f"/api/v1/studies/{world.study.slug}/codebook/?dry_run={value}", CODEBOOK_RENAMED, format="json"
    )
    assert response.status_code == 400, response.content[:200]
    assert response.json()["field_errors"] == {"dry_run": [f"Must be true or false, not {value!r}."]}
    after = Codebook.objects.get(study=world.study)
    assert (after.name, after.version) == (before.name, before.version)


@pytest.mark.parametrize("value", ["true", "TRUE", "1", "yes", "on"])
def test_codebook_put_with_a_true_dry_run_lists_the_changes_and_writes_nothing(
    world: World, value: str
) -> None:
    before = Codebook.objects.get(study=world.study)
    response = as_user(world.owner).put(
        f"/api/v1/studies/{world.study.slug}/codebook/?dry_run={value}", CODEBOOK_RENAMED, format="json"
    )
    assert response.status_code == 200
    assert response.json()["dry_run"] is True and response.json()["changed"] is True
    assert Codebook.objects.get(study=world.study).version == before.version


@pytest.mark.parametrize("value", ["false", "0", "no", "off"])
def test_codebook_put_with_a_false_dry_run_applies_the_change(world: World, value: str) -> None:
    before = Codebook.objects.get(study=world.study)
    response = as_user(world.owner).put(
        f"/api/v1/studies/{world.study.slug}/codebook/?dry_run={value}", CODEBOOK_RENAMED, format="json"
    )
    assert response.status_code == 200
    assert Codebook.objects.get(study=world.study).version == before.version + 1


def test_items_roundless_is_read_by_the_same_parser(world: World) -> None:
    client = as_user(world.alice)
    url = f"/api/v1/studies/{world.study.slug}/items/"
    assert client.get(url, {"roundless": "maybe"}).json()["field_errors"] == {
        "roundless": ["Must be true or false, not 'maybe'."]
    }
    assert client.get(url, {"roundless": ""}).status_code == 400
    roundless = client.get(url, {"roundless": "on"}).json()["results"]
    assert [i["id"] for i in roundless] == [world.items[3].pk]
