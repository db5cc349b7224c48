"""The reveal of a round and the discussion after it: the frozen blind record, and revisions.

`reveal_round` ends a round's blind phase: every submitted annotation of the round is copied, labels and
memo, into its `BlindRecord` (with `BlindValue` rows for agreement), once, in the transaction that moves
the round to discussion (or straight to adjudication, when the round does not discuss). The blind
record is never written again: the blind agreement of a revealed round cannot change.

`revise_annotation` is an annotator's change of their own submitted labels during discussion. It is
refused before the reveal, after the discussion, on an item already decided and on another annotator's
assignment; it records a `Revision` (before and after) and sends `annotation_submitted`, so adjudication
consolidates the item again (as ``discussed`` when the revised labels agree).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.utils import timezone

from apps.accounts.models import Study, User

from .. import payload as pl
from .. import writes
from ..models import (
    Annotation,
    Assignment,
    AssignmentStatus,
    BlindRecord,
    BlindValue,
    Revision,
    Round,
    RoundPhase,
)
from ..phases import discusses, in_discussion, is_blind
from ..signals import annotation_submitted
from .common import (
    AlreadyDecided,
    AnnotationError,
    InvalidLabels,
    NotYourAssignment,
    RoundError,
    decided_item_ids,
    load_codebook,
    lock_study,
    stored_labels,
)
from .labelling import validated_payload  # the same validation and writes as a submission


class NotInDiscussion(AnnotationError):
    """The round is not in discussion (still blind, or already in adjudication): labels cannot be revised."""


class OpenAssignments(RoundError):
    """The round still has open assignments: revealing it needs `force` (the browser asks first)."""

    def __init__(self, round_: Round, n_open: int) -> None:
        self.n_open = n_open
        super().__init__(
            f"{round_} has {n_open} open assignment{'s' if n_open != 1 else ''}: revealing it now shows "
            "the others' labels before those are submitted. Confirm (--force on the command line) to reveal "
            "anyway."
        )


@dataclass(frozen=True)
class RevealResult:
    round: Round
    revealed: bool  # False: the round was already revealed; nothing changed
    frozen: int  # blind records written (the submitted annotations of the round)
    open: int  # assignments still open when the round was revealed


def open_assignment_count(round_: Round) -> int:
    return Assignment.objects.filter(round=round_, status=AssignmentStatus.OPEN).count()


def reveal_round(
    study: Study,
    number: int,
    *,
    force: bool = False,
    actor: User | None = None,
    discussion: bool | None = None,
) -> RevealResult:
    """End round `number`'s blind phase: freeze its blind record and move it to discussion (when it
    discusses, `phases.discusses`) or to adjudication. `discussion` True or False records the round's own
    choice first (None: as the round or, failing that, the study says). Idempotent: a revealed round is
    left as it is, whatever `discussion` asks.

    Locks the study row (as drawing and assigning do), then the round. A round with open assignments is
    refused (`OpenAssignments`, saying how many) unless `force`."""
    with transaction.atomic():
        lock_study(study)
        round_ = Round.objects.select_for_update().filter(study=study, number=number).first()
        if round_ is None:
            known = ", ".join(
                str(n) for n in Round.objects.filter(study=study).values_list("number", flat=True)
            )
            raise RoundError(f"Study {study.slug} has no round {number} (its rounds: {known or 'none'}).")
        if not is_blind(round_):
            return RevealResult(round_, False, 0, open_assignment_count(round_))
        n_open = open_assignment_count(round_)
        if n_open and not force:
            raise OpenAssignments(round_, n_open)
        frozen = _freeze(round_)
        if discussion is not None:
            round_.discussion = discussion
        round_.phase = RoundPhase.DISCUSSION if discusses(round_) else RoundPhase.ADJUDICATION
        round_.revealed_at = timezone.now()
        round_.revealed_by = actor
        round_.save(update_fields=["phase", "revealed_at", "revealed_by", "discussion"])
    return RevealResult(round_, True, frozen, n_open)


def close_discussion(study: Study, number: int) -> Round:
    """End round `number`'s discussion: it moves to adjudication, where no annotator revises any more and
    the disagreements left wait for a lead. Refused (NotInDiscussion, saying where the round stands) for a
    round that is not in discussion."""
    with transaction.atomic():
        lock_study(study)
        round_ = Round.objects.select_for_update().filter(study=study, number=number).first()
        if round_ is None:
            raise RoundError(f"Study {study.slug} has no round {number}.")
        if round_.phase != RoundPhase.DISCUSSION:
            raise NotInDiscussion(
                f"{round_} is not in discussion: it is in {round_.get_phase_display().lower()}."
            )
        round_.phase = RoundPhase.ADJUDICATION
        round_.save(update_fields=["phase"])
    return round_


def _freeze(round_: Round) -> int:
    """Copy the round's submitted annotations into its blind record (three queries and two inserts)."""
    book = load_codebook(round_.study)
    annotations = list(
        Annotation.objects.submitted()
        .filter(assignment__round=round_, assignment__gold=False)  # gold checks have no blind record
        .select_related("assignment")
        .prefetch_related("findings__values")
    )
    records = BlindRecord.objects.bulk_create(
        [
            BlindRecord(
                round=round_,
                assignment=a.assignment,
                item_id=a.assignment.item_id,
                annotator_id=a.assignment.annotator_id,
                memo=a.memo,
                labels=labels_json(stored_labels(a, book)),
                submitted_at=a.submitted_at,
            )
            for a in annotations
        ]
    )
    if any(r.pk is None for r in records):
        by_assignment = {r.assignment_id: r for r in BlindRecord.objects.filter(round=round_)}
        records = [by_assignment[a.assignment.pk] for a in annotations]
    values = [
        BlindValue(
            record=record, finding=finding.number, dimension_id=v.dimension_id, category_id=v.category_id
        )
        for record, annotation in zip(records, annotations, strict=True)
        for finding in annotation.findings.all()
        for v in finding.values.all()
    ]
    BlindValue.objects.bulk_create(values)
    return len(records)


def labels_json(selections: Sequence[Mapping[str, pl.Value]]) -> list[dict[str, Any]]:
    return [
        {key: (value if value == pl.PENDING else list(value)) for key, value in finding.items()}
        for finding in selections
    ]


def check_revisable(assignment: Assignment, user: User | Any) -> None:
    """Refuse a revision: another's assignment (NotYourAssignment), a round not in discussion
    (NotInDiscussion, saying why), an unsubmitted assignment, or a decided item (AlreadyDecided)."""
    if assignment.annotator_id != getattr(user, "pk", None):
        raise NotYourAssignment("This item is not assigned to you.")
    round_ = assignment.round
    if is_blind(round_):
        raise NotInDiscussion(f"{round_} is still blind: labels can be revised once a lead reveals it.")
    if not in_discussion(round_):
        raise NotInDiscussion(
            f"{round_} is in adjudication: its discussion is over, labels can no longer change."
        )
    if assignment.status != AssignmentStatus.SUBMITTED:
        raise NotInDiscussion("Submit your labels first: only submitted labels are revised in discussion.")
    if decided_item_ids([assignment.item_id]):
        raise AlreadyDecided("This item is decided: its labels are final and can no longer change.")


@dataclass(frozen=True)
class ReviseResult:
    annotation: Annotation
    changed: bool


def revise_annotation(
    assignment: Assignment,
    payload: Mapping[str, Any] | pl.Payload,
    user: User,
    *,
    study: Study | None = None,
    imported: bool = False,
) -> ReviseResult:
    """Replace the annotator's submitted labels of `assignment` during its round's discussion.

    One transaction; the assignment row is locked first. Refused as `check_revisable` says; the labels
    are validated against the current codebook (InvalidLabels). The same labels change nothing; others
    record a `Revision`, replace the findings and memo, and send `annotation_submitted` (adjudication
    consolidates the item: ``discussed`` when the annotators now agree)."""
    with transaction.atomic():
        locked = (
            Assignment.objects.select_for_update()
            .select_related("study", "round", "round__study")
            .filter(pk=assignment.pk)
            .first()
        )
        if locked is None or (study is not None and locked.study_id != study.pk):
            raise NotYourAssignment("This item is not assigned to you.")
        check_revisable(locked, user)
        annotation = Annotation.objects.select_for_update().get(assignment=locked)
        book = load_codebook(locked.study)
        clean = validated_payload(payload, book, user, book.version)
        before = stored_labels(annotation, book)
        if pl.normal_form(before, annotation.memo) == clean.to_json():
            return ReviseResult(annotation, False)
        now = timezone.now()
        Revision.objects.create(
            annotation=annotation,
            revised_at=now,
            labels_before=labels_json(before),
            memo_before=annotation.memo,
            labels_after=labels_json(clean.findings),
            memo_after=clean.memo,
            imported=imported,
        )
        writes.replace_labels(
            annotation,
            clean.findings,
            book,
            {"memo": clean.memo, "draft": {}, "updated_at": now, "codebook_version": book.version},
        )
        annotation_submitted.send(
            sender=Annotation, annotation=annotation, item_id=locked.item_id, index=book.index
        )
    return ReviseResult(annotation, True)


Revised = tuple[int, User, int | None, Sequence[int], pl.Payload]  # item, annotator, round, rows, labels


def apply_revisions(study: Study, revisions: Sequence[Revised], result: Any) -> None:
    """The revisions of a labels file (`imports.import_annotations` with ``revisions``), checked first:
    each names an annotator's submitted assignment of the item in a round in discussion (the round of
    the row, else the latest where the annotator has the item), not decided; every refusal is reported
    by row (ImportLabelsError) and nothing is written. `result` counts updated and unchanged ones."""
    from ..label_file import LabelProblem
    from .common import ImportLabelsError

    problems: list[LabelProblem] = []
    todo: list[tuple[Assignment, User, pl.Payload]] = []
    for item_id, user, number, rows, payload in revisions:
        mine = Assignment.objects.filter(study=study, item_id=item_id, annotator=user).select_related("round")
        if number is not None:
            mine = mine.filter(round__number=number)
        assignment = mine.order_by("-round__number").first()
        row = rows[0] if rows else 0
        if assignment is None:
            where = f"round {number}" if number is not None else "any round"
            problems.append(
                LabelProblem(row, "annotator", user.username, f"has no assignment of this item in {where}")
            )
            continue
        try:
            check_revisable(assignment, user)
        except AnnotationError as exc:
            problems.append(LabelProblem(row, "round", str(assignment.round.number), str(exc)))
            continue
        todo.append((assignment, user, payload))
    if problems:
        raise ImportLabelsError(problems)
    for assignment, user, payload in todo:
        done = revise_annotation(assignment, payload, user, study=study, imported=True)
        if done.changed:
            result.annotations_updated += 1
        else:
            result.unchanged += 1


__all__ = [
    "InvalidLabels",
    "NotInDiscussion",
    "OpenAssignments",
    "RevealResult",
    "ReviseResult",
    "apply_revisions",
    "check_revisable",
    "close_discussion",
    "open_assignment_count",
    "reveal_round",
    "revise_annotation",
]
