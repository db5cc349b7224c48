"""What the annotation services share: errors, the codebook loaded as plain structures, decided items."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from django.db.models import Count, Q

from apps.accounts.models import Study
from apps.corpus.models import Item
from apps.taxonomy.index import CodebookIndex

from .. import payload as pl
from ..completion import MIN_ANNOTATIONS, ready
from ..decided import decided_q
from ..label_file import LabelProblem, report
from ..models import Annotation, Assignment, AssignmentStatus, Round, RoundKind, overlap_of

MAX_SECONDS_PER_ITEM = 3 * 3600
MAX_DRAFT_CHARS = 200_000


class AnnotationError(Exception):
    """A refused annotation operation; the message says what and why, for a person to read."""


class RoundError(AnnotationError):
    """Bad input for sampling, adding items, screening or assigning."""


class NotYourAssignment(AnnotationError):
    """The user is not the assignment's annotator."""


class AlreadyDecided(AnnotationError):
    """The item is decided: its labels can no longer change."""


class InvalidLabels(AnnotationError):
    """The labels break a codebook rule; `problems` names finding, dimension and value of each."""

    def __init__(self, problems: Sequence[pl.Problem]) -> None:
        self.problems = list(problems)
        super().__init__("These labels cannot be saved: " + "; ".join(str(p) for p in self.problems))


class StaleCodebook(InvalidLabels):
    """The page was opened on an older codebook and a value names a category that changed since."""

    def __init__(self, problems: Sequence[pl.Problem], seen: int, current: int) -> None:
        super().__init__(problems)
        self.seen, self.current = seen, current
        self.args = (
            f"The codebook changed since this page was opened (version {seen} → {current}): reload the "
            "page to see the current categories. Your draft is kept. "
            + "; ".join(str(p) for p in self.problems if p.stale),
        )


class ImportLabelsError(AnnotationError):
    """A labels import refused whole; `problems` lists every problem by row (the message up to 50)."""

    def __init__(self, problems: Sequence[LabelProblem]) -> None:
        self.problems = sorted(problems, key=lambda p: p.row)
        super().__init__(report(self.problems))


# --- The codebook, loaded once per request ------------------------------------------------------------


@dataclass(frozen=True)
class LoadedCodebook:
    """The study's codebook for labelling: the taxonomy app's `CodebookIndex`, the payload `Schema` built
    from it, and the maps from keys to ids used to write label values. Three queries to load."""

    index: CodebookIndex
    schema: pl.Schema
    dimension_ids: Mapping[str, int]
    category_ids: Mapping[tuple[str, str], int]  # (dimension key, category key) → id, any status

    @property
    def version(self) -> int:
        return self.index.version

    def key_of(self, category_id: int) -> str:
        return self.index.categories[category_id].key


def load_codebook(study: Study, *, index: CodebookIndex | None = None) -> LoadedCodebook:
    """The study's codebook (empty, version 0, when it has none), every status included. Built once per
    `index` (kept in its memo; a cached index makes it free), so pass the index when you have it."""
    return loaded_codebook(index or CodebookIndex.for_study(study))


def loaded_codebook(index: CodebookIndex) -> LoadedCodebook:
    """`load_codebook` for a codebook index at hand (free when built before for that index)."""
    loaded = index.memo.get("annotation.loaded")
    if isinstance(loaded, LoadedCodebook):
        return loaded
    loaded = _build(index)
    index.memo["annotation.loaded"] = loaded
    return loaded


def _build(index: CodebookIndex) -> LoadedCodebook:
    infos: list[pl.DimensionInfo] = []
    category_ids: dict[tuple[str, str], int] = {}
    for dimension in index.all_dimensions:
        tree = index.tree(dimension.key, active_only=False)
        categories: dict[str, pl.CategoryInfo] = {}
        for category_id in tree:
            info = index.categories[category_id]
            lineage = tuple(index.categories[i].key for i in (*tree.ancestors(category_id), category_id))
            merged_into = (
                index.categories[info.merged_into_id].key if info.merged_into_id in index.categories else None
            )
            categories[info.key] = pl.CategoryInfo(
                info.key, info.name, lineage, info.status, info.proposed_by_id, merged_into
            )
            category_ids[(dimension.key, info.key)] = category_id
        infos.append(
            pl.DimensionInfo(
                dimension.key, dimension.name, dimension.multiple, categories, dimension.applies_when,
                retired=dimension.retired,
            )
        )  # fmt: skip
    return LoadedCodebook(
        index=index,
        schema=pl.Schema(index.version, tuple(infos)),
        dimension_ids={d.key: d.id for d in index.all_dimensions},
        category_ids=category_ids,
    )


def decided_item_ids(item_ids: Iterable[int]) -> set[int]:
    """Items (of `item_ids`) that are decided: their review says so or a current decision exists. One
    query; what "decided" means is adjudication's reader (`decided.decided_q`), never imported."""
    ids = list(item_ids)
    if not ids:
        return set()
    return set(Item.objects.filter(pk__in=ids).filter(decided_q()).values_list("pk", flat=True).distinct())


ROUND_COMPLETE = "Every annotator of this item has submitted: its labels are final and can no longer change."
ITEM_DECIDED = "This item is decided: its labels are final and can no longer change."


TRAINING_ANSWERED = "You answered this training item: its gold answer is below."


def _training(assignment: Assignment) -> bool:
    return bool(assignment.round.kind == RoundKind.TRAINING)


def final_reason(assignment: Assignment) -> str | None:
    """Why the labels of `assignment`'s item in its round can no longer change, or None.

    Final once the item is complete in the round (`completion.ready`: every annotator it was assigned to
    submitted, at least two and at least the round's overlap), whether it was then decided automatically
    (they agreed) or waits for the lead (they did not): the answer, and the message, are the same either
    way, so an annotator's page, autosave or edit never tells whether the others chose as they did
    (blindness, docs/security.md). It is the rule consolidation waits for, so no item is locked and left
    unconsolidated. Final earlier too when a decision came first (a lead's, or an imported one). One query
    while `assignment` is open (the round cannot be complete then), two or three after.

    A gold check (`assignment.gold`) is the exception (docs/quality.md): its item is decided by design, and
    its labels stay open to the annotator as an ordinary item's would while a co-annotator has not submitted
    (so nothing tells it apart), except in a training round, where a submitted answer is final (its gold
    answer is then shown). No query, but for a submitted gold check's round."""
    if assignment.gold:
        if assignment.status == AssignmentStatus.SUBMITTED and _training(assignment):
            return TRAINING_ANSWERED
        return None
    if assignment.status == AssignmentStatus.SUBMITTED:
        counts = Assignment.objects.filter(
            item_id=assignment.item_id, round_id=assignment.round_id
        ).aggregate(total=Count("id"), open=Count("id", filter=~Q(status=AssignmentStatus.SUBMITTED)))
        total = counts["total"]
        if counts["open"] == 0 and total >= MIN_ANNOTATIONS:
            params, study_overlap = Round.objects.filter(pk=assignment.round_id).values_list(
                "params", "study__overlap"
            )[0]
            overlap = overlap_of(params) or study_overlap
            if ready(submitted=total, assigned=total, overlap=overlap):
                return ROUND_COMPLETE
    if decided_item_ids([assignment.item_id]):
        return ITEM_DECIDED
    return None


def stored_labels(annotation: Annotation, book: LoadedCodebook) -> list[dict[str, pl.Value]]:
    """An annotation's findings as payload values (category keys, codebook order). Two queries."""
    findings = list(annotation.findings.order_by("number").prefetch_related("values"))
    out: list[dict[str, pl.Value]] = []
    dim_key = {v: k for k, v in book.dimension_ids.items()}
    for finding in findings:
        values: dict[str, list[str] | str] = {}
        for value in finding.values.all():
            key = dim_key.get(value.dimension_id)
            if key is None:
                continue
            if value.pending:
                values[key] = pl.PENDING
            elif value.category_id is not None and value.category_id in book.index.categories:
                chosen = values.setdefault(key, [])
                if isinstance(chosen, list):
                    chosen.append(book.key_of(value.category_id))
        out.append(_ordered_values(values, book))
    return out


def _ordered_values(values: Mapping[str, list[str] | str], book: LoadedCodebook) -> dict[str, pl.Value]:
    ordered: dict[str, pl.Value] = {}
    for info in book.schema.dimensions:
        value = values.get(info.key)
        if value == pl.PENDING:
            ordered[info.key] = pl.PENDING
        elif isinstance(value, list) and value:
            order = {key: i for i, key in enumerate(info.categories)}
            ordered[info.key] = tuple(sorted(dict.fromkeys(value), key=lambda k: order.get(k, len(order))))
    return ordered


# --- Rounds: sample, add by hand or filter, screen ----------------------------------------------------


def lock_study(study: Study) -> Study:
    return Study.objects.select_for_update().get(pk=study.pk)
