"""The done-when of issue #24's report on real data: on the demo study (both annotators' real TOSEM 2023
labels and decisions, the lead deciding some disagreements for annotator1), each annotator's agreement
with the final decisions equals an independent computation from the tables with scikit-learn."""

from __future__ import annotations

import io
import json
from collections import defaultdict

import pytest
from django.core.management import call_command
from sklearn.metrics import cohen_kappa_score

from apps.accounts.models import Study, User
from apps.adjudication.models import DecisionValue, Review, ReviewState
from apps.adjudication.services import AdjudicationError, decide
from apps.annotation.models import LabelValue, Round, RoundPhase
from apps.taxonomy.models import Category

pytestmark = pytest.mark.django_db


def _top(category_id: int, parents: dict[int, int | None], keys: dict[int, str]) -> str:
    while parents[category_id] is not None:
        category_id = parents[category_id]  # type: ignore[assignment]
    return keys[category_id]


def _decide_for_annotator1(study: Study) -> int:
    """The lead takes annotator1's first finding on 80 open disagreements: annotator2 now differs from some
    decisions. Returns how many were decided (a finding the decision rules refuse is left open)."""
    lead = User.objects.get(username="lead")
    decided = 0
    for review in Review.objects.filter(study=study, state=ReviewState.DISAGREEMENT).order_by("item_id")[:80]:
        gold: dict[str, list[str]] = defaultdict(list)
        for dimension, key in LabelValue.objects.filter(
            finding__annotation__assignment__item_id=review.item_id,
            finding__annotation__assignment__annotator__username="annotator1",
            finding__number=1,
            pending=False,
        ).values_list("dimension__key", "category__key"):
            gold[dimension].append(key)
        try:
            decide(
                review.item,
                [dict(gold)],
                actor=lead,
                rationale="annotator1's reading",
                expected_decision_id=None,
            )
        except AdjudicationError:
            continue
        decided += 1
    return decided


def test_each_annotators_agreement_with_the_decisions_equals_an_independent_computation() -> None:
    call_command("load_demo")
    study = Study.objects.get(slug="tosem23")
    assert not Round.objects.filter(study=study).exclude(phase=RoundPhase.BLIND).exists()  # labels are blind
    assert _decide_for_annotator1(study) >= 15

    out = io.StringIO()
    call_command("annotator_report", "tosem23", "--format", "json", stdout=out)
    report = {
        (r["annotator"], r["dimension"]): r
        for r in json.loads(out.getvalue())["annotators"]
        if r["round"] is None
    }

    categories = list(
        Category.objects.filter(dimension__codebook__study=study).values_list("id", "parent_id", "key")
    )
    parents = {pk: parent for pk, parent, _ in categories}
    keys = {pk: key for pk, _, key in categories}
    mine: dict[tuple[str, int, int, str], set[str]] = defaultdict(set)
    for annotator, number, item, dimension, category in LabelValue.objects.filter(
        finding__annotation__assignment__study=study, finding__annotation__submitted_at__isnull=False
    ).values_list(
        "finding__annotation__assignment__annotator__username",
        "finding__annotation__assignment__round__number",
        "finding__annotation__assignment__item_id",
        "dimension__key",
        "category_id",
    ):
        mine[annotator, number, item, dimension].add(
            "pending" if category is None else _top(category, parents, keys)
        )
    final: dict[tuple[int, str], set[str]] = defaultdict(set)
    for item, dimension, category in DecisionValue.objects.filter(
        finding__decision__study=study, finding__decision__is_current=True
    ).values_list("finding__decision__item_id", "dimension__key", "category_id"):
        final[item, dimension].add(_top(category, parents, keys))

    compared = 0
    for annotator in ("annotator1", "annotator2"):
        for dimension in {d for (_, _, _, d) in mine}:
            pairs = [
                ("+".join(sorted(value)), "+".join(sorted(final[item, dim])))
                for (who, _, item, dim), value in mine.items()
                if who == annotator and dim == dimension and (item, dim) in final
            ]
            row = report[annotator, dimension]
            assert row["n_final"] == len(pairs)
            if not pairs:
                continue
            assert row["final_accuracy"] == pytest.approx(
                sum(a == b for a, b in pairs) / len(pairs), abs=1e-12
            )
            if len({v for pair in pairs for v in pair}) > 1:
                expected = cohen_kappa_score([a for a, _ in pairs], [b for _, b in pairs])
                assert row["final_kappa"] == pytest.approx(expected, abs=1e-9)
            compared += 1
    assert compared >= 4
    # annotator1's labels made the lead's decisions, annotator2's did not: their accuracies differ.
    assert (
        report["annotator2", "issue_type"]["final_accuracy"]
        < report["annotator1", "issue_type"]["final_accuracy"]
    )
