"""The Models comparison screen (#21 point 4): each model against the people and the decisions, for
leads only; fed here by the local baseline's run on a decided round."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from apps.accounts.models import Study, User
from apps.agreement.models_report import comparison_rows, models_agreement
from apps.corpus.models import Item
from apps.raters.models import RaterKind
from apps.raters.runs import create_model_run, execute_model_run
from apps.raters.services import RaterSettings, add_model_rater
from apps.taxonomy.index import CodebookIndex
from tests.conftest import login
from tests.raters.test_baseline_runs import decided  # noqa: F401  (ten decided items, round 1)

pytestmark = pytest.mark.django_db


@pytest.fixture
def rated(study: Study, decided: list[Item]) -> Study:  # noqa: F811
    rater = add_model_rater(study, "tfidf", RaterSettings(kind=RaterKind.BASELINE), actor=None)
    execute_model_run(create_model_run(study, rater, round_number=1, actor=None))
    return study


def test_each_model_is_compared_with_the_people_and_the_decisions(rated: Study) -> None:
    index = CodebookIndex.for_study(rated)
    report = models_agreement(rated, index)
    assert report["people"] == ["alice"]
    rows = {row.dimension: row for row in comparison_rows(report, {"kind": "Kind"})}
    kind = rows["kind"]
    assert (kind.rater, kind.dimension_name, kind.n_items, kind.gold_n) == ("tfidf", "Kind", 10, 10)
    # alice's labels are the decisions, so the model's kappa with her is its kappa with the decisions
    gold = report["raters"]["tfidf"]["kind"]["gold"]
    assert kind.gold_accuracy == gold["accuracy"] and kind.gold_accuracy >= 0.8
    pair = report["raters"]["tfidf"]["kind"]["with_people"]["pairwise"][0]
    assert {pair["a"], pair["b"]} == {"alice", "tfidf"} and kind.kappa_with_people == pair["cohen_kappa"]
    assert kind.kappa_people is None and kind.passed is None  # one person: nothing to compare or test
    assert rows["symptom"].dimension_name == "symptom"  # a key without a name shows the key


def test_leads_see_the_comparison_and_annotators_never_do(
    client: Client, rated: Study, lead: User, annotator_a: User, outsider: Any
) -> None:
    url = reverse("agreement:models", args=[rated.slug])
    page = login(client, lead).get(url)
    assert page.status_code == 200
    text = page.content.decode()
    assert 'data-rater="tfidf" data-dimension="kind"' in text and "Replaces one annotator?" in text
    assert (
        reverse("agreement:models", args=[rated.slug])
        in login(client, lead).get(reverse("agreement:dashboard", args=[rated.slug])).content.decode()
    )
    assert login(client, annotator_a).get(url).status_code == 403
    assert login(client, outsider).get(url).status_code == 404


def test_a_rater_whose_table_cannot_be_built_is_one_row_with_the_reason() -> None:
    report = {"people": [], "raters": {"gpt": {"error": "no rater named gpt"}}}
    (row,) = comparison_rows(report, {})
    assert (row.rater, row.dimension, row.error, row.gold_n, row.passed) == (
        "gpt",
        "",
        "no rater named gpt",
        0,
        None,
    )


def _import_other(study: Study, items: list[Item], tmp_path: Any) -> None:
    """A second model, imported with two samples: sample 0 says bug everywhere, sample 1 all but once."""
    from io import StringIO

    from django.core.management import call_command

    from tests.raters.conftest import write_csv

    rows: list[tuple[object, ...]] = []
    for n, item in enumerate(items):
        rows.append((item.url, "kind", "bug", 0))
        rows.append((item.url, "kind", "question" if n == 0 else "bug", 1))
    path = write_csv(tmp_path / "other.csv", "item,dimension,label,sample", rows)
    call_command("import_model_labels", study.slug, str(path), "--rater", "other", stdout=StringIO())


def test_models_are_compared_with_each_other_and_each_with_its_own_samples(
    rated: Study,
    decided: list[Item],  # noqa: F811
    tmp_path: Any,
) -> None:
    from apps.agreement.models_report import model_pair_rows
    from apps.raters.models import ModelRater

    _import_other(rated, decided, tmp_path)
    ModelRater.objects.filter(study=rated, name="other").update(samples=2)
    report = models_agreement(rated, CodebookIndex.for_study(rated))
    kind = {(p.a, p.b): p for p in model_pair_rows(report, {"kind": "Kind"}) if p.dimension == "kind"}
    assert set(kind) == {("other", "tfidf"), ("other", "other#1")}
    assert not kind[("other", "tfidf")].self_consistency and kind[("other", "other#1")].self_consistency
    assert kind[("other", "other#1")].n == 10 and kind[("other", "other#1")].percent_agreement == 0.9
    with_people = report["raters"]["tfidf"]["kind"]["with_people"]
    assert report["bootstrap"] == 1000 and len(with_people["krippendorff_alpha_ci"]) == 2


def test_the_screen_narrows_to_a_round_and_a_level_and_refuses_an_unknown_round(
    client: Client, rated: Study, lead: User
) -> None:
    url = reverse("agreement:models", args=[rated.slug])
    page = login(client, lead).get(url, {"round": 1, "level": 1})
    text = page.content.decode()
    assert page.status_code == 200 and "round 1's items at level 1 of the tree" in text
    assert '<option value="1" selected>Round 1</option>' in text and "all (95 % CI)" in text
    assert "Models with each other" in text
    report = models_agreement(rated, CodebookIndex.for_study(rated), round_number=1, level=1)
    assert report["round"] == 1 and report["raters"]["tfidf"]["kind"]["with_people"]["round"] == 1
    assert login(client, lead).get(url, {"round": 7}).status_code == 404
