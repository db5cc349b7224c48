"""Fixtures of the codebook tests: a small two-dimension codebook loaded through the service, and helpers
that put annotator labels and gold labels on categories."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from apps.accounts.models import Study, User
from apps.adjudication.models import Decision, DecisionFinding, DecisionValue, Provenance
from apps.annotation.models import Annotation, Assignment, Finding, LabelValue, Round
from apps.corpus.models import Item
from apps.taxonomy.codebook_spec import codebook_from_data
from apps.taxonomy.loading import load_codebook
from apps.taxonomy.models import Category, Codebook, Dimension
from tests.factories import ItemFactory

CODEBOOK: dict[str, Any] = {
    "name": "Distributed training faults",
    "dimensions": [
        {
            "key": "issue-type",
            "name": "Issue type",
            "multiple": False,
            "categories": [
                {"key": "fault", "name": "Fault", "definition": "Something does not work as intended."},
                {"key": "howto", "name": "How-to", "definition": "A question about how to do something."},
            ],
        },
        {
            "key": "symptom",
            "name": "Symptom",
            "multiple": True,
            "applies_when": {"issue-type": "fault"},
            "categories": [
                {
                    "key": "training",
                    "name": "Training & Evaluation",
                    "definition": "Faults while training or evaluating a model.",
                    "include": "The job started.",
                    "exclude": "Installation problems.",
                    "examples": ["https://github.com/horovod/horovod/issues/100"],
                    "children": [
                        {
                            "key": "program-failure",
                            "name": "Program Failure",
                            "children": [
                                {"key": "hang", "name": "Hang", "definition": "The job stops progressing."},
                                {"key": "crash", "name": "Crash"},
                            ],
                        },
                        {"key": "slow", "name": "Slow"},
                    ],
                },
                {"key": "setup", "name": "Setup", "children": [{"key": "install", "name": "Install"}]},
            ],
        },
    ],
}


def codebook_data() -> dict[str, Any]:
    """A fresh deep copy of the fixture codebook, to edit in a test."""
    return copy.deepcopy(CODEBOOK)


@pytest.fixture
def codebook(study: Study, lead: User) -> Codebook:
    load_codebook(study, codebook_from_data(CODEBOOK), actor=lead)
    return Codebook.objects.get(study=study)


def category(study: Study, key: str, dimension: str = "symptom") -> Category:
    return Category.objects.select_related("dimension").get(
        dimension__codebook__study=study, dimension__key=dimension, key=key
    )


def dimension(study: Study, key: str) -> Dimension:
    return Dimension.objects.get(codebook__study=study, key=key)


def put_label(
    study: Study, annotator: User, target: Category, *, item: Item | None = None, finding: int = 1
) -> LabelValue:
    """An annotator's label on `target` for `item` (a new item when None), round 1."""
    item = item or ItemFactory(study=study)
    round_, _ = Round.objects.get_or_create(study=study, number=1)
    assignment, _ = Assignment.objects.get_or_create(
        study=study, round=round_, item=item, annotator=annotator
    )
    annotation, _ = Annotation.objects.get_or_create(assignment=assignment)
    row, _ = Finding.objects.get_or_create(annotation=annotation, number=finding)
    return LabelValue.objects.create(finding=row, dimension=target.dimension, category=target)


def put_gold(study: Study, target: Category, *, item: Item | None = None, finding: int = 1) -> DecisionValue:
    """A current adjudicated decision with `target` as gold label for `item`."""
    item = item or ItemFactory(study=study)
    decision = Decision.objects.filter(item=item, is_current=True).first() or Decision.objects.create(
        study=study, item=item, provenance=Provenance.ADJUDICATED
    )
    row, _ = DecisionFinding.objects.get_or_create(decision=decision, number=finding)
    return DecisionValue.objects.create(finding=row, dimension=target.dimension, category=target)
