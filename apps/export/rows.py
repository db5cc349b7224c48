"""The database read as plain export records, in chunks (`tables.ExportItem` and friends).

Memory is bounded by the chunk size, whatever the study's size: items are read in primary-key order with
keyset pagination (``id > last``; without annotations the items with a matching current decision, joined
to it, are the paginated table; with them every item of the range is read and those without a decision
or labels are dropped in Python), and each chunk costs a constant number of queries (decided items, or
items and their decisions; the decisions' findings; with annotations, the assignments, their
annotations and the annotations' findings): ``.values_list`` rows, never model instances. Decisions and
assignments are selected by the chunk's range of item ids, annotations and findings by the ids just
read (see `StudyReader._read_annotations` for why).

A finding comes as one row whose labels the database aggregates into one text (`findings.labels_text`),
which `findings.ValueCache` turns into a record once per distinct text: the Python work is per distinct
finding, not per label value. Category ids become keys and paths through one `CodebookIndex` read once
per export.

Item order is primary-key order: the order the items were imported, which `package.import_study`
recreates, so a study exported, imported and exported again lists its rows in the same order.

Which items are read (`ExportOptions`, docs/export.md):

* without `raw`: items whose current decision matches the filters (``round`` = the decision's round,
  ``provenance``), of the ``source`` asked for;
* with `raw`: also the items that have a submitted annotation (of round ``round`` when given); with a
  ``provenance`` filter only decided items qualify, since provenance belongs to decisions;
* `include_open` (the replication package): every item with a decision or an assignment, open
  assignments included (as ``status="open"`` records without labels).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from django.db.models import Exists, OuterRef, Q, QuerySet

from apps.accounts.models import Study
from apps.adjudication.models import Decision, DecisionFinding, DecisionValue
from apps.annotation.models import Annotation, Assignment, Finding
from apps.corpus.models import Item
from apps.taxonomy.index import CodebookIndex

from .counts import CountAccumulator, CountNode, CountTable, DimensionTree
from .findings import ValueCache, labels_text
from .tables import AnnotationRecord, DecisionRecord, ExportItem, FindingRecord

DEFAULT_CHUNK_SIZE = 2000
_DECISION_FIELDS = (
    "id",
    "round__number",
    "provenance",
    "rationale",
    "decided_by__username",
    "decided_at",
    "codebook_version",
)


@dataclass(frozen=True)
class ExportOptions:
    """What to export. Validated by `services.parse_options`; stored as `ExportJob.options`."""

    format: str
    raw: bool = False
    round: int | None = None
    provenance: str | None = None
    source: str | None = None
    level: int | None = None

    def as_json(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if k != "format"}

    @classmethod
    def from_json(cls, format: str, data: dict[str, Any]) -> ExportOptions:
        known = {"raw", "round", "provenance", "source", "level"}
        return cls(format=format, **{k: v for k, v in data.items() if k in known})


def iso(value: datetime | None) -> str:
    """A timestamp as ISO 8601 ("" for None): what the files hold."""
    return value.isoformat() if value is not None else ""


class StudyReader:
    """Reads one study's export records chunk by chunk (module docstring)."""

    def __init__(
        self,
        study: Study,
        index: CodebookIndex,
        options: ExportOptions,
        *,
        include_open: bool = False,
        chunk_size: int = DEFAULT_CHUNK_SIZE,
    ) -> None:
        if chunk_size < 1:
            raise ValueError(f"chunk_size must be at least 1, got {chunk_size}")
        self.study = study
        self.index = index
        self.options = options
        self.raw = options.raw or include_open
        self.include_open = include_open
        self.chunk_size = chunk_size
        self.values = ValueCache(index, options.level)

    # --- which rows ------------------------------------------------------------------------------------

    def _decisions(self, *, by_source: bool = True) -> QuerySet[Decision]:
        """The study's current decisions that match the filters (the item's source included unless not
        `by_source`)."""
        decisions = Decision.objects.filter(study=self.study, is_current=True)
        if self.options.provenance is not None:
            decisions = decisions.filter(provenance=self.options.provenance)
        if self.options.round is not None:
            decisions = decisions.filter(round__number=self.options.round)
        if by_source and self.options.source is not None:
            decisions = decisions.filter(item__source=self.options.source)
        return decisions

    def _decided_items(self, last: int) -> list[tuple[Any, ...]]:
        """The next `chunk_size` items after id `last` whose current decision matches the filters: (item
        id, url, title, source, *`_DECISION_FIELDS` of the decision), in item id order.

        The id bound is stated on both sides of the join (items and decisions): PostgreSQL merge-joins the
        two in id order, and a side without the bound is scanned from its first row for every chunk,
        which made the export quadratic in the study's size. From the decisions' side Django folds an
        item id condition into ``decision.item_id``, so the query starts from the items.
        """
        current: dict[str, Any] = {
            "decisions__study": self.study,
            "decisions__is_current": True,
            "decisions__item_id__gt": last,
        }
        if self.options.provenance is not None:
            current["decisions__provenance"] = self.options.provenance
        if self.options.round is not None:
            current["decisions__round__number"] = self.options.round
        items = Item.objects.filter(study=self.study, id__gt=last)
        if self.options.source is not None:
            items = items.filter(source=self.options.source)
        # One filter() call, so that every condition and the columns below share one join to decisions.
        return list(
            items.filter(**current)
            .order_by("id")
            .values_list("id", "url", "title", "source", *(f"decisions__{f}" for f in _DECISION_FIELDS))[
                : self.chunk_size
            ]
        )

    def _assignments(self) -> QuerySet[Assignment]:
        # Gold checks are answers scored against the decision, not labels of the dataset: never exported
        # (docs/quality.md, docs/export.md); the quality report carries them.
        assignments = Assignment.objects.reliability().filter(study=self.study)
        if not self.include_open:
            assignments = assignments.filter(annotation__submitted_at__isnull=False)
        if self.options.round is not None:
            assignments = assignments.filter(round__number=self.options.round)
        return assignments

    @property
    def _gold_only(self) -> bool:
        # Without annotations every exported item has a matching decision: read the decisions directly.
        return not self.raw or self.options.provenance is not None

    def items(self) -> QuerySet[Item]:
        """The items to export (unordered)."""
        items = Item.objects.filter(study=self.study)
        if self.options.source is not None:
            items = items.filter(source=self.options.source)
        decided = Exists(self._decisions().filter(item_id=OuterRef("pk")))
        if self._gold_only:
            return items.filter(decided)
        labelled = Exists(self._assignments().filter(item_id=OuterRef("pk")))
        return items.filter(Q(decided) | Q(labelled))

    def count(self) -> int:
        if self._gold_only:
            return self._decisions().count()
        return self.items().count()

    # --- reading ---------------------------------------------------------------------------------------

    def chunks(self) -> Iterator[list[ExportItem]]:
        """The export records, `chunk_size` items at a time, in primary-key order of the items.

        Each chunk is a range of item ids; the decisions, findings and annotations of the chunk are read
        with that range (``first <= item_id <= last``) rather than a list of ids, which keeps the
        queries small and cheap to build whatever the chunk size.
        """
        last = 0
        while True:
            heads: dict[int, tuple[Any, ...]] = {}
            if self._gold_only:
                rows = self._decided_items(last)
                items = [row[:4] for row in rows]
                heads = {row[0]: row[4:] for row in rows}
            else:
                # Every item of the range is read and those without a decision or labels are dropped
                # below: cheaper than asking the database to test both for each row.
                candidates = Item.objects.filter(study=self.study)
                if self.options.source is not None:
                    candidates = candidates.filter(source=self.options.source)
                items = list(
                    candidates.filter(id__gt=last)
                    .order_by("id")
                    .values_list("id", "url", "title", "source")[: self.chunk_size]
                )
            if not items:
                return
            first, last = items[0][0], items[-1][0]
            if not self._gold_only:
                # The source filter is left out: `items` holds only items of that source already.
                heads = {
                    row[0]: row[1:]
                    for row in self._decisions(by_source=False)
                    .filter(item_id__gte=first, item_id__lte=last)
                    .order_by()
                    .values_list("item_id", *_DECISION_FIELDS)
                }
            decisions = self._read_decisions(heads, first, last)
            annotations = self._read_annotations(first, last) if self.raw else {}
            if not self._gold_only:
                items = [row for row in items if row[0] in decisions or row[0] in annotations]
                if not items:
                    continue
            yield [
                ExportItem(
                    url=url,
                    title=title,
                    source=source,
                    decision=decisions.get(item_id),
                    annotations=tuple(annotations.get(item_id, ())),
                )
                for item_id, url, title, source in items
            ]

    def __iter__(self) -> Iterator[ExportItem]:
        for chunk in self.chunks():
            yield from chunk

    def _read_decisions(
        self, heads: dict[int, tuple[Any, ...]], first: int, last: int
    ) -> dict[int, DecisionRecord]:
        """Item id → its decision, from the decision rows (`_DECISION_FIELDS`) of items `first`..`last`."""
        if not heads:
            return {}
        decision_ids = [head[0] for head in heads.values()]
        rows = (
            DecisionFinding.objects.filter(
                # The id range lets the database walk the (decision, number) index instead of the table.
                decision_id__gte=min(decision_ids),
                decision_id__lte=max(decision_ids),
                decision__study=self.study,
                decision__is_current=True,
                decision__item_id__gte=first,
                decision__item_id__lte=last,
            )
            .order_by("decision_id", "number")
            .values("decision_id", "number")
            .annotate(labels=labels_text("values", pending=False))
            .values_list("decision_id", "number", "labels")
        )
        findings = self._group_findings(rows)
        out = {}
        for item_id, head in heads.items():
            decision_id, round_number, provenance, rationale, username, at, version = head
            out[item_id] = DecisionRecord(
                round=round_number,
                provenance=provenance,
                decided_by=username or "",
                decided_at=iso(at),
                rationale=rationale,
                codebook_version=version,
                findings=findings.get(decision_id, ()),
            )
        return out

    def _group_findings(self, rows: Iterable[tuple[int, int, str]]) -> dict[int, tuple[FindingRecord, ...]]:
        """Rows (owner id, finding number, `labels_text`) ordered by owner and number → owner id → its
        findings in number order."""
        out: dict[int, list[FindingRecord]] = defaultdict(list)
        finding = self.values.finding_from_text
        for owner, number, text in rows:
            out[owner].append(finding(number, text))
        return {owner: tuple(findings) for owner, findings in out.items()}

    def _read_annotations(self, first: int, last: int) -> dict[int, list[AnnotationRecord]]:
        """Item id → its assignments (all with `include_open`, else those with a submitted annotation) as
        records, for the items `first`..`last`, in (round, annotator) order.

        The annotations are read by their assignments' ids and the findings by their annotations' ids
        (lists, in batches of `ID_BATCH`), which the database looks up in the one-to-one and (annotation,
        number) indexes. Joined to the assignments of an id range instead, PostgreSQL hashes those and
        scans the annotations of every study, for every chunk.
        """
        assignments = Assignment.objects.reliability().filter(  # never gold checks (`_assignments`)
            study=self.study, item_id__gte=first, item_id__lte=last
        )
        if self.options.round is not None:
            assignments = assignments.filter(round__number=self.options.round)
        heads = list(
            assignments.order_by("item_id", "round__number", "annotator__username", "id").values_list(
                "id", "item_id", "annotator__username", "round__number"
            )
        )
        if not heads:
            return {}
        annotations: dict[int, tuple[int, str, datetime | None]] = {}
        for batch in _batches([head[0] for head in heads]):
            annotations.update(
                (row[0], row[1:])
                for row in Annotation.objects.filter(assignment_id__in=batch).values_list(
                    "assignment_id", "id", "memo", "submitted_at"
                )
            )
        findings: dict[int, tuple[FindingRecord, ...]] = {}
        submitted = sorted(pk for pk, _, at in annotations.values() if at is not None)
        for batch in _batches(submitted):
            findings.update(
                self._group_findings(
                    Finding.objects.filter(annotation_id__in=batch)
                    .order_by("annotation_id", "number")
                    .values("annotation_id", "number")
                    .annotate(labels=labels_text("values", pending=True))
                    .values_list("annotation_id", "number", "labels")
                )
            )
        out: dict[int, list[AnnotationRecord]] = defaultdict(list)
        for assignment_id, item_id, username, round_number in heads:
            annotation_id, memo, submitted_at = annotations.get(assignment_id, (0, "", None))
            done = submitted_at is not None
            if not done and not self.include_open:
                continue
            out[item_id].append(
                AnnotationRecord(
                    annotator=username,
                    round=round_number,
                    status="submitted" if done else "open",
                    memo=(memo or "") if done else "",
                    submitted_at=iso(submitted_at),
                    findings=findings.get(annotation_id, ()) if done else (),
                )
            )
        return out


ID_BATCH = 5000
"""The most ids one query of `StudyReader` lists (SQLite allows 32,766 parameters per query)."""


def _batches(ids: list[int], size: int = ID_BATCH) -> Iterator[list[int]]:
    for start in range(0, len(ids), size):
        yield ids[start : start + size]


# --- Taxonomy counts ----------------------------------------------------------------------------------


def dimension_trees(index: CodebookIndex) -> list[DimensionTree]:
    """The active dimensions' full category trees (every status) for `counts.CountAccumulator`."""
    trees = []
    for dimension in index.dimensions:
        tree = index.tree(dimension.key, active_only=False)
        nodes = []
        for category_id in tree:
            info = index.categories[category_id]
            parent = index.categories[info.parent_id].key if info.parent_id is not None else None
            nodes.append(CountNode(info.key, info.name, parent, info.is_active))
        trees.append(DimensionTree(dimension.key, dimension.name, dimension.multiple, tuple(nodes)))
    return trees


def count_item(accumulator: CountAccumulator, item: ExportItem, dimensions: set[str]) -> None:
    """Add an item's consolidated findings to the counts (dimensions not in `dimensions` are skipped)."""
    if item.decision is None:
        return
    for finding in item.decision.findings:
        for key, values in finding.values.items():
            if key in dimensions:
                accumulator.add(item.source, key, [v.key for v in values if not v.pending])


def gold_count_tables(
    study: Study, index: CodebookIndex, source_labels: dict[str, str], *, chunk_size: int = 20_000
) -> list[CountTable]:
    """The taxonomy count tables of the study's current decisions, from one streamed query over their
    values (finding, item source, dimension, category), without building export records."""
    trees = dimension_trees(index)
    accumulator = CountAccumulator(trees)
    wanted = {tree.key for tree in trees}
    keys = {d.id: d.key for d in index.all_dimensions}
    rows = (
        DecisionValue.objects.filter(finding__decision__study=study, finding__decision__is_current=True)
        .order_by("finding_id")
        .values_list("finding_id", "finding__decision__item__source", "dimension_id", "category_id")
        .iterator(chunk_size=chunk_size)
    )
    current: int | None = None
    source = ""
    chosen: dict[str, list[str]] = defaultdict(list)

    def flush() -> None:
        for key, values in chosen.items():
            if key in wanted:
                accumulator.add(source, key, values)
        chosen.clear()

    for finding_id, item_source, dimension_id, category_id in rows:
        if finding_id != current:
            flush()
            current, source = finding_id, item_source
        chosen[keys[dimension_id]].append(index.categories[category_id].key)
    flush()
    return accumulator.tables(source_labels)
