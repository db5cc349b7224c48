"""Reads of the adjudication app: one item's labels as plain findings, decisions as findings, the queue
(each round's discussion outcomes are in `outcomes.py`).

Every function here reads; nothing writes. Findings are the `consolidation` module's plain form
(dimension key → frozenset of category ids, or PENDING). Access control stays with the caller: these
functions take an item or a study the caller already fetched through `access_study`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, NamedTuple

from django.db.models import Count, Exists, F, OuterRef, Q, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce

from apps.accounts.models import Study, User
from apps.annotation.completion import ready
from apps.annotation.models import Annotation, Assignment, AssignmentStatus, Finding, LabelValue, Round
from apps.core import generations
from apps.corpus.models import Item, item_text_fields
from apps.taxonomy.index import CodebookIndex
from apps.taxonomy.models import Category, CategoryStatus

from . import outcomes
from .consolidation import PENDING, Findings
from .consolidation import Value as FindingValue
from .models import Decision, DecisionValue, Review, ReviewState


def merged_targets(study_id: int, *, index: CodebookIndex | None = None) -> dict[int, int]:
    """Every merged category of the study → the active category its merges end in (chains followed).
    Read from `index` (the study's current codebook) when given, else one query."""
    if index is not None:
        rows = {
            c.id: c.merged_into_id
            for c in index.categories.values()
            if c.status == CategoryStatus.MERGED and c.merged_into_id is not None
        }
    else:
        rows = dict(
            Category.objects.filter(
                dimension__codebook__study_id=study_id,
                status=CategoryStatus.MERGED,
                merged_into__isnull=False,
            ).values_list("id", "merged_into_id")
        )
    resolved: dict[int, int] = {}
    for start in rows:
        seen = {start}
        target = rows[start]
        while target in rows and target not in seen:  # a cycle would be a codebook bug; stop, don't hang
            seen.add(target)
            target = rows[target]
        resolved[start] = target
    return resolved


@dataclass
class ItemLabels:
    """The labels of one item in its round: the round of its latest assignments.

    `assignments` are that round's assignments in a stable order (by id); `annotations` the submitted
    annotations among them, in the same order, and `findings` their labels (`consolidation` form), with
    merged categories already replaced by their targets.
    """

    item: Item
    round_id: int | None
    assignments: list[Assignment] = field(default_factory=list)
    annotations: list[Annotation] = field(default_factory=list)
    findings: list[Findings] = field(default_factory=list)
    finding_numbers: list[list[int]] = field(default_factory=list)
    follow: dict[int, int] = field(default_factory=dict)

    @property
    def k(self) -> int:
        return len(self.assignments)

    @property
    def submitted(self) -> int:
        return len(self.annotations)

    @property
    def complete(self) -> bool:
        """Every assignment of the round is submitted (and there is at least one)."""
        return bool(self.assignments) and self.submitted == self.k

    @property
    def overlap(self) -> int:
        """The round's overlap: as it was assigned, else the study's."""
        recorded = self.assignments[0].round.assigned_overlap if self.assignments else None
        return recorded if recorded is not None else self.item.study.overlap

    @property
    def consolidable(self) -> bool:
        """Complete, with at least two annotations and at least the round's overlap
        (`completion.ready`): only then is the item consolidated."""
        return ready(submitted=self.submitted, assigned=self.k, overlap=self.overlap)


def item_labels(
    item: Item,
    *,
    remap: Mapping[int, int] | None = None,
    label_remap: Mapping[int, int] | None = None,
    index: CodebookIndex | None = None,
    complete_only: bool = False,
) -> ItemLabels:
    """Load the item's labels in four queries (assignments, merged categories, label values, findings).

    `remap` maps category ids to the ids they now stand for (a merge in progress, before the label rows
    moved); `label_remap` does the same per LabelValue id (a split). Merged categories always follow
    their merge. With `index` (the study's current codebook) the merged categories are read from it; with
    `complete_only`, an item whose round is not all submitted gets no findings (one query in all).
    """
    assignments = list(  # gold checks are answers scored against the decision, never consolidated
        Assignment.objects.reliability()
        .filter(item=item)
        .select_related("round", "annotator", "annotation")
        .order_by("-round__number", "id")
    )
    if not assignments:
        return ItemLabels(item, None)
    round_id = assignments[0].round_id
    in_round = sorted((a for a in assignments if a.round_id == round_id), key=lambda a: a.pk)
    annotations = [
        a.annotation
        for a in in_round
        if a.status == AssignmentStatus.SUBMITTED
        and hasattr(a, "annotation")
        and a.annotation.submitted_at is not None
    ]
    if complete_only and len(annotations) < len(in_round):
        return ItemLabels(item, round_id, assignments=in_round, annotations=annotations)
    follow = merged_targets(item.study_id, index=index)
    follow.update(remap or {})
    ids = [a.pk for a in annotations]
    values = LabelValue.objects.filter(finding__annotation__in=ids).values_list(
        "id", "finding__annotation_id", "finding__number", "dimension__key", "category_id", "pending"
    )
    # A finding with no values at all still counts (as an empty finding): load the numbers too.
    numbers = Finding.objects.filter(annotation__in=ids).values_list("annotation_id", "number")
    return _assemble(item, round_id, in_round, annotations, values, numbers, follow, label_remap)


def _assemble(
    item: Item,
    round_id: int,
    in_round: list[Assignment],
    annotations: list[Annotation],
    values: Iterable[tuple[int, int, int, str, int | None, bool]],
    numbers: Iterable[tuple[int, int]],
    follow: dict[int, int],
    label_remap: Mapping[int, int] | None,
) -> ItemLabels:
    """`ItemLabels` from the label rows (value id, annotation id, finding number, dimension key, category
    id, pending) and the finding rows (annotation id, finding number) of `annotations`."""
    per_annotation: dict[int, dict[int, dict[str, FindingValue]]] = {a.pk: {} for a in annotations}
    found: dict[int, set[int]] = {a.pk: set() for a in annotations}
    for value_id, annotation_id, number, dimension, category_id, pending in values:
        finding = per_annotation[annotation_id].setdefault(number, {})
        found[annotation_id].add(number)
        if pending:
            finding[dimension] = PENDING
            continue
        category = (label_remap or {}).get(value_id, category_id)
        # a value is pending or names a category (labelvalue_category_xor_pending)
        assert category is not None
        category = _follow(category, follow)
        previous = finding.get(dimension)
        finding[dimension] = frozenset({category}) | (previous if isinstance(previous, frozenset) else set())
    for annotation_id, number in numbers:
        per_annotation[annotation_id].setdefault(number, {})
        found[annotation_id].add(number)
    return ItemLabels(
        item,
        round_id,
        assignments=in_round,
        annotations=annotations,
        findings=[[per_annotation[a.pk][n] for n in sorted(per_annotation[a.pk])] for a in annotations],
        finding_numbers=[sorted(found[a.pk]) for a in annotations],
        follow=follow,
    )


class RoundLabel(NamedTuple):
    """One row of a round's labels as the submission's consolidation reads them (`services.sql`): an
    assignment, its annotation (None when not started) and one value of one of its findings (`number` None
    for an annotation without findings, the value's fields None for a finding without values)."""

    assignment: Assignment
    annotation: Annotation | None
    number: int | None
    value_id: int | None
    dimension_id: int | None
    category_id: int | None
    pending: bool | None


def labels_from_rows(
    item: Item, round_id: int, index: CodebookIndex, rows: Iterable[RoundLabel]
) -> ItemLabels:
    """`item_labels(item, index=index)` for the round `round_id` known to be the item's latest, from its
    label rows ordered by assignment, finding number and value; the assignments come without their related
    rows (round, annotator) loaded."""
    dimension_keys = {d.id: d.key for d in index.all_dimensions}
    in_round: dict[int, Assignment] = {}
    annotations: dict[int, Annotation] = {}
    values: list[tuple[int, int, int, str, int | None, bool]] = []
    numbers: list[tuple[int, int]] = []
    for row in rows:
        assignment = row.assignment
        if assignment.pk not in in_round:
            in_round[assignment.pk] = assignment
            if row.annotation is not None:
                row.annotation.assignment = assignment
                if (
                    assignment.status == AssignmentStatus.SUBMITTED
                    and row.annotation.submitted_at is not None
                ):
                    annotations[assignment.pk] = row.annotation
        annotation = annotations.get(assignment.pk)
        if annotation is None or row.number is None:
            continue
        numbers.append((annotation.pk, row.number))
        if row.value_id is not None:
            assert row.dimension_id is not None  # a label value has a dimension
            dimension = dimension_keys[row.dimension_id]
            values.append(
                (row.value_id, annotation.pk, row.number, dimension, row.category_id, bool(row.pending))
            )
    follow = merged_targets(item.study_id, index=index)
    return _assemble(
        item, round_id, list(in_round.values()), list(annotations.values()), values, numbers, follow, None
    )


def _follow(category_id: int, targets: Mapping[int, int]) -> int:
    seen: set[int] = set()
    while category_id in targets and category_id not in seen:
        seen.add(category_id)
        category_id = targets[category_id]
    return category_id


def decision_findings(
    decision: Decision, *, remap: Mapping[int, int] | None = None
) -> list[dict[str, frozenset[int]]]:
    """The decision's gold findings in their stored order (one query)."""
    findings: dict[int, dict[str, frozenset[int]]] = {}
    for number, dimension, category_id in (
        DecisionValue.objects.filter(finding__decision=decision)
        .order_by("finding__number", "id")
        .values_list("finding__number", "dimension__key", "category_id")
    ):
        category_id = (remap or {}).get(category_id, category_id)
        values = findings.setdefault(number, {})
        values[dimension] = values.get(dimension, frozenset()) | {category_id}
    for number in decision.findings.values_list("number", flat=True):
        findings.setdefault(number, {})
    return [findings[n] for n in sorted(findings)]


def current_decision(item: Item) -> Decision | None:
    return Decision.objects.filter(item=item, is_current=True).select_related("decided_by").first()


# --- The queue -----------------------------------------------------------------------------------------

QUEUE_PAGE = 50
CLAIM_TTL = timedelta(minutes=10)
SORTS = ("oldest", "category")


@dataclass(frozen=True)
class QueueFilters:
    """What the lead narrowed the queue to. Ids are already checked to belong to the study."""

    round_id: int | None = None
    dimension: str | None = None
    category_ids: tuple[int, ...] = ()
    annotators: tuple[int, ...] = ()
    sort: str = "oldest"


def short_of_annotators(study: Study) -> QuerySet[Review]:
    """Items whose every annotator in the round submitted, but too few of them to be consolidated (fewer
    than two, or than the round's overlap: `completion.ready`): never decided automatically, so they wait
    for a lead to decide by hand. Oldest first, with their item."""
    in_round = Assignment.objects.filter(item_id=OuterRef("item_id"), round_id=OuterRef("round_id"))
    return (
        Review.objects.filter(study=study, state=ReviewState.ANNOTATING, round__isnull=False)
        .filter(Exists(in_round))
        .exclude(Exists(in_round.exclude(status=AssignmentStatus.SUBMITTED)))
        .select_related("item", "round")
        .defer(*item_text_fields("item__"))
        .order_by("item_id")
    )


def queue(study: Study, filters: QueueFilters) -> QuerySet[Review]:
    """The open disagreements of the study, filtered and sorted, with `sort_key` annotated for keyset
    pagination (the ordering is always ``(sort_key, item_id)``). The query is one statement whatever the
    filters; `queue_page` adds the prefetch of the annotators."""
    reviews = Review.objects.open_disagreements().filter(study=study)
    if filters.round_id is not None:
        reviews = reviews.filter(round_id=filters.round_id)
    if filters.dimension:
        # disagreeing_dimensions is a JSON list of keys; keys are slugs, so the quoted key as text is exact
        # on both SQLite and PostgreSQL (JSON containment is not available on SQLite).
        reviews = reviews.filter(disagreeing_dimensions__icontains=f'"{filters.dimension}"')
    labels = LabelValue.objects.filter(
        finding__annotation__assignment__item_id=OuterRef("item_id"),
        finding__annotation__assignment__round_id=OuterRef("round_id"),
        finding__annotation__submitted_at__isnull=False,
    )
    if filters.category_ids:
        reviews = reviews.filter(Exists(labels.filter(category_id__in=filters.category_ids)))
    for annotator_id in filters.annotators:
        reviews = reviews.filter(
            Exists(
                Assignment.objects.filter(
                    item_id=OuterRef("item_id"), round_id=OuterRef("round_id"), annotator_id=annotator_id
                )
            )
        )
    if filters.sort == "category":
        first = labels.filter(category__isnull=False)
        if filters.dimension:
            first = first.filter(dimension__key=filters.dimension)
        first_name = first.order_by("category__name", "category_id").values("category__name")[:1]
        reviews = reviews.annotate(sort_key=Coalesce(Subquery(first_name), Value("")))
    else:
        reviews = reviews.annotate(sort_key=F("updated_at"))
    return reviews.order_by("sort_key", "item_id")  # type: ignore[misc]  # sort_key is annotated above


#: What a queue row reads, as columns: a row built as a review, its item, its round and its claimer (204
#: models a page) was a third of the page at 100,000 items. `QueueRow` takes them in this order.
QUEUE_ROW_COLUMNS = (
    *("item_id", "item__url", "item__title", "round__number", "round__name", "round__revealed_at"),
    *("disagreeing_dimensions", "updated_at", "claimed_by_id", "claimed_by__username"),
    *("claimed_by__display_name", "claimed_at", "round_id"),
)


@dataclass(frozen=True)
class QueueRow:
    """One open disagreement as the queue shows it (the page and the API)."""

    item_id: int
    url: str
    title: str  # as stored: "" until the item's text is fetched
    round_number: int | None
    round_name: str
    revealed: bool  # its round was revealed: discussion did not resolve it
    dimensions: list[str]  # the disagreeing dimensions' keys
    updated_at: datetime
    claimed_by: User | None  # name only; whether the claim still counts is `claimer`'s
    claimed_at: datetime | None
    annotators: list[User]
    sort_key: Any

    def claimer(self, now: datetime) -> User | None:
        """The lead whose claim on the review still counts (`claimed_recently`), else None."""
        by = self.claimed_by
        return by if by is not None and claim_counts(by.pk, self.claimed_at, now) else None


def _rows(columns: Iterable[tuple[Any, ...]], keys: dict[int, Any] | None = None) -> list[QueueRow]:
    """`QueueRow`s of `QUEUE_ROW_COLUMNS` (with the sort key last unless `keys` gives it by item id), with
    their annotators read in one query (`_annotators`)."""
    read = list(columns)
    annotators = _annotators([row[0] for row in read])
    rows = []
    for row in read:
        item_id, url, title, number, name, revealed_at, dimensions, updated_at = row[:8]
        by_id, username, display_name, claimed_at, round_id = row[8:13]
        claimed_by = None if by_id is None else User(id=by_id, username=username, display_name=display_name)
        rows.append(
            QueueRow(
                item_id, url, title, number, name or "", revealed_at is not None, list(dimensions or []),
                updated_at, claimed_by, claimed_at, annotators[(item_id, round_id)],
                keys[item_id] if keys is not None else row[13],
            )
        )  # fmt: skip
    return rows


def queue_rows(
    study: Study, filters: QueueFilters, after: tuple[Any, int] | None, size: int = QUEUE_PAGE
) -> tuple[list[QueueRow], tuple[Any, int] | None]:
    """A page of the study's queue with these filters after the cursor `after`, and the next cursor: read
    by id from the order kept in the cache (`queue_order`) when there is one and it holds the cursor,
    else by the SQL keyset (`queue_page`; a cursor the recounted order lacks is followed there)."""
    order = queue_order(study, filters)
    start = None if order is None else (0 if after is None else _position_after(order, after[1]))
    if order is None or start is None:
        return queue_page(queue(study, filters), after, size)
    window = order[start : start + size + 1]
    keys = {item_id: key for key, item_id in window[:size]}  # not the statement's (a subquery a row: 3-4 ms)
    # Read by id, still checked to be open (one decided since is left out). Not the filters again: the order
    # is current (a write to the study replaces its cache tokens), and compiling their EXISTS was 5 ms a page
    selected = Review.objects.open_disagreements().filter(study=study, item_id__in=list(keys))
    found = {row[0]: row for row in selected.values_list(*QUEUE_ROW_COLUMNS)}
    rows = _rows((found[item_id] for item_id in keys if item_id in found), keys)
    return rows, (window[size - 1] if len(window) > size else None)


def queue_order(study: Study, filters: QueueFilters) -> list[tuple[Any, int]] | None:
    """The filtered queue's order, (sort_key, item_id) of every row, kept in the cache while nothing in the
    study changes (`apps.core.generations.study_figures`), for the filters whose statement computes a key
    or a test for every open disagreement of the study: a category sort, a dimension, categories, an
    annotator pair (50-100 ms a page at 100,000 items; docs/performance.md). None for the plain queue,
    oldest first in a round or in all, which the `review_queue` index serves page by page."""
    if filters.sort != "category" and not (filters.dimension or filters.category_ids or filters.annotators):
        return None

    def compute() -> list[tuple[Any, int]]:
        rows = queue(study, filters).values_list("sort_key", "item_id")  # type: ignore[misc]  # annotated
        return [(key, item_id) for key, item_id in rows]

    return generations.study_figures(study, f"adjudication.queue_order:{filters!r}", compute)


def queue_page(
    reviews: QuerySet[Review], after: tuple[Any, int] | None, size: int = QUEUE_PAGE
) -> tuple[list[QueueRow], tuple[Any, int] | None]:
    """One page of `reviews` (`queue`) after the keyset cursor `after` = (sort_key, item_id), and the
    cursor of the next page (None on the last). Two queries whatever the page size: the page, and its
    assignments. The `>=` lets the key's index bound the walk (the OR alone was a filter over 15,000 rows
    to reach a page at 90 %: 7 ms at 100k)."""
    selected = reviews
    if after is not None:
        key, pk = after
        selected = selected.filter(
            Q(sort_key__gte=key), Q(sort_key__gt=key) | Q(sort_key=key, item_id__gt=pk)
        )
    page = list(selected.values_list(*QUEUE_ROW_COLUMNS, "sort_key")[: size + 1])
    rows = _rows(page[:size])
    return rows, ((rows[-1].sort_key, rows[-1].item_id) if len(page) > size and rows else None)


def _position_after(order: list[tuple[Any, int]], item_id: int) -> int | None:
    return next((position + 1 for position, (_, listed) in enumerate(order) if listed == item_id), None)


def _annotators(item_ids: list[int]) -> dict[tuple[int, int | None], list[User]]:
    """The annotators of these items per (item, round), in assignment order: one query of plain values, and
    one (name-only) User per person, however many rows they annotated."""
    annotators: dict[tuple[int, int | None], list[User]] = defaultdict(list)
    people: dict[int, User] = {}
    for item_id, round_id, user_id, username, display_name in (
        Assignment.objects.filter(item_id__in=item_ids)
        .order_by("id")
        .values_list("item_id", "round_id", "annotator_id", "annotator__username", "annotator__display_name")
    ):
        if user_id not in people:
            people[user_id] = User(id=user_id, username=username, display_name=display_name)
        annotators[(item_id, round_id)].append(people[user_id])
    return annotators


def counts_per_round(study: Study) -> list[tuple[int | None, str, int]]:
    """Open disagreements per round as (round id, label, count), in round order (two queries; the count
    reads the `review_state_round` index only)."""
    counts = dict(
        Review.objects.open_disagreements()
        .filter(study=study)
        .order_by()
        .values_list("round_id")
        .annotate(n=Count("*"))
        .values_list("round_id", "n")
    )
    rounds = {pk: (number, name) for pk, number, name in Round.objects.filter(pk__in=[r for r in counts if r])
              .values_list("pk", "number", "name")}  # fmt: skip
    rows = sorted(counts.items(), key=lambda kv: (kv[0] is None, rounds.get(kv[0] or 0, (0, ""))[0]))
    out: list[tuple[int | None, str, int]] = []
    for round_id, n in rows:
        number, name = rounds.get(round_id or 0, (None, ""))
        out.append((round_id, Round.display_name(name, number) if number is not None else "No round", n))
    return out


@dataclass(frozen=True)
class QueueOverview:
    """What the disagreement queue shows besides its page: the filter form's rounds (id, label) and
    annotators, the open disagreements per round, the discussion outcomes, and the first items waiting
    for a hand decision."""

    rounds: list[tuple[int, str]]
    annotators: list[tuple[int, str]]
    counts: list[tuple[int | None, str, int]]
    discussion: list[dict[str, Any]]
    short: list[Review]


def queue_overview(study: Study, short: int) -> QueueOverview:
    """`QueueOverview` of `study` (`short`: how many waiting items), from the cache while nothing in the
    study has changed (`apps.core.generations.study_figures`): six queries over the study's reviews,
    decisions and assignments on every view of the queue and every change of its filters."""

    def compute() -> QueueOverview:
        rounds = Round.objects.filter(study=study).values_list("pk", "number", "name")
        return QueueOverview(
            rounds=[(pk, Round.display_name(name, number)) for pk, number, name in rounds],
            annotators=annotators_of(study),
            counts=counts_per_round(study),
            discussion=outcomes.discussion_outcomes(study),
            short=list(short_of_annotators(study)[:short]),
        )

    return generations.study_figures(study, f"adjudication.queue_overview:{short}", compute)


def annotators_of(study: Study) -> list[tuple[int, str]]:
    """Everyone who has an assignment in the study, by username, as (id, display name). One query that
    probes the assignments once per user instead of reading all of the study's assignments."""
    has_work = Assignment.objects.filter(study=study, annotator=OuterRef("pk"))
    return [
        (pk, name or username)
        for pk, username, name in User.objects.filter(Exists(has_work))
        .order_by("username")
        .values_list("pk", "username", "display_name")
    ]


def history(item: Item) -> list[Decision]:
    """Every decision on the item, newest first, with who decided and the annotations it came from."""
    return list(
        Decision.objects.filter(item=item)
        .select_related("decided_by", "supersedes", "round")
        .prefetch_related("source_annotations__assignment__annotator", "findings__values__category")
        .order_by("-decided_at", "-id")
    )


def claimed_recently(review: Review | None, now: datetime) -> bool:
    """Whether another lead's claim on the review still counts (younger than CLAIM_TTL)."""
    return review is not None and claim_counts(review.claimed_by_id, review.claimed_at, now)


def claim_counts(claimed_by_id: int | None, claimed_at: datetime | None, now: datetime) -> bool:
    """Whether a claim by `claimed_by_id` at `claimed_at` still counts (younger than CLAIM_TTL)."""
    return claimed_by_id is not None and claimed_at is not None and now - claimed_at < CLAIM_TTL
