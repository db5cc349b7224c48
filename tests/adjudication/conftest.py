"""A small codebook, a round and a way to submit labels, for the adjudication tests.

Codebook (v1): `type` (single: fault, how-to); `symptom` (single, only for faults: crash > segfault, hang,
wrong output); `fix` (multiple, only for faults: config, code, upgrade).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pytest
from django.db import transaction
from django.utils import timezone

from apps.accounts.models import Role, Study, User
from apps.annotation.models import Annotation, Assignment, AssignmentStatus, Finding, LabelValue, Round
from apps.annotation.signals import annotation_submitted
from apps.corpus.models import Item
from apps.taxonomy.index import CodebookIndex
from apps.taxonomy.models import Category, Codebook, Dimension
from tests.factories import ItemFactory, MembershipFactory, UserFactory

Labels = Sequence[Mapping[str, Sequence[str] | str]]


@pytest.fixture
def codebook(study: Study) -> Codebook:
    book = Codebook.objects.create(study=study, name="DDP faults", version=1)
    kind = Dimension.objects.create(codebook=book, key="type", name="Issue type", position=0)
    fault = Category.objects.create(
        dimension=kind, key="fault", name="Fault", definition="Something is broken.", position=0
    )
    Category.objects.create(
        dimension=kind, key="howto", name="How-to", definition="A question about usage.", position=1
    )
    symptom = Dimension.objects.create(
        codebook=book, key="symptom", name="Symptom", position=1, applies_when_category=fault
    )
    crash = Category.objects.create(
        dimension=symptom, key="crash", name="Crash", definition="The program stops.", position=0
    )
    Category.objects.create(
        dimension=symptom, key="segfault", name="Segfault", parent=crash, position=0,
        definition="A segmentation fault.", include="SIGSEGV in the log.",
    )  # fmt: skip
    Category.objects.create(
        dimension=symptom, key="hang", name="Hang", definition="Nothing happens, forever.", position=1,
        exclude="Slow but finishing runs.",
    )  # fmt: skip
    Category.objects.create(dimension=symptom, key="wrong-output", name="Wrong output", position=2)
    fix = Dimension.objects.create(
        codebook=book, key="fix", name="Fix", multiple=True, position=2, applies_when_category=fault
    )
    for position, key in enumerate(["config", "code", "upgrade"]):
        Category.objects.create(dimension=fix, key=key, name=key.title(), position=position)
    return book


@pytest.fixture
def round1(study: Study, codebook: Codebook) -> Round:
    return Round.objects.create(study=study, number=1, name="Round 1")


@pytest.fixture
def make_item(study: Study, round1: Round) -> Callable[..., Item]:
    """An item of round 1 assigned to the given annotators."""

    def make(*annotators: User, round_: Round | None = None, **fields: Any) -> Item:
        item = ItemFactory(study=study, **fields)
        for position, user in enumerate(annotators):
            Assignment.objects.create(
                study=study, round=round_ or round1, item=item, annotator=user, position=position
            )
        return item

    return make


def submit(
    item: Item, user: User, findings: Labels, memo: str = "", *, item_locked: bool = True
) -> Annotation:
    """Store `user`'s labels on `item` as the labelling service does and send `annotation_submitted`
    inside the same transaction (the contract adjudication relies on).

    As the service's first submissions do on PostgreSQL, the item's row is locked first and the signal says
    so, with the codebook index (adjudication's `consolidate_submission`); ``item_locked=False`` sends the
    signal as an edit or a label import does (`consolidate_item`). SQLite always takes `consolidate_item`."""
    with transaction.atomic():
        assignment = (
            Assignment.objects.select_for_update().filter(item=item, annotator=user).latest("round__number")
        )
        if item_locked:
            Item.objects.select_for_update().get(pk=item.pk)
        now = timezone.now()
        annotation, _ = Annotation.objects.get_or_create(assignment=assignment)
        annotation.findings.all().delete()
        annotation.memo = memo
        annotation.submitted_at = annotation.submitted_at or now
        annotation.updated_at = now
        annotation.save()
        for number, values in enumerate(findings, start=1):
            finding = Finding.objects.create(annotation=annotation, number=number)
            for key, chosen in values.items():
                dimension = Dimension.objects.get(codebook__study=item.study, key=key)
                if chosen == "pending":
                    LabelValue.objects.create(finding=finding, dimension=dimension, pending=True)
                    continue
                for category_key in chosen:
                    category = Category.objects.get(dimension=dimension, key=category_key)
                    LabelValue.objects.create(finding=finding, dimension=dimension, category=category)
        assignment.status = AssignmentStatus.SUBMITTED
        assignment.submitted_at = now
        assignment.save(update_fields=["status", "submitted_at"])
        if item_locked:
            index = CodebookIndex.for_study(item.study)
            annotation_submitted.send(
                sender=Annotation, annotation=annotation, item_id=item.pk, index=index, item_locked=True
            )
        else:
            annotation_submitted.send(sender=Annotation, annotation=annotation, item_id=item.pk)
    return annotation


@pytest.fixture
def annotator_c(study: Study) -> User:
    return MembershipFactory(study=study, role=Role.ANNOTATOR, user=UserFactory(username="carol")).user


@pytest.fixture
def second_lead(study: Study) -> User:
    return MembershipFactory(study=study, role=Role.LEAD, user=UserFactory(username="leo")).user


CRASH: Labels = [{"type": ["fault"], "symptom": ["crash"], "fix": ["config", "code"]}]
HANG: Labels = [{"type": ["fault"], "symptom": ["hang"], "fix": ["config", "code"]}]
HOWTO: Labels = [{"type": ["howto"]}]
