"""The workbench's writes: drafts and submission, and the next item of a queue."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Any

from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from apps.accounts.models import Study, User
from apps.core import sql
from apps.taxonomy.index import CodebookIndex
from apps.taxonomy.models import Codebook

from .. import payload as pl
from .. import writes
from ..models import (
    Annotation,
    Assignment,
    AssignmentStatus,
    RoundKind,
)
from ..signals import annotation_submitted
from . import submit_sql
from .common import (
    MAX_DRAFT_CHARS,
    MAX_SECONDS_PER_ITEM,
    AlreadyDecided,
    InvalidLabels,
    LoadedCodebook,
    NotYourAssignment,
    StaleCodebook,
    final_reason,
    load_codebook,
    loaded_codebook,
    stored_labels,
)


def _check_annotator(assignment: Assignment, user: User | Any) -> None:
    if assignment.annotator_id != getattr(user, "pk", None):
        raise NotYourAssignment("This item is not assigned to you.")


def check_draft_size(data: Mapping[str, Any]) -> None:
    """Refuse (InvalidLabels) a posted state larger than a draft may be."""
    if len(repr(data)) > MAX_DRAFT_CHARS:
        raise InvalidLabels([pl.Problem(f"the draft is larger than {MAX_DRAFT_CHARS} characters")])


def save_draft(assignment: Assignment, user: User, data: Mapping[str, Any]) -> Annotation | None:
    """Autosave: keep the workbench's unsubmitted state (`data`, the payload JSON as the form holds it,
    unvalidated) on the annotation, creating it on first save. Returns None when nothing is stored: the
    item's labels are final (`final_reason`), or the draft equals the labels already submitted."""
    check_draft_size(data)
    draft = {"findings": data.get("findings", []), "memo": str(data.get("memo", ""))}
    with transaction.atomic():
        locked = Assignment.objects.select_for_update().select_related("study").get(pk=assignment.pk)
        _check_annotator(locked, user)
        if final_reason(locked) is not None:
            return None
        annotation = Annotation.objects.filter(assignment=locked).first()
        now = timezone.now()
        if annotation is None:
            return writes.start_draft(locked, draft, now)
        if annotation.submitted_at is not None:
            book = load_codebook(locked.study)
            stored = pl.normal_form(stored_labels(annotation, book), annotation.memo)
            if _draft_normal_form(draft, book) == stored:
                if annotation.draft:
                    writes.set_draft(annotation, {})
                return None
        writes.set_draft(annotation, draft)
        return annotation


def _draft_normal_form(draft: Mapping[str, Any], book: LoadedCodebook) -> dict[str, Any] | None:
    try:
        parsed = pl.parse_payload(draft)
        clean = pl.validate_payload(parsed, book.schema, allow_inactive=True)
    except pl.PayloadError:
        return None
    return clean.to_json()


def _hold_codebook(study: Study) -> LoadedCodebook:
    """Share-lock the study's codebook row until the transaction ends (PostgreSQL) and return the codebook
    as that row says it is (from the per-process index cache when the row's version is cached).

    A codebook change takes FOR UPDATE on that row, so it either waits for this submission and then
    remaps its labels (a merge), or this submission waits for the change and validates against the
    changed codebook; without it a merge could commit between our read of the codebook and our
    writes, leaving a label on a merged category. Submissions share the lock: they never wait for
    each other. SQLite serialises writers and refuses a write on a stale snapshot, so it needs none.
    """
    rows: Iterable[Codebook] = Codebook.objects.filter(study=study)
    if connection.vendor == "postgresql":
        # Django has no FOR SHARE; the row, read under the lock, is the one the index is keyed on.
        rows = Codebook.objects.raw(
            f'SELECT * FROM "{Codebook._meta.db_table}" WHERE study_id = %s FOR SHARE', [study.pk]
        )
    book = next(iter(rows), None)
    if book is None:
        return load_codebook(study)
    return load_codebook(study, index=CodebookIndex.for_codebook(book))


@dataclass(frozen=True)
class SubmitResult:
    annotation: Annotation
    created: bool  # the first submission of this assignment
    changed: bool  # False: the same labels were already submitted (a double click, a second tab)
    # The user's next open assignment in the study when the submission read it (PostgreSQL's short path:
    # the id, 0 for none); None when not read (`next_open_assignment` says).
    next_assignment_id: int | None = None
    # a training item: its gold answer is shown now, on the same page (docs/quality.md)
    training: bool = False
    # The labels as stored (validated, codebook order): what `stored_labels` would read back now.
    labels: pl.Payload | None = None
    # The assignment's round number when the submission read it (PostgreSQL's short path, whose
    # `annotation` then holds every column as written, with its assignment); None otherwise.
    round_number: int | None = None


def _seconds(annotation: Annotation | None, seconds_spent: int | None, now: datetime) -> int:
    if seconds_spent is not None:
        spent = seconds_spent
    elif annotation is not None:
        spent = int((now - annotation.started_at).total_seconds())
    else:
        spent = 0
    return max(0, min(spent, MAX_SECONDS_PER_ITEM))


def validated_payload(
    payload: Mapping[str, Any] | pl.Payload, book: LoadedCodebook, user: User, codebook_version: int
) -> pl.Payload:
    """The payload checked against the current codebook, every applicable dimension required."""
    try:
        parsed = payload if isinstance(payload, pl.Payload) else pl.parse_payload(payload)
        return pl.validate_payload(parsed, book.schema, user_id=user.pk, complete=True)
    except pl.PayloadError as exc:
        if exc.stale and codebook_version < book.version:
            raise StaleCodebook(exc.problems, codebook_version, book.version) from exc
        raise InvalidLabels(exc.problems) from exc


def submit_annotation(
    assignment: Assignment,
    payload: Mapping[str, Any] | pl.Payload,
    user: User,
    *,
    codebook_version: int,
    seconds_spent: int | None = None,
    study: Study | None = None,
) -> SubmitResult:
    """Store the labels of `payload` as the assignment's annotation and mark the assignment submitted.

    `assignment` is read for its pk only: the row is loaded here, under its lock. With `study`, an
    assignment of another study is refused (NotYourAssignment) like another annotator's.

    One transaction; the assignment row is locked first (two clicks or two tabs queue up here), then the
    codebook row is share-locked (`_hold_codebook`: a concurrent merge waits or is waited for), then:
    refuse (NotYourAssignment) if `user` is not its annotator, (AlreadyDecided) if the item's labels are final
    (`final_reason`: decided, or every annotator of the item in the round submitted);
    validate against the current codebook with every applicable dimension required (InvalidLabels, or
    StaleCodebook when `codebook_version`, the version the page was rendered with, is older than the
    current one and a value names a changed category); when the same labels are already submitted,
    return `changed=False` and write nothing; else create or replace the findings and label values,
    set submitted_at (first submission), updated_at, the codebook version and seconds spent (`seconds_spent`
    from the page, else the time since the annotation was started; an edit adds to it), clear the draft,
    and send `annotation_submitted(sender=Annotation, annotation, item_id, index)` inside the transaction.

    On PostgreSQL a first submission to a study takes `submit_sql`'s one statement when the labels are
    valid for the codebook index last read (the same contract; the item row locked with the others, so the
    signal says ``item_locked=True``); everything else, and whatever it declines, the ORM path.
    """
    with transaction.atomic():
        # the study asked for, else the one the caller's instance names (a bare reference names none)
        study_id = study.pk if study is not None else assignment.study_id
        if connection.vendor == "postgresql" and study_id is not None:
            short = _submit_short(assignment.pk, payload, user, study_id, codebook_version, seconds_spent)
            if short is not None:
                return short
        locked = (
            Assignment.objects.select_for_update().select_related("study").filter(pk=assignment.pk).first()
        )
        if locked is None:
            raise NotYourAssignment("This item is not assigned to you.")
        _check_annotator(locked, user)
        if study is not None and locked.study_id != study.pk:
            raise NotYourAssignment("This item is not assigned to you.")
        if (final := final_reason(locked)) is not None:
            raise AlreadyDecided(final)
        book = _hold_codebook(locked.study)
        clean = validated_payload(payload, book, user, codebook_version)
        now = timezone.now()
        annotation = Annotation.objects.filter(assignment=locked).first()
        if annotation is not None and annotation.submitted_at is not None:
            stored = pl.normal_form(stored_labels(annotation, book), annotation.memo)
            if stored == clean.to_json():
                if annotation.draft:
                    writes.set_draft(annotation, {})
                return SubmitResult(annotation, created=False, changed=False, labels=clean)
        created = annotation is None or annotation.submitted_at is None
        spent = _seconds(annotation, seconds_spent, now)
        fields: dict[str, Any] = {
            "memo": clean.memo,
            "draft": {},
            "codebook_version": book.version,
            "updated_at": now,
        }
        if annotation is None:
            fields.update(assignment=locked, started_at=now, submitted_at=now, seconds_spent=spent)
            if connection.vendor == "postgresql":  # the assignment's row lock keeps a twin request waiting
                annotation = writes.create_annotation(fields)
            else:
                try:
                    with transaction.atomic():
                        annotation = writes.create_annotation(fields)
                except IntegrityError:
                    # Only without row locks (SQLite) can a twin request get here first: start again.
                    return submit_annotation(
                        assignment,
                        clean,
                        user,
                        codebook_version=codebook_version,
                        seconds_spent=seconds_spent,
                        study=study,
                    )
            writes.write_findings([(annotation, clean.findings)], book)
        else:
            if not created:
                spent = min(MAX_SECONDS_PER_ITEM * 10, (annotation.seconds_spent or 0) + spent)
            fields.update(submitted_at=annotation.submitted_at or now, seconds_spent=spent, imported=False)
            # Only a submission writes findings (submit, import), and submitted_at is never cleared: an
            # annotation not yet submitted (a draft) has none to delete, so the delete is skipped.
            writes.replace_labels(annotation, clean.findings, book, fields, had_findings=not created)
        locked.status = AssignmentStatus.SUBMITTED
        locked.submitted_at = locked.submitted_at or now
        locked.save(update_fields=["status", "submitted_at"])
        if not locked.gold:  # a gold check's answer is recorded, never consolidated (docs/quality.md)
            annotation_submitted.send(
                sender=Annotation, annotation=annotation, item_id=locked.item_id, index=book.index
            )
    training = locked.gold and locked.round.kind == RoundKind.TRAINING  # the round read for a gold check only
    return SubmitResult(annotation, created=created, changed=True, training=training, labels=clean)


def _submit_short(
    assignment_id: int,
    payload: Mapping[str, Any] | pl.Payload,
    user: User,
    study_id: int,
    codebook_version: int,
    seconds_spent: int | None,
) -> SubmitResult | None:
    """`submit_sql.submit` for labels valid against the index this process read last for the study (read
    now when there is none: three queries); None, having written nothing, when the study has no codebook,
    the page's version is not that index's, the labels are not valid for it (the ORM path then says why,
    against the codebook as it is) or the statement declined."""
    index = CodebookIndex.last_read(study_id)
    if index is None:
        row = Codebook.objects.filter(study_id=study_id).first()
        if row is None:
            return None
        index = CodebookIndex.for_codebook(row)
    if index.version != codebook_version:
        return None
    book = loaded_codebook(index)
    try:
        clean = validated_payload(payload, book, user, codebook_version)
    except InvalidLabels:
        return None
    done = submit_sql.submit(
        assignment_id, user.pk, study_id, clean.findings, clean.memo, book, timezone.now(), seconds_spent
    )
    if done is None:
        return None
    annotation_submitted.send(
        sender=Annotation,
        annotation=done.annotation,
        item_id=done.annotation.assignment.item_id,
        index=book.index,
        item_locked=True,
    )
    return SubmitResult(
        done.annotation,
        created=True,
        changed=True,
        next_assignment_id=done.next_assignment_id or 0,
        labels=clean,
        round_number=done.round_number,
    )


# --- Importing labels ---------------------------------------------------------------------------------


# Hand-written because it is the hottest read of the workbench (every next-item and every submit): the
# ORM's nested Subquery form of the same plan cost several milliseconds to compile and plan per call
# (`submit_sql.next_open_id`). A prepared statement on PostgreSQL (planning was 0.5 of its 0.8 ms).
@cache
def _next_open() -> sql.Statement:
    return sql.Statement(
        "taxonomist_next_open",
        f"SELECT {sql.columns(Assignment, 'x')} FROM annotation_assignment x "
        f"WHERE x.id = ({submit_sql.next_open_id()})",
        {"user": "bigint", "open": "varchar", "after": "bigint", "study": "bigint"},
    )


def next_open_assignment(user: User, study: Study, *, after: Assignment | None = None) -> Assignment | None:
    """The user's next open assignment in the study (round number, then queue order), skipping decided
    items and `after`. One indexed query whose cost does not grow with the queue (`_next_open`)."""
    if not user.is_authenticated:
        return None
    row = _next_open().one(
        {
            "user": user.pk,
            "open": AssignmentStatus.OPEN.value,
            "after": after.pk if after is not None else 0,
            "study": study.pk,
        }
    )
    return sql.instance(Assignment, row) if row is not None else None
