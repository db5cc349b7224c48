"""A web request that dies in the middle of a submission leaves the whole annotation or none of it.

The death is a receiver of `annotation_submitted` that raises: it runs inside the submitting
transaction after the findings and label values are written, the latest point a crash can hit.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from apps.accounts.models import Study, User
from apps.annotation.models import Annotation, Assignment, AssignmentStatus, Finding, LabelValue
from apps.annotation.signals import annotation_submitted
from apps.corpus.models import Item
from tests.annotation.conftest import Book, make_round

pytestmark = pytest.mark.django_db

POSTED = {
    "finding": "1",
    "v-1-issue_type": "fault",
    "v-1-symptom": "hang",
    "v-1-fix_pattern": ["fix-config", "fix-logic"],
    "memo": "hangs after the first epoch",
    "codebook_version": "3",
    "next": "stay",
}


def test_a_request_killed_after_the_findings_are_written_persists_no_labels_and_keeps_the_draft(
    study: Study, book: Book, items: list[Item], annotator_a: User, client: Client
) -> None:
    make_round(study, 1, items[:1], {annotator_a: items[:1]})
    assignment = Assignment.objects.get(annotator=annotator_a)
    url = reverse("annotation:submit", args=[study.slug, assignment.pk])
    client.force_login(annotator_a)
    client.raise_request_exception = False
    written: list[int] = []

    def die(sender: object, **kwargs: Any) -> None:
        written.append(LabelValue.objects.filter(finding__annotation=kwargs["annotation"]).count())
        raise RuntimeError("the worker process was killed")

    annotation_submitted.connect(die)
    try:
        response = client.post(url, POSTED)
    finally:
        annotation_submitted.disconnect(die)

    assert response.status_code == 500
    assert written == [4]  # the labels were in the transaction when it died...
    assert not Finding.objects.exists() and not LabelValue.objects.exists()  # ...and none survived
    assignment.refresh_from_db()
    assert (assignment.status, assignment.submitted_at) == (AssignmentStatus.OPEN, None)
    draft = Annotation.objects.get(assignment=assignment)  # saved after the rollback, in its own transaction
    assert draft.submitted_at is None and draft.draft["memo"] == "hangs after the first epoch"

    assert client.post(url, POSTED).status_code == 302  # the retry stores the whole annotation
    annotation = Annotation.objects.get(assignment=assignment)
    assert annotation.submitted_at is not None and annotation.draft == {}
    assert LabelValue.objects.filter(finding__annotation=annotation).count() == 4
