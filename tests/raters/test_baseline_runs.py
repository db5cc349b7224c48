"""A run of the local baseline rater (apps/raters/baseline_runs.py): fitted on the study's current
decisions, it answers every item of a round like a model, its labels checked the same way; a rerun on
the same decisions reuses its answers, a new decision makes new ones; with too few decisions the run
fails saying what it needs; the Models screen adds and runs it."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from apps.accounts.models import Study, User
from apps.adjudication.services import decide
from apps.core.models import JobStatus
from apps.corpus.models import Item
from apps.raters.models import AnswerStatus, ModelAnswer, ModelLabel, ModelRater, RaterKind
from apps.raters.runs import create_model_run, execute_model_run
from apps.raters.services import RaterError, RaterSettings, add_model_rater
from tests.agreement.conftest import Annotate
from tests.conftest import login
from tests.factories import ItemFactory

pytestmark = pytest.mark.django_db

CRASH = {"kind": ["bug"], "symptom": ["segfault"], "fix": ["code"]}
QUESTION = {"kind": ["question"], "symptom": ["slow"], "fix": ["docs"]}


@pytest.fixture
def decided(study: Study, codebook: Any, annotate: Annotate, annotator_a: User, lead: User) -> list[Item]:
    """Round 1: ten items labelled by alice and decided by the lead, five crashes and five questions,
    each told apart by its words."""
    chosen = []
    for i in range(10):
        crash = i % 2 == 0
        item = ItemFactory(
            study=study,
            title=f"segmentation fault core dumped in allreduce {i}"
            if crash
            else f"how do I set the learning rate {i}",
            body="the process crashed with SIGSEGV" if crash else "which schedule should I configure?",
        )
        labels = CRASH if crash else QUESTION
        annotate(1, item, annotator_a, [labels])
        decide(item, [labels], actor=lead, expected_decision_id=None)
        chosen.append(item)
    return chosen


def _baseline(study: Study) -> ModelRater:
    return add_model_rater(study, "tfidf", RaterSettings(kind=RaterKind.BASELINE), actor=None)


def test_a_baseline_run_answers_every_item_of_a_round_from_the_decisions_it_did_not_see(
    study: Study, decided: list[Item]
) -> None:
    rater = _baseline(study)
    run = execute_model_run(create_model_run(study, rater, round_number=1, actor=None))
    assert run.status == JobStatus.SUCCEEDED, run.error
    assert (run.asked, run.refused, run.failed) == (10, 0, 0) and run.model_ids == ["tfidf-linearsvc-v1"]
    answers = ModelAnswer.objects.filter(rater=rater)
    assert answers.count() == 10 and {a.status for a in answers} == {AnswerStatus.VALID}
    assert all(a.round_id == run.round_id and len(a.prompt_hash) == 64 for a in answers)
    kinds = {
        label.answer.item_id: label.category.key
        for label in ModelLabel.objects.filter(answer__rater=rater, dimension__key="kind").select_related(
            "answer", "category"
        )
    }
    right = sum(kinds[item.pk] == ("bug" if n % 2 == 0 else "question") for n, item in enumerate(decided))
    assert right >= 8, kinds  # the words tell the two apart, from the other folds' items

    again = execute_model_run(create_model_run(study, rater, round_number=1, actor=None))
    assert (again.asked, again.reused) == (0, 10) and ModelAnswer.objects.filter(rater=rater).count() == 10


def test_a_new_decision_makes_new_answers(
    study: Study, decided: list[Item], lead: User, annotate: Annotate, annotator_a: User
) -> None:
    rater = _baseline(study)
    execute_model_run(create_model_run(study, rater, round_number=1, actor=None))
    item = ItemFactory(study=study, title="segmentation fault again", body="SIGSEGV")
    annotate(2, item, annotator_a, [CRASH])
    decide(item, [CRASH], actor=lead, expected_decision_id=None)

    run = execute_model_run(create_model_run(study, rater, round_number=1, actor=None))
    assert (run.asked, run.reused) == (10, 0)
    assert ModelAnswer.objects.filter(rater=rater).values("prompt_hash").distinct().count() == 2


def test_a_baseline_with_too_few_decisions_fails_saying_what_it_needs(
    study: Study, round_items: list[Item]
) -> None:
    run = execute_model_run(create_model_run(study, _baseline(study), round_number=1, actor=None))
    assert run.status == JobStatus.FAILED and "decide at least two items" in run.error
    assert not ModelAnswer.objects.exists()


def test_a_baseline_takes_no_server_and_one_sample(study: Study) -> None:
    with pytest.raises(RaterError, match="has no base URL") as error:
        add_model_rater(
            study, "b", RaterSettings(kind="baseline", base_url="http://x", samples=3), actor=None
        )
    assert "one answer per item (samples 1), got 3" in str(error.value)


def test_a_lead_adds_and_runs_the_baseline_on_the_models_screen(
    client: Client, study: Study, lead: User, decided: list[Item], django_capture_on_commit_callbacks: Any
) -> None:
    login(client, lead)
    data = {
        "name": "tfidf",
        "kind": "baseline",
        "temperature": "0",
        "samples": "1",
        "concurrency": "1",
        "timeout": "10",
    }
    assert client.post(reverse("raters:rater-add", args=[study.slug]), data).status_code == 302
    rater = ModelRater.objects.get(study=study, kind=RaterKind.BASELINE)
    page = client.get(reverse("raters:models", args=[study.slug])).content.decode()
    assert (
        "cross-fitted on the decided items" in page
        and reverse("raters:run-start", args=[study.slug, rater.pk]) in page
    )

    with django_capture_on_commit_callbacks(execute=True):
        client.post(
            reverse("raters:run-start", args=[study.slug, rater.pk]), {"scope": "round", "round": "1"}
        )

    assert ModelAnswer.objects.filter(rater=rater).count() == 10


def test_a_cancelled_baseline_run_stores_nothing_and_ends_cancelled(
    study: Study, decided: list[Item]
) -> None:
    from apps.raters.runs import cancel_model_run

    rater = _baseline(study)
    run = create_model_run(study, rater, round_number=1, actor=None)
    cancel_model_run(run)  # asked before the worker took it: it ends at once
    run = execute_model_run(run)
    assert run.status == JobStatus.CANCELLED and not ModelAnswer.objects.exists()

    run = create_model_run(study, rater, round_number=1, actor=None)
    calls: list[bool] = []

    def cancelled_after_fitting(_run: object) -> bool:
        calls.append(True)
        return len(calls) > 1  # not yet before the fitting; asked once the models are fitted

    from unittest import mock

    with mock.patch("apps.raters.runs._cancelled", cancelled_after_fitting):
        run = execute_model_run(run)
    assert "cancelled after fitting: nothing stored" in run.message and not ModelAnswer.objects.exists()
    assert run.status == JobStatus.CANCELLED
