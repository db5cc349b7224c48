"""Every write of annotation's labels: annotations restored in bulk, findings and label values, and labels
following a codebook change. Annotation owns these tables (docs/decisions/0006-one-writer-per-table.md):
no other app writes them, and every path that does goes through here, in the caller's transaction.

Variants behind the same shapes:

* ORM (`write_findings`): a submission or an import of labels, two queries whatever the count;
* SQL: a first submission on PostgreSQL writes its annotation, findings and values inside the one
  statement of `services/submit_sql.py` (`submit`), which also takes the locks and reads the next item
  (docs/decisions/0004); it writes the same rows `write_findings` would (tests/annotation/test_submit.py);
* COPY (`restore_annotations`): the package restore, through `core.bulk.insert_rows` (COPY on
  PostgreSQL, `bulk_create` elsewhere), the ids back in row order (docs/decisions/0005);
* set-based updates (`move_label_values`): a merge, split or rejected proposal, registered with the
  codebook as its `labels` store (`label_store.py`).

The services decide *what* to write (and lock, validate, signal); these functions are *how*: the
autosaved draft (`start_draft`, `set_draft`), a submission (`create_annotation`, then `write_findings`),
an edit, a revision after reveal and an import over earlier labels (`replace_labels`,
`replace_imported_labels`), a reassignment's dropped drafts (`delete_drafts`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from apps.accounts.models import Study
from apps.core.bulk import insert_rows
from apps.taxonomy.label_stores import Moved, remap_category_rows
from apps.taxonomy.models import Category

from . import payload as pl
from .models import (
    Annotation,
    Assignment,
    AssignmentStatus,
    BlindValue,
    DisagreementCause,
    Finding,
    LabelValue,
    SendBack,
)

if TYPE_CHECKING:
    from .services.common import LoadedCodebook


def start_draft(assignment: Assignment, draft: Mapping[str, Any], now: datetime) -> Annotation:
    """The assignment's annotation, created by its first autosave: a draft, nothing submitted."""
    return Annotation.objects.create(assignment=assignment, draft=dict(draft), started_at=now, updated_at=now)


def mark_suggestion_shown(assignment: Assignment, now: datetime) -> None:
    """Record that the workbench showed a model's suggestion for the assignment (its annotation is
    created, as an empty draft, if it has none yet): agreement with models leaves the labels out."""
    annotation, created = Annotation.objects.get_or_create(
        assignment=assignment,
        defaults={"draft": {}, "started_at": now, "updated_at": now, "suggestion_shown": True},
    )
    if not created and not annotation.suggestion_shown:
        mark_assisted([annotation.pk])


def mark_assisted(annotation_ids: Iterable[int]) -> None:
    """Mark these annotations as made with a model's suggestion shown (a package's restore)."""
    ids = list(annotation_ids)
    if ids:
        Annotation.objects.filter(pk__in=ids).update(suggestion_shown=True)


def set_draft(annotation: Annotation, draft: Mapping[str, Any]) -> None:
    """Keep (or, with `{}`, clear) the workbench's unsubmitted state on the annotation."""
    annotation.draft = dict(draft)
    annotation.save(update_fields=["draft"])


def create_annotation(fields: Mapping[str, Any]) -> Annotation:
    """A first submission's annotation row (its findings follow through `write_findings`). Raises the
    database's IntegrityError when the assignment already has one (a twin request on SQLite)."""
    return Annotation.objects.create(**fields)


def replace_labels(
    annotation: Annotation,
    findings: Sequence[Mapping[str, pl.Value]],
    book: LoadedCodebook,
    fields: Mapping[str, Any],
    *,
    had_findings: bool = True,
) -> None:
    """The annotation's labels replaced by `findings` and its columns set from `fields` (the memo, the
    times, the codebook version...). `had_findings=False` skips the delete when the caller knows there
    are none (an annotation never submitted: only a submission writes findings)."""
    if had_findings:
        annotation.findings.all().delete()  # its label values go with them (one cascading delete)
    for name, value in fields.items():
        setattr(annotation, name, value)
    annotation.save(update_fields=list(fields) if annotation.pk is not None and fields else None)
    write_findings([(annotation, findings)], book)


ImportedLabels = tuple[Annotation, Sequence[Mapping[str, pl.Value]], Mapping[tuple[int, str, str], str]]
"""An annotation as an import set it, its findings, and (finding number, dimension, category key) → the
key chosen before a merge."""


def replace_imported_labels(annotations: Sequence[ImportedLabels], book: LoadedCodebook) -> None:
    """An import of labels: the earlier findings of the annotations already stored deleted in one query,
    each annotation saved as the caller set it (new ones created), then every finding written."""
    Finding.objects.filter(annotation_id__in=[a.pk for a, _, _ in annotations if a.pk is not None]).delete()
    originals: dict[tuple[int, int, str, str], str] = {}
    for annotation, _, chosen in annotations:
        annotation.save()
        for (number, dimension, key), original in chosen.items():
            originals[(annotation.pk, number, dimension, key)] = original
    write_findings([(a, findings) for a, findings, _ in annotations], book, originals)


def reopen_annotations(reopened: Sequence[SendBack], drafts: Mapping[int, Mapping[str, Any]]) -> None:
    """Labels sent back to their annotators: each annotation's findings deleted and its labels kept as its
    draft (`drafts`, by assignment id), the annotation and its assignment unsubmitted, the `SendBack`
    rows written. An unsubmitted annotation with a draft is what the workbench and every submission path
    already know how to finish."""
    ids = [s.assignment_id for s in reopened]
    Finding.objects.filter(annotation__assignment_id__in=ids).delete()
    for assignment_id, draft in drafts.items():
        Annotation.objects.filter(assignment_id=assignment_id).update(submitted_at=None, draft=dict(draft))
    Assignment.objects.filter(pk__in=ids).update(status=AssignmentStatus.OPEN, submitted_at=None)
    SendBack.objects.bulk_create(reopened)


def delete_drafts(assignment_ids: Iterable[int]) -> None:
    """The unsubmitted annotations (drafts) of assignments given to someone else."""
    Annotation.objects.filter(assignment_id__in=list(assignment_ids), submitted_at__isnull=True).delete()


def write_findings(
    annotations: Sequence[tuple[Annotation, Sequence[Mapping[str, pl.Value]]]],
    book: LoadedCodebook,
    originals: Mapping[tuple[int, int, str, str], str] | None = None,
) -> None:
    """Create the findings and label values of annotations (two queries in all). `originals` maps
    (annotation id, finding number, dimension, category key) to the key chosen before a merge."""
    findings: list[Finding] = []
    for annotation, values_list in annotations:
        findings.extend(Finding(annotation=annotation, number=i) for i in range(1, len(values_list) + 1))
    created = Finding.objects.bulk_create(findings)
    if any(f.pk is None for f in created):  # databases that cannot return ids from a bulk insert
        keys = [(a.pk, len(v)) for a, v in annotations]
        created = list(
            Finding.objects.filter(annotation_id__in=[k for k, _ in keys]).order_by("annotation_id", "number")
        )
    by_key = {(f.annotation_id, f.number): f for f in created}
    values: list[LabelValue] = []
    for annotation, values_list in annotations:
        for number, finding_values in enumerate(values_list, start=1):
            finding = by_key[(annotation.pk, number)]
            for dimension, value in finding_values.items():
                dimension_id = book.dimension_ids[dimension]
                if value == pl.PENDING:
                    values.append(LabelValue(finding=finding, dimension_id=dimension_id, pending=True))
                    continue
                for key in value:
                    original = (originals or {}).get((annotation.pk, number, dimension, key))
                    values.append(
                        LabelValue(
                            finding=finding,
                            dimension_id=dimension_id,
                            category_id=book.category_ids[(dimension, key)],
                            original_category_id=book.category_ids[(dimension, original)]
                            if original
                            else None,
                        )
                    )
    LabelValue.objects.bulk_create(values)


RestoredValue = tuple[int, int | None, int | None]
"""(dimension id, category id or None for *pending*, original category id or None)."""


@dataclass(frozen=True)
class RestoredAnnotation:
    """A submitted annotation of a package, as it is written into the new study."""

    assignment_id: int
    memo: str
    codebook_version: int
    submitted_at: datetime | None
    findings: Sequence[tuple[int, Sequence[RestoredValue]]]
    """(finding number, its values)."""


def restore_annotations(
    annotations: Sequence[RestoredAnnotation], now: datetime, *, batch_size: int
) -> list[int]:
    """Insert submitted annotations with their findings and values in bulk (COPY on PostgreSQL), marked
    `imported`; an annotation without a time is stamped `now`. Returns the annotations' ids in order."""
    annotation_ids = insert_rows(
        Annotation,
        (
            {
                "assignment_id": a.assignment_id,
                "memo": a.memo,
                "codebook_version": a.codebook_version,
                "started_at": a.submitted_at or now,
                "submitted_at": a.submitted_at,
                "updated_at": a.submitted_at or now,
                "imported": True,
            }
            for a in annotations
        ),
        returning=True,
        batch_size=batch_size,
    )
    plan = [
        (annotation_id, number, values)
        for a, annotation_id in zip(annotations, annotation_ids, strict=True)
        for number, values in a.findings
    ]
    finding_ids = insert_rows(
        Finding,
        ({"annotation_id": annotation_id, "number": number} for annotation_id, number, _ in plan),
        returning=True,
    )
    insert_rows(
        LabelValue,
        (
            {
                "finding_id": finding_id,
                "dimension_id": dimension_id,
                "category_id": category_id,
                "original_category_id": original_id,
                "pending": category_id is None,
            }
            for finding_id, (_, _, values) in zip(finding_ids, plan, strict=True)
            for dimension_id, category_id, original_id in values
        ),
    )
    return annotation_ids


def delete_study_labels(study: Study) -> None:
    """Every label value of the study, its frozen blind values and its disagreement causes, before the
    study's deletion cascades (a label or blind value protects its category and dimension, which the
    codebook's deletion must be able to remove; a disagreement's cause protects the cause)."""
    LabelValue.objects.filter(finding__annotation__assignment__study=study).delete()
    BlindValue.objects.filter(record__round__study=study).delete()
    DisagreementCause.objects.filter(round__study=study).delete()


def move_label_values(source: Category, target: Category, ids: Sequence[int] | None) -> Moved:
    """Annotators' labels on `source` (all, or the label values `ids`) moved to `target`
    (`label_stores.remap_category_rows`)."""
    return remap_category_rows(LabelValue, source, target, ids)
