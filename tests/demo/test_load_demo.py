"""The demo study is real (TOSEM 2023 data) and `load_demo` is idempotent."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from apps.accounts.models import Membership, Study
from apps.adjudication.models import Decision, Review, ReviewState
from apps.adjudication.status import study_status
from apps.annotation.models import Annotation, LabelValue
from apps.corpus.models import ImportJob, Item
from apps.taxonomy.models import CodebookChange

pytestmark = pytest.mark.django_db


def _snapshot() -> tuple[int, ...]:
    return (
        Item.objects.count(),
        ImportJob.objects.count(),
        CodebookChange.objects.count(),
        Annotation.objects.count(),
        LabelValue.objects.count(),
        Decision.objects.count(),
        Review.objects.count(),
    )


def test_load_demo_builds_the_tosem23_study_from_real_labels() -> None:
    call_command("load_demo")
    study = Study.objects.get(slug="tosem23")
    status = study_status(study)
    assert status["items"] == 216 + 3  # rounds 1-2 posts + three marked examples
    assert status["rounds"] == 3
    assert status["assignments"] == {"open": 6, "submitted": 432}
    assert status["codebook_version"] == 1
    decided = status["decisions"]["unanimous"]
    assert decided + status["disagreements_open"] == 216
    assert status["disagreements_open"] > 0  # round 1's real disagreements wait for the lead
    roles = dict(Membership.objects.filter(study=study).values_list("user__username", "role"))
    assert roles == {"lead": "lead", "annotator1": "annotator", "annotator2": "annotator"}
    real = Item.objects.filter(study=study).exclude(url__startswith="https://example.org/")
    assert not real.exclude(body="").exists(), "no text is ever invented for a real URL"
    examples = Item.objects.filter(study=study, url__startswith="https://example.org/")
    assert all(i.title.startswith("Example —") for i in examples)
    assert (
        Review.objects.filter(study=study, state=ReviewState.DISAGREEMENT).count()
        == status["disagreements_open"]
    )


def test_load_demo_twice_changes_nothing() -> None:
    call_command("load_demo")
    before = _snapshot()
    call_command("load_demo")
    assert _snapshot() == before
