"""`annotator_report` and the Quality screen (docs/quality.md): the contract's fields, the annotators'
agreement with the decisions, bad input named, and only leads reading any of it."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse

from apps.accounts.models import Study, User
from apps.annotation.models import Annotation
from apps.corpus.models import Item
from tests.conftest import login

CONTRACT = {
    "annotator",
    "dimension",
    "round",
    "n_gold",
    "gold_accuracy",
    "n_final",
    "final_accuracy",
    "final_kappa",
    "median_active_seconds",
    "pending_rate",
    "undefined",
}


@pytest.fixture
def labelled(codebook: Any, items: list[Item], annotate: Any, annotator_a: User, annotator_b: User) -> Study:
    """Round 1: alice and bob agree on items 0-2 (decided unanimously) and disagree on item 3 (open);
    round 2: they agree on item 4, and bob leaves item 5's kind pending."""
    for item, (a, b) in zip(
        items[:4],
        [("bug", "bug"), ("question", "question"), ("bug", "bug"), ("bug", "question")],
        strict=True,
    ):
        annotate(1, item, annotator_a, [{"kind": [a]}])
        annotate(1, item, annotator_b, [{"kind": [b]}])
    annotate(2, items[4], annotator_a, [{"kind": ["question"]}])
    annotate(2, items[4], annotator_b, [{"kind": ["question"]}])
    annotate(2, items[5], annotator_a, [{"kind": ["bug"]}])
    annotate(2, items[5], annotator_b, [{"kind": "pending"}])
    Annotation.objects.filter(assignment__annotator=annotator_a, assignment__round__number=1).update(
        seconds_spent=40
    )
    return codebook.study


def _report(*args: str) -> dict[str, Any]:
    out = io.StringIO()
    call_command("annotator_report", "ddp", *args, "--format", "json", stdout=out)
    return json.loads(out.getvalue())


def test_the_json_report_has_the_contracts_fields_per_round_and_over_all_rounds(labelled: Study) -> None:
    rows = _report("--dimension", "kind")["annotators"]

    assert all(set(row) >= CONTRACT for row in rows)
    by = {(r["annotator"], r["round"]): r for r in rows}
    assert set(by) == {("alice", 1), ("alice", 2), ("alice", None), ("bob", 1), ("bob", 2), ("bob", None)}
    alice = by["alice", None]
    assert (alice["n_final"], alice["final_accuracy"], alice["final_kappa"]) == (4, 1.0, 1.0)
    assert alice["median_active_seconds"] == 40 and by["alice", 1]["median_active_seconds"] == 40
    assert alice["gold_accuracy"] is None and "gold" in alice["undefined"]["gold_accuracy"]
    assert by["bob", 2]["pending_rate"] == 0.5 and by["bob", None]["pending_rate"] == pytest.approx(1 / 6)
    assert (
        by["bob", None]["median_active_seconds"] is None
        and "median_active_seconds" in by["bob", None]["undefined"]
    )


def test_one_round_gives_that_rounds_rows_only(labelled: Study) -> None:
    rows = _report("--round", "2", "--dimension", "kind")["annotators"]
    assert {(r["annotator"], r["round"]) for r in rows} == {("alice", 2), ("bob", 2)}


def test_csv_and_text_carry_the_same_rows(labelled: Study) -> None:
    out = io.StringIO()
    call_command("annotator_report", "ddp", "--dimension", "kind", "--format", "csv", stdout=out)
    table = list(csv.DictReader(io.StringIO(out.getvalue())))
    assert len(table) == 6 and {r["round"] for r in table} == {"1", "2", "all"}
    text = io.StringIO()
    call_command("annotator_report", "ddp", "--dimension", "kind", "--format", "text", stdout=text)
    assert len(text.getvalue().strip().splitlines()) == 2 + 6


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--round", "9"], "unknown round 9; valid rounds: 1, 2"),
        (["--dimension", "nope"], "unknown dimension 'nope'; valid dimensions: kind, symptom, fix"),
    ],
)
def test_bad_input_is_named_with_the_valid_values(labelled: Study, args: list[str], message: str) -> None:
    with pytest.raises(CommandError, match=message):
        call_command("annotator_report", "ddp", *args, "--format", "json", stdout=io.StringIO())


def test_only_leads_open_the_quality_screen_and_its_csv(
    client: Client, labelled: Study, lead: User, annotator_a: User, outsider: User
) -> None:
    page, download = reverse("quality:quality", args=["ddp"]), reverse("quality:csv", args=["ddp"])
    assert login(client, annotator_a).get(page).status_code == 403
    assert client.get(download).status_code == 403
    assert login(client, outsider).get(page).status_code == 404

    response = login(client, lead).get(page, {"dimension": "kind"})
    html = response.content.decode()
    assert response.status_code == 200
    assert 'data-annotator="alice" data-dimension="kind" data-round="all"' in html
    assert "Drift over rounds" in html
    rows = list(csv.DictReader(io.StringIO(client.get(download, {"dimension": "kind"}).content.decode())))
    assert {(r["annotator"], r["round"]) for r in rows} == {
        (a, r) for a in ("alice", "bob") for r in ("1", "2", "all")
    }


def test_the_screen_names_a_bad_filter(client: Client, labelled: Study, lead: User) -> None:
    response = login(client, lead).get(reverse("quality:quality", args=["ddp"]), {"round": "x"})
    assert response.status_code == 400 and "round must be a round&#x27;s number" in response.content.decode()
