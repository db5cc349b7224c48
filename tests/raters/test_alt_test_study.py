"""Done-when of issue #21 point 4: ``import_labels`` (people), ``import_model_labels`` (a model) and
``agreement --alt-test`` reproduce the reference implementation's figures on the published MT-Bench
data of the alternative-annotator paper (tests/raters/data/alttest/SOURCE.md)."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from apps.accounts.models import Role, Study
from apps.corpus.models import Item
from tests.agreement.conftest import build_codebook
from tests.factories import MembershipFactory, UserFactory
from tests.raters.conftest import write_csv

DATA = Path(__file__).resolve().parent / "data" / "alttest"
REFERENCE = json.loads((DATA / "reference_results.json").read_text())


@pytest.fixture
def mtbench(study: Study, tmp_path: Path) -> dict[str, str]:
    """The study with MT-Bench's three people as annotators of round 1; returns instance → item URL."""
    humans = json.loads((DATA / "mtbench" / "human_annotations.json").read_text())
    labels = sorted({str(v) for answers in humans.values() for v in answers.values()})
    build_codebook(study, {"preference": (False, {label: {} for label in labels})})
    instances = sorted({i for answers in humans.values() for i in answers})
    urls = {i: f"https://example.org/mtbench/{k}" for k, i in enumerate(instances)}
    Item.objects.bulk_create([Item(study=study, url=url, external_id=url) for url in urls.values()])
    for name in humans:
        MembershipFactory(study=study, role=Role.ANNOTATOR, user=UserFactory(username=name))
    rows = [
        (urls[i], name, "preference", label)
        for name, answers in humans.items()
        for i, label in answers.items()
    ]
    path = write_csv(tmp_path / "people.csv", "item,annotator,dimension,label", rows)
    call_command(
        "import_labels",
        "ddp",
        str(path),
        "--round",
        "1",
        "--allow-extra",
        stdout=StringIO(),
        stderr=StringIO(),
    )
    return urls


@pytest.mark.parametrize("model", ["gpt-4o", "gemini_pro", "llama-31"])
def test_agreement_alt_test_reproduces_the_reference_on_mtbench(
    mtbench: dict[str, str], tmp_path: Path, model: str
) -> None:
    labels = json.loads((DATA / "mtbench" / "llm_annotations.json").read_text())[model]
    rows = [(mtbench[i], "preference", label) for i, label in labels.items() if i in mtbench]
    path = write_csv(tmp_path / "model.csv", "item,dimension,label", rows)
    call_command(
        "import_model_labels", "ddp", str(path), "--rater", model, stdout=StringIO(), stderr=StringIO()
    )
    out = StringIO()
    call_command(
        "agreement", "ddp", "--dimension", "preference", "--round", "1", "--alt-test", model,
        "--epsilon", "0.2", "--q", "0.05", "--format", "json", stdout=out, stderr=StringIO(),
    )  # fmt: skip
    test = json.loads(out.getvalue())["alt_test"]
    expected = REFERENCE[f"mtbench/{model}"]
    assert test["rater"] == model and test["passed"] is (expected["winning_rate"] >= 0.5)
    assert abs(test["winning_rate"] - expected["winning_rate"]) <= 1e-9
    assert abs(test["advantage_probability"] - expected["advantage_probability"]) <= 1e-9
    humans = list(json.loads((DATA / "mtbench" / "human_annotations.json").read_text()))
    by_name = {row["annotator"]: row for row in test["annotators"]}
    assert sorted(by_name) == sorted(humans)
    for name, p in zip(humans, expected["p_values"], strict=True):
        assert abs(by_name[name]["p_value"] - p) <= 1e-9
        assert by_name[name]["n"] >= 30
