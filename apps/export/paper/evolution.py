"""Codebook evolution of one study read from the database into `taxonomy.evolution` (docs/paper.md):
the difference between two versions with the labels made on each, and the re-review worklist.

Here, in export, because the worklist reads annotation labels, which the taxonomy app sits below.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count

from apps.accounts.models import Study, User
from apps.adjudication.services import send_back
from apps.annotation.models import Annotation, LabelValue
from apps.annotation.services import AnnotationError
from apps.corpus.models import Item
from apps.export.models import ReReview
from apps.taxonomy import evolution
from apps.taxonomy.codebook_spec import codebook_from_data
from apps.taxonomy.models import Category, Codebook, CodebookChange, CodebookVersion

from .data import PaperError


@dataclass(frozen=True)
class Evolution:
    old: int
    new: int
    changes: list[evolution.VersionChange]
    labels_per_version: dict[int, int]


def _log(study: Study, after: int = 0, upto: int | None = None) -> list[evolution.LoggedChange]:
    rows = CodebookChange.objects.filter(codebook__study=study, version__gt=after)
    if upto is not None:
        rows = rows.filter(version__lte=upto)
    return [
        evolution.LoggedChange(version, kind, dimension or "", category or "", after_data or {})
        for version, kind, dimension, category, after_data in rows.order_by("version", "id").values_list(
            "version", "kind", "dimension__key", "category__key", "after"
        )
    ]


def codebook_evolution(study: Study, old: int, new: int) -> Evolution:
    """The changes from version `old` to version `new`; PaperError naming a version the study lacks."""
    snapshots = dict(
        CodebookVersion.objects.filter(codebook__study=study, number__in=[old, new]).values_list(
            "number", "snapshot"
        )
    )
    for number in (old, new):
        if number not in snapshots:
            known = list(
                CodebookVersion.objects.filter(codebook__study=study)
                .order_by("number")
                .values_list("number", flat=True)
            )
            raise PaperError(f"the codebook has no version {number} (its versions: {known or 'none'})")
    changes = evolution.version_diff(
        codebook_from_data(snapshots[old]), codebook_from_data(snapshots[new]), _log(study, old, new)
    )
    made = dict(
        Annotation.objects.filter(assignment__study=study, submitted_at__isnull=False)
        .values_list("codebook_version")
        .annotate(n=Count("id"))
        .order_by()
    )
    return Evolution(old, new, changes, dict(sorted(made.items())))


def rereview_worklist(study: Study) -> list[evolution.WorkItem]:
    """Items (by URL) with a label made on a version after which its category was split, merged,
    redefined or retired, leaving out those a lead marked "still right" since (`ReReview`)."""
    reviewed: dict[str, int] = {}
    for url, version in ReReview.objects.filter(study=study).values_list("item__url", "codebook_version"):
        reviewed[url] = max(version, reviewed.get(url, 0))
    labels = (
        evolution.Label(url, annotator, dimension, original or category, version)
        for url, annotator, dimension, category, original, version in LabelValue.objects.filter(
            finding__annotation__assignment__study=study,
            # a gold check is never sent back: that would withdraw the decision that is its answer
            finding__annotation__assignment__gold=False,
            finding__annotation__submitted_at__isnull=False,
            pending=False,
        )
        .order_by("finding__annotation__assignment__item_id")
        .values_list(
            "finding__annotation__assignment__item__url",
            "finding__annotation__assignment__annotator__username",
            "dimension__key",
            "category__key",
            "original_category__key",
            "finding__annotation__codebook_version",
        )
    )
    names = {
        (dimension, key): name
        for dimension, key, name in Category.objects.filter(dimension__codebook__study=study).values_list(
            "dimension__key", "key", "name"
        )
    }
    return evolution.rereview_worklist(labels, _log(study), reviewed, names)


def send_back_item(study: Study, item: Item, user: User | None) -> list[str]:
    """Send the item's labels the worklist lists back to the annotators who made them (each told what
    changed under their own label); their usernames. PaperError when the item is not on the worklist."""
    work = next((w for w in rereview_worklist(study) if w.item == item.url), None)
    if work is None or not work.outdated:
        raise PaperError(f"{item.url} is not on the re-review worklist: nothing to send back")
    notes: dict[str, list[str]] = {}
    for annotator, note in work.outdated:
        notes.setdefault(annotator, []).append(note)
    try:
        sent = send_back(study, item, notes, by=user)
    except AnnotationError as exc:
        raise PaperError(str(exc)) from exc
    return sorted(s.assignment.annotator.username for s in sent)


def mark_still_right(study: Study, item: Item, user: User | None) -> ReReview:
    """Record that `item`'s labels are still right at the study's current codebook version."""
    version = Codebook.objects.filter(study=study).values_list("version", flat=True).first() or 0
    return ReReview.objects.create(study=study, item=item, codebook_version=version, reviewed_by=user)
