"""``add_model_rater``, ``import_model_labels`` and ``agreement --raters / --alt-test`` on a study."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from apps.accounts.models import Study, User
from apps.corpus.models import Item
from apps.raters.models import ModelAnswer, ModelLabel, ModelRater, RaterKind
from apps.taxonomy.models import Codebook
from tests.agreement.conftest import Annotate
from tests.raters.conftest import write_csv


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO())
    return out.getvalue()


def agreement_json(*args: str) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(run("agreement", *args, "--format", "json"))
    return result


# ------------------------------------------------------------------------------------ add_model_rater
def test_lead_adds_an_openai_compatible_rater_that_stores_the_key_variable_name_only(
    study: Study, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-value-never-stored")
    out = run(
        "add_model_rater", "ddp", "gpt4o", "--base-url", "http://127.0.0.1:8011/v1", "--model", "gpt-4o",
        "--api-key-env", "OPENAI_API_KEY", "--temperature", "0.7", "--samples", "3", "--concurrency", "8",
    )  # fmt: skip
    rater = ModelRater.objects.get(study=study, name="gpt4o")
    assert (rater.kind, rater.model, rater.api_key_env, rater.samples) == (
        "openai",
        "gpt-4o",
        "OPENAI_API_KEY",
        3,
    )
    assert (rater.temperature, rater.concurrency, rater.host) == (0.7, 8, "127.0.0.1:8011")
    assert "127.0.0.1:8011" in out and "sk-secret" not in out
    stored = json.dumps(list(ModelRater.objects.values()), default=str)
    assert "sk-secret-value-never-stored" not in stored


def test_a_pasted_key_instead_of_a_variable_name_is_refused_without_echoing_it(study: Study) -> None:
    with pytest.raises(CommandError) as caught:
        run("add_model_rater", "ddp", "m", "--base-url", "https://api.openai.com/v1", "--model", "gpt-4o",
            "--api-key-env", "sk-proj-abcdefghijklmnop")  # fmt: skip
    assert caught.value.returncode == 2
    assert "name* of an environment variable" in str(caught.value)
    assert "abcdefghijklmnop" not in str(caught.value)
    assert not ModelRater.objects.exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--baseline", "--model", "x"], "--model applies to an OpenAI-compatible rater"),
        (["--base-url", "http://127.0.0.1:1/v1"], "--base-url needs --model"),
        (["--base-url", "ftp://x", "--model", "m"], "http:// or https://"),
        (["--imported", "--samples", "0"], "positive whole number"),
        (["--imported", "--temperature", "3"], "temperature must lie in [0, 2]"),
    ],
)
def test_bad_rater_settings_are_refused_by_name(study: Study, args: list[str], message: str) -> None:
    with pytest.raises(CommandError, match=None) as caught:
        run("add_model_rater", "ddp", "m", *args)
    assert message in str(caught.value)
    assert not ModelRater.objects.exists()


def test_a_rater_cannot_take_a_users_name_or_another_raters(study: Study, annotator_a: User) -> None:
    with pytest.raises(CommandError, match="is a user's name"):
        run("add_model_rater", "ddp", "alice", "--imported")
    run("add_model_rater", "ddp", "base", "--baseline")
    assert ModelRater.objects.get(name="base").kind == RaterKind.BASELINE
    with pytest.raises(CommandError, match="already has a model rater named 'base'"):
        run("add_model_rater", "ddp", "base", "--imported")


# -------------------------------------------------------------------------------- import_model_labels
def test_import_model_labels_creates_an_imported_rater_and_is_idempotent(
    study: Study, codebook: Codebook, items: list[Item], tmp_path: Path
) -> None:
    path = write_csv(
        tmp_path / "m.csv",
        "item,dimension,label,sample",
        [(items[0].url, "kind", "bug", 0), (items[0].url, "fix", "code", 0), (items[0].url, "fix", "docs", 0),
         (items[1].url, "kind", "Question", 0), (items[1].url, "kind", "bug", 1)],
    )  # fmt: skip
    out = run("import_model_labels", "ddp", str(path), "--rater", "llm")
    rater = ModelRater.objects.get(study=study, name="llm")
    assert rater.kind == RaterKind.IMPORTED and "created as an imported rater" in out
    assert ModelAnswer.objects.filter(rater=rater).count() == 3
    assert sorted(ModelLabel.objects.values_list("category__key", flat=True)) == [
        "bug", "bug", "code", "docs", "question",
    ]  # fmt: skip
    again = run("import_model_labels", "ddp", str(path), "--rater", "llm")
    assert "3 replacing an earlier import" in again
    assert ModelAnswer.objects.count() == 3 and ModelLabel.objects.count() == 5


def test_a_bad_model_labels_file_names_every_problem_and_writes_nothing(
    study: Study, codebook: Codebook, items: list[Item], tmp_path: Path
) -> None:
    path = write_csv(
        tmp_path / "bad.csv",
        "item,dimension,label,round",
        [(items[0].url, "kind", "bug", ""), (items[0].url, "kind", "question", ""),
         ("https://nowhere.example/1", "kind", "bug", ""), (items[1].url, "colour", "red", ""),
         (items[2].url, "symptom", "explosion", ""), (items[3].url, "kind", "pending", ""),
         (items[4].url, "kind", "bug", "9")],
    )  # fmt: skip
    with pytest.raises(CommandError) as caught:
        run("import_model_labels", "ddp", str(path), "--rater", "llm")
    text = str(caught.value)
    assert caught.value.returncode == 2
    assert "row 3, label 'question': dimension 'kind' is single-choice" in text
    assert "row 4, item 'https://nowhere.example/1': no item of study ddp" in text
    assert "row 5, dimension 'colour': unknown dimension" in text
    assert "row 6, label 'explosion'" in text
    assert "row 7, label 'pending': a model has no pending value" in text
    assert "row 8, round '9': no such round" in text
    assert not ModelRater.objects.exists() and not ModelAnswer.objects.exists()


def test_labels_cannot_be_imported_into_a_rater_that_runs_a_model(
    study: Study, codebook: Codebook, items: list[Item], tmp_path: Path
) -> None:
    run("add_model_rater", "ddp", "gpt", "--base-url", "http://127.0.0.1:1/v1", "--model", "m")
    path = write_csv(tmp_path / "m.csv", "item,dimension,label", [(items[0].url, "kind", "bug")])
    with pytest.raises(CommandError, match="its answers come from its runs"):
        run("import_model_labels", "ddp", str(path), "--rater", "gpt")
    assert not ModelAnswer.objects.exists()


# ------------------------------------------------------------------------------------- agreement
@pytest.fixture
def labelled(
    study: Study, codebook: Codebook, items: list[Item], annotate: Annotate, annotator_a: User,
    annotator_b: User, tmp_path: Path,
) -> list[Item]:  # fmt: skip
    """Round 1: alice and bob on six items (they disagree on item 5); a model, ``llm``, agreeing with
    alice everywhere but item 0 (sample 0) and with bob everywhere (sample 1)."""
    alice = ["bug", "bug", "question", "question", "bug", "bug"]
    bob = ["bug", "bug", "question", "question", "bug", "question"]
    for item, a, b in zip(items, alice, bob, strict=True):
        annotate(1, item, annotator_a, [{"kind": [a]}])
        annotate(1, item, annotator_b, [{"kind": [b]}])
    model = ["question", *alice[1:]]
    rows = [(item.url, "kind", label, 0) for item, label in zip(items, model, strict=True)]
    rows += [(item.url, "kind", label, 1) for item, label in zip(items, bob, strict=True)]
    run("import_model_labels", "ddp", str(write_csv(tmp_path / "m.csv", "item,dimension,label,sample", rows)),
        "--rater", "llm")  # fmt: skip
    return items


def test_agreement_without_raters_is_still_people_only(labelled: list[Item]) -> None:
    report = agreement_json("ddp", "--dimension", "kind")
    assert report["n_annotators"] == 2
    assert [(p["a"], p["b"]) for p in report["pairwise"]] == [("alice", "bob")]


def test_agreement_compares_a_model_with_each_person_and_its_samples_with_each_other(
    labelled: list[Item],
) -> None:
    report = agreement_json("ddp", "--dimension", "kind", "--raters", "alice,bob,llm,llm#1")
    pairs = {(p["a"], p["b"]): p["percent_agreement"] for p in report["pairwise"]}
    assert report["n_annotators"] == 4 and report["n_items"] == 6
    assert pairs[("alice", "llm")] == pytest.approx(5 / 6)
    assert pairs[("bob", "llm#1")] == 1.0
    assert pairs[("llm", "llm#1")] == pytest.approx(4 / 6)  # self-consistency of two samples
    only_model = agreement_json("ddp", "--dimension", "kind", "--raters", "bob,llm#1")
    assert only_model["cohen_kappa"] == 1.0


def test_agreement_names_an_unknown_rater_and_the_known_ones(labelled: list[Item]) -> None:
    with pytest.raises(CommandError) as caught:
        run("agreement", "ddp", "--dimension", "kind", "--raters", "alice,gpt5", "--format", "json")
    assert caught.value.returncode == 2
    assert "unknown rater(s) 'gpt5'" in str(caught.value) and "llm" in str(caught.value)
    with pytest.raises(CommandError, match="at least two raters"):
        run("agreement", "ddp", "--dimension", "kind", "--raters", "alice")
    with pytest.raises(CommandError, match="needs --alt-test"):
        run("agreement", "ddp", "--dimension", "kind", "--epsilon", "0.1")


def test_alt_test_on_too_few_items_reports_why_and_people_only_agreement(labelled: list[Item]) -> None:
    report = agreement_json("ddp", "--dimension", "kind", "--alt-test", "llm")
    assert report["n_annotators"] == 2  # the object is today's, for the people
    test = report["alt_test"]
    assert (test["rater"], test["epsilon"], test["q"]) == ("llm", 0.2, 0.05)
    assert test["winning_rate"] is None and test["passed"] is False
    assert test["skipped"] == {"alice": 6, "bob": 6}
    text = run("agreement", "ddp", "--dimension", "kind", "--alt-test", "llm", "--format", "text")
    assert "alternative-annotator test of llm" in text and "alice left out: 6 item(s)" in text
    with pytest.raises(CommandError, match="is an annotator"):
        run("agreement", "ddp", "--dimension", "kind", "--alt-test", "alice")
