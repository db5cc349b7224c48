"""The replication package's models/ folder (#21 point 6): each model rater with its server's host and
base URL and never a key, its raw answers and refusals, and its agreement with the people and with the
gold decisions; import_study restores them, and refuses a bad answer by file, line and field."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from apps.accounts.models import Study
from apps.corpus.models import Item
from apps.export.package import PackageError, build_package, import_study
from apps.raters.models import AnswerStatus, ModelAnswer, ModelLabel, ModelRater
from apps.taxonomy.models import Category
from tests.export.test_package import counts, members, repack

pytestmark = pytest.mark.django_db

KEY_PARTS = ("s3cr3t", "api-key=abc")


@pytest.fixture
def with_model(labelled: Study) -> Study:
    rater = ModelRater.objects.create(
        study=labelled, name="gpt", kind="openai", model="gpt-test", api_key_env="MODEL_KEY_X",
        base_url="http://user:s3cr3t@127.0.0.1:9/v1?api-key=abc", temperature=0.2,
    )  # fmt: skip
    items = {i.url.rsplit("/", 1)[1]: i for i in Item.objects.filter(study=labelled)}

    def answer(n: str, labels: list[tuple[str, str]], *, refused: str = "") -> None:
        made = ModelAnswer.objects.create(
            rater=rater, item=items[n], prompt_hash="h" * 64, codebook_version=1, model_id="gpt-test-0601",
            status=AnswerStatus.REFUSED if refused else AnswerStatus.VALID, reason=refused,
            raw_text="{...}" if refused else json.dumps(labels), input_tokens=10, output_tokens=5,
        )  # fmt: skip
        for dimension, key in labels:
            category = Category.objects.get(
                dimension__codebook__study=labelled, dimension__key=dimension, key=key
            )
            ModelLabel.objects.create(answer=made, dimension=category.dimension, category=category)

    answer("1", [("type", "fault"), ("symptom", "segfault"), ("fix", "code"), ("fix", "config")])
    answer("2", [("type", "howto")])
    answer("3", [("type", "fault"), ("symptom", "oom"), ("fix", "config")])
    answer("4", [], refused="malformed JSON: Expecting value")
    return labelled


def test_the_package_holds_each_model_its_answers_and_its_agreement_and_never_a_key(
    with_model: Study, tmp_path: Path
) -> None:
    path = build_package(with_model, tmp_path / "p.zip") and tmp_path / "p.zip"
    files = members(path)
    assert {"models/raters.json", "models/answers.jsonl", "models/agreement.json"} <= set(files)
    manifest = json.loads(files["manifest.json"])
    assert "models/answers.jsonl" in manifest["files"]
    assert not any(part.encode() in data for data in files.values() for part in KEY_PARTS)

    (rater,) = json.loads(files["models/raters.json"])["raters"]
    assert rater["host"] == "127.0.0.1:9" and rater["base_url"] == "http://127.0.0.1:9/v1"
    assert (rater["model"], rater["model_ids"], rater["api_key_env"]) == (
        "gpt-test",
        ["gpt-test-0601"],
        "MODEL_KEY_X",
    )
    assert rater["temperature"] == 0.2 and rater["answers"] == 4

    lines = [json.loads(line) for line in files["models/answers.jsonl"].decode().splitlines()]
    by_item = {line["item"].rsplit("/", 1)[1]: line for line in lines}
    assert [line["item"] for line in lines] == sorted(line["item"] for line in lines)  # a stable order
    assert by_item["1"]["labels"] == [
        [1, "type", "fault"], [1, "symptom", "segfault"], [1, "fix", "code"], [1, "fix", "config"]
    ]  # fmt: skip
    refused = by_item["4"]
    assert (refused["status"], refused["reason"], refused["labels"]) == (
        "refused", "malformed JSON: Expecting value", []
    )  # fmt: skip

    agreement = json.loads(files["models/agreement.json"])
    assert agreement["people"] == ["alice", "bob"]
    gold = agreement["raters"]["gpt"]["type"]["gold"]
    # Decided: 1 fault, 2 fault (adjudicated), 3 fault (first finding); the model: fault, howto, fault.
    assert gold["n"] == 3 and gold["accuracy"] == pytest.approx(2 / 3)
    assert gold["per_category"]["fault"] == {
        "support": 3, "predicted": 2, "true_positives": 2, "precision": 1.0, "recall": pytest.approx(2 / 3),
        "f1": pytest.approx(0.8),
    }  # fmt: skip
    assert gold["confusion"]["categories"] == ["fault", "howto"]
    assert gold["confusion"]["counts"] == [[2, 1], [0, 0]]
    assert (
        "pairs" in json.dumps(agreement["raters"]["gpt"]["type"]["with_people"])
        or "error" not in agreement["raters"]["gpt"]["type"]["with_people"]
    )
    alt = agreement["raters"]["gpt"]["type"]["alt_test"]  # two people, a few items: no annotator counts
    assert alt["rater"] == "gpt" and alt["annotators"] == [] and alt["advantage_probability"] is None


def test_import_study_restores_the_models_and_a_new_package_holds_the_same(
    with_model: Study, tmp_path: Path
) -> None:
    first = tmp_path / "first.zip"
    build_package(with_model, first)
    imported = import_study("copy", first)
    assert imported.model_answers == 4 and "4 model answers" in imported.summary()
    copy = Study.objects.get(slug="copy")
    rater = ModelRater.objects.get(study=copy)
    assert (rater.name, rater.base_url, rater.model, rater.temperature) == (
        "gpt",
        "http://127.0.0.1:9/v1",
        "gpt-test",
        0.2,
    )
    assert ModelLabel.objects.filter(answer__rater=rater).count() == 8
    again = tmp_path / "again.zip"
    build_package(copy, again)
    before, after = members(first), members(again)
    for name in ("models/raters.json", "models/answers.jsonl", "models/agreement.json"):
        assert before[name] == after[name], name


def test_a_bad_answer_in_the_package_is_named_and_nothing_is_written(
    with_model: Study, tmp_path: Path
) -> None:
    path = tmp_path / "p.zip"
    build_package(with_model, path)
    lines = members(path)["models/answers.jsonl"].decode().splitlines()
    bad = json.loads(lines[1])
    bad["labels"] = [[1, "type", "feature"]]
    bad["round"] = 9
    lines[1] = json.dumps(bad)
    broken = repack(path, tmp_path / "bad.zip", {"models/answers.jsonl": ("\n".join(lines) + "\n").encode()})
    before = counts()
    with pytest.raises(PackageError) as error:
        import_study("copy", broken)
    text = str(error.value)
    assert (
        "models/answers.jsonl line 2.labels[0]: dimension 'type' has no category with the key 'feature'"
        in text
    )
    assert "models/answers.jsonl line 2.round: not a round of sampling.json: 9" in text
    assert counts() == before and not ModelRater.objects.filter(study__slug="copy").exists()


def test_a_study_without_model_raters_has_no_models_folder(labelled: Study, tmp_path: Path) -> None:
    path = tmp_path / "p.zip"
    build_package(labelled, path)
    with zipfile.ZipFile(path) as archive:
        assert not [n for n in archive.namelist() if n.startswith("models/")]
