"""Studies with labels for the agreement tests: a small hand-made codebook, and the TOSEM 2023 rounds."""

from __future__ import annotations

import csv
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone

from apps.accounts.models import Role, Study, User
from apps.annotation.models import (
    Annotation,
    Assignment,
    AssignmentStatus,
    Finding,
    LabelValue,
    Round,
    RoundItem,
)
from apps.annotation.signals import annotation_submitted
from apps.corpus.models import Item
from apps.taxonomy.models import Category, Codebook, Dimension
from tests.api.conftest import world  # noqa: F401  (the API tests' world, for the job tests)
from tests.factories import ItemFactory, MembershipFactory, UserFactory

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "tosem23"

# key -> (multiple, tree); a tree is {category key: children tree}.
SMALL_CODEBOOK: dict[str, tuple[bool, dict[str, Any]]] = {
    "kind": (False, {"bug": {}, "question": {}}),
    "symptom": (
        False,
        {"crash": {"segfault": {}, "oom": {}}, "hang": {"deadlock": {}, "livelock": {}}, "slow": {}},
    ),
    "fix": (True, {"config": {}, "code": {}, "docs": {}}),
}

Findings = Sequence[Mapping[str, Sequence[str] | str]]
Annotate = Callable[..., Annotation]


def build_codebook(
    study: Study, spec: Mapping[str, tuple[bool, Mapping[str, Any]]], version: int = 3
) -> Codebook:
    book = Codebook.objects.create(study=study, name="test codebook", version=version)
    for position, (key, (multiple, tree)) in enumerate(spec.items()):
        dimension = Dimension.objects.create(
            codebook=book, key=key, name=key.title(), multiple=multiple, position=position
        )

        def add(
            children: Mapping[str, Any], parent: Category | None, dimension: Dimension = dimension
        ) -> None:
            for order, (child, grandchildren) in enumerate(children.items()):
                category = Category.objects.create(
                    dimension=dimension, parent=parent, key=child, name=child.title(), position=order
                )
                add(grandchildren, category)

        add(tree, None)
    return book


@pytest.fixture
def codebook(study: Study) -> Codebook:
    return build_codebook(study, SMALL_CODEBOOK)


@pytest.fixture
def carol(study: Study) -> User:
    return MembershipFactory(study=study, role=Role.ANNOTATOR, user=UserFactory(username="carol")).user


@pytest.fixture
def annotate(study: Study) -> Annotate:
    """annotate(round_number, item, user, [{dimension: [category keys] | "pending"}, ...], submitted=True)."""
    rounds: dict[int, Round] = {}

    def make(
        round_number: int, item: Item, user: User, findings: Findings, *, submitted: bool = True
    ) -> Annotation:
        round_ = rounds.get(round_number) or Round.objects.get_or_create(study=study, number=round_number)[0]
        rounds[round_number] = round_
        RoundItem.objects.get_or_create(round=round_, item=item)
        assignment = Assignment.objects.create(
            study=study,
            round=round_,
            item=item,
            annotator=user,
            status=AssignmentStatus.SUBMITTED if submitted else AssignmentStatus.OPEN,
        )
        now = timezone.now()
        annotation = Annotation.objects.create(
            assignment=assignment, submitted_at=now if submitted else None, updated_at=now
        )
        for number, values in enumerate(findings, start=1):
            finding = Finding.objects.create(annotation=annotation, number=number)
            for key, chosen in values.items():
                dimension = Dimension.objects.get(codebook__study=study, key=key)
                if chosen == "pending":
                    LabelValue.objects.create(finding=finding, dimension=dimension, pending=True)
                    continue
                for category_key in chosen:
                    category = Category.objects.get(dimension=dimension, key=category_key)
                    LabelValue.objects.create(finding=finding, dimension=dimension, category=category)
        if submitted:  # as the submit and import services do
            annotation_submitted.send(sender=Annotation, annotation=annotation, item_id=item.pk)
        return annotation

    return make


@pytest.fixture
def items(study: Study) -> list[Item]:
    return [ItemFactory(study=study) for _ in range(6)]


# ------------------------------------------------------------------------------------ TOSEM 2023
def tosem_label_rows(round_number: int) -> list[dict[str, str]]:
    with open(FIXTURES / f"labels_round{round_number}.csv", encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


@pytest.fixture
def tosem_study(db: None) -> Study:
    """The TOSEM 2023 rounds 1 and 2 imported into a study through the codebook and label services."""
    from apps.annotation.label_file import parse_labels_csv
    from apps.annotation.services.imports import import_annotations
    from apps.taxonomy.loading import load_codebook_file
    from tests.factories import StudyFactory

    study = StudyFactory(slug="tosem23", name="TOSEM 2023")
    lead = MembershipFactory(study=study, role=Role.LEAD, user=UserFactory(username="tosem-lead")).user
    for name in ("annotator1", "annotator2"):
        MembershipFactory(study=study, role=Role.ANNOTATOR, user=UserFactory(username=name))
    load_codebook_file(study, FIXTURES / "codebook.json", actor=lead)
    urls = sorted({row["item"] for n in (1, 2) for row in tosem_label_rows(n)})
    Item.objects.bulk_create([Item(study=study, url=url, external_id=url) for url in urls])
    for n in (1, 2):
        text = (FIXTURES / f"labels_round{n}.csv").read_text(encoding="utf-8")
        import_annotations(study, parse_labels_csv(text, decisions=False), actor=lead, complete=False)
    return study
