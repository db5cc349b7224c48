"""Labels sent back to their annotators, to be labelled again on the current codebook (the re-review
worklist's "Send back", docs/paper.md). The workflow that also withdraws the item's decision is
adjudication's `send_back`; this is the annotation half it calls inside its transaction.

Blindness: each annotator is told only what changed under their own label (`SendBack.reason`), never
another annotator's labels.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from apps.accounts.models import User

from .. import payload as pl
from .. import writes
from ..models import Assignment, AssignmentStatus, SendBack
from .common import AnnotationError, LoadedCodebook, stored_labels
from .discussion import labels_json

INTRO = "The codebook changed after you labelled this item"


def reopen_for_relabelling(
    item_id: int,
    notes: Mapping[str, Sequence[str]],
    *,
    book: LoadedCodebook,
    by: User | None,
    now: datetime,
) -> list[SendBack]:
    """Send the submitted labels of the annotators in `notes` (username → what changed under their
    labels) on item `item_id` back to them: each annotation becomes a draft holding those labels, its
    assignment open again, with a `SendBack` saying why. Locks the assignments; runs in the caller's
    transaction. AnnotationError when none of them has submitted labels on the item."""
    assignments = list(
        Assignment.objects.select_for_update(of=("self",))
        .reliability()  # a gold check's answer is never sent back (docs/quality.md)
        .filter(item_id=item_id, status=AssignmentStatus.SUBMITTED, annotator__username__in=list(notes))
        .select_related("annotation", "annotator")
        .order_by("pk")
    )
    if not assignments:
        names = ", ".join(sorted(notes)) or "nobody"
        raise AnnotationError(f"nothing to send back: no submitted labels of {names} on this item")
    drafts = {}
    sent = []
    for assignment in assignments:
        annotation = assignment.annotation
        before = stored_labels(annotation, book)
        drafts[assignment.pk] = pl.normal_form(before, annotation.memo)
        changes = "; ".join(notes[assignment.annotator.username])
        sent.append(
            SendBack(
                assignment=assignment,
                reason=f"{INTRO}: {changes}." if changes else f"{INTRO}.",
                labels_before=labels_json(before),
                memo_before=annotation.memo,
                codebook_version=book.version,
                sent_by=by,
                sent_at=now,
            )
        )
    writes.reopen_annotations(sent, drafts)
    return sent


def open_send_back(assignment: Assignment) -> SendBack | None:
    """Why the assignment is back in its annotator's queue, while it is (its annotation unsubmitted)."""
    if assignment.status == AssignmentStatus.SUBMITTED:
        return None
    return SendBack.objects.filter(assignment=assignment).order_by("-sent_at", "-pk").first()


def sent_back_ids(assignment_ids: Sequence[int]) -> set[int]:
    """Which of these (open) assignments were sent back to their annotator. One query."""
    return set(
        SendBack.objects.filter(assignment_id__in=list(assignment_ids)).values_list(
            "assignment_id", flat=True
        )
    )
