"""The JSON-lines export of every item with its labels (`GET .../export/items.jsonl`)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from apps.adjudication.services.decide import decide
from tests.api.conftest import as_user
from tests.api.world import World

pytestmark = pytest.mark.django_db


def lines(world: World, user: Any) -> list[dict[str, Any]]:
    response = as_user(user).get(f"/api/v1/studies/{world.study.slug}/export/items.jsonl")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/x-ndjson"
    return [json.loads(line) for line in b"".join(response.streaming_content).decode().splitlines()]


def test_every_item_is_a_line_in_id_order_labelled_or_not(world: World) -> None:
    rows = lines(world, world.lead)

    assert [row["url"] for row in rows] == [item.url for item in sorted(world.items, key=lambda i: i.pk)]
    in_no_round = next(row for row in rows if row["url"] == world.items[3].url)
    assert in_no_round["labels"] == [] and in_no_round["decision"] is None


def test_each_submitted_annotation_comes_with_its_annotator_round_and_findings(world: World) -> None:
    rows = {row["url"]: row for row in lines(world, world.owner)}

    first = {label["annotator"]: label for label in rows[world.items[0].url]["labels"]}
    assert set(first) == {world.alice.username, world.bob.username}
    assert first[world.alice.username]["round"] == world.round.number
    assert first[world.alice.username]["findings"] == [
        {"type": ["fault"], "symptom": ["hang"], "fix": ["config"]}
    ]
    assert first[world.bob.username]["findings"] == [{"type": ["howto"]}]
    assert [label["annotator"] for label in rows[world.items[1].url]["labels"]] == [world.alice.username]
    assert rows[world.items[2].url]["labels"] == []  # assigned to both, nothing submitted


def test_the_current_decision_comes_with_its_provenance_and_gold_findings(world: World) -> None:
    decide(
        world.items[0],
        [{"type": ["howto"]}],
        actor=world.lead,
        rationale="Bob is right.",
        expected_decision_id=None,
    )

    rows = {row["url"]: row for row in lines(world, world.lead)}

    assert rows[world.items[0].url]["decision"] == {
        "provenance": "adjudicated",
        "findings": [{"type": ["howto"]}],
    }
    assert rows[world.items[2].url]["decision"] is None


def test_annotators_get_403_and_outsiders_404(world: World) -> None:
    url = f"/api/v1/studies/{world.study.slug}/export/items.jsonl"
    assert as_user(world.alice).get(url).status_code == 403
    assert as_user(world.outsider).get(url).status_code == 404
