"""A small codebook shaped like the TOSEM 2023 one, items, and rounds for the annotation tests."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from apps.accounts.models import Role, Study, User
from apps.annotation.models import Assignment, Round, RoundItem
from apps.corpus.models import Item
from apps.taxonomy.models import Category, CategoryStatus, Codebook, Dimension
from tests.factories import ItemFactory, MembershipFactory, UserFactory


@dataclass
class Book:
    codebook: Codebook
    dimensions: dict[str, Dimension]
    categories: dict[str, Category]


def _category(
    dimension: Dimension, key: str, name: str, parent: Category | None = None, **extra: object
) -> Category:
    position = Category.objects.filter(dimension=dimension).count()
    return Category.objects.create(
        dimension=dimension, key=key, name=name, parent=parent, position=position, **extra
    )


@pytest.fixture
def book(study: Study) -> Book:
    """issue_type (fault | how-to question); symptom (a tree, only for faults); fix_pattern (several,
    only for faults); howto_topic (only for how-to questions). Symptom keeps a retired category."""
    codebook = Codebook.objects.create(study=study, name="DDP faults", version=3)
    issue = Dimension.objects.create(codebook=codebook, key="issue_type", name="Issue type", position=0)
    cats: dict[str, Category] = {}
    cats["fault"] = _category(issue, "fault", "Fault", definition="Something is broken.")
    cats["howto"] = _category(issue, "howto", "How-to question", definition="Asks how to do something.")
    symptom = Dimension.objects.create(
        codebook=codebook, key="symptom", name="Symptom", position=1, applies_when_category=cats["fault"]
    )
    cats["training"] = _category(symptom, "training", "Training & Evaluation")
    cats["hang"] = _category(
        symptom, "hang", "Hang", cats["training"], definition="The job stops making progress."
    )
    cats["crash"] = _category(symptom, "crash", "Crash", cats["training"], definition="The process dies.")
    cats["deployment"] = _category(symptom, "deployment", "Deployment")
    cats["deploy-crash"] = _category(symptom, "deploy-crash", "Crash", cats["deployment"])
    cats["old-symptom"] = _category(symptom, "old-symptom", "Old symptom", status=CategoryStatus.RETIRED)
    fix = Dimension.objects.create(
        codebook=codebook,
        key="fix_pattern",
        name="Fix pattern",
        position=2,
        multiple=True,
        applies_when_category=cats["fault"],
    )
    cats["fix-config"] = _category(fix, "fix-config", "Fix configuration")
    cats["fix-version"] = _category(fix, "fix-version", "Fix framework version")
    cats["fix-logic"] = _category(fix, "fix-logic", "Fix behavior logic")
    howto = Dimension.objects.create(
        codebook=codebook,
        key="howto_topic",
        name="How-to topic",
        position=3,
        applies_when_category=cats["howto"],
    )
    cats["parallel"] = _category(howto, "parallel", "Parallelization")
    cats["device"] = _category(howto, "device", "Device usage")
    dims = {d.key: d for d in (issue, symptom, fix, howto)}
    return Book(codebook, dims, cats)


@pytest.fixture
def items(study: Study) -> list[Item]:
    sources = ["github"] * 6 + ["stackoverflow"] * 6
    return [
        ItemFactory(
            study=study,
            source=source,
            url=f"https://github.com/ex/repo/issues/{i + 1}",
            title=f"Issue {i + 1}",
            metadata={"framework": "horovod" if i % 3 == 0 else "pytorch"},
            tags=["ddp"] if i % 2 else [],
        )
        for i, source in enumerate(sources)
    ]


@pytest.fixture
def carol(study: Study) -> User:
    return MembershipFactory(study=study, role=Role.ANNOTATOR, user=UserFactory(username="carol")).user


def make_round(
    study: Study, number: int, items: list[Item], assign: dict[User, list[Item]] | None = None
) -> Round:
    """A round holding `items`, with the given assignments (all open)."""
    round_ = Round.objects.create(study=study, number=number, method="manual")
    RoundItem.objects.bulk_create(
        RoundItem(round=round_, item=item, position=i) for i, item in enumerate(items)
    )
    for user, its in (assign or {}).items():
        for position, item in enumerate(its):
            Assignment.objects.create(study=study, round=round_, item=item, annotator=user, position=position)
    return round_


FAULT_HANG = {
    "findings": [{"values": {"issue_type": ["fault"], "symptom": ["hang"], "fix_pattern": ["fix-config"]}}],
    "memo": "",
}
HOWTO = {
    "findings": [{"values": {"issue_type": ["howto"], "howto_topic": ["parallel"]}}],
    "memo": "asks about DDP",
}
