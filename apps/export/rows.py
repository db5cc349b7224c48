"""The database read as plain export records, in chunks (`tables.ExportItem` and friends).

Memory is bounded by the chunk size, whatever the study's size: items are read in primary-key order with
keyset pagination (``id > last``; without annotations the current decisions, joined to their items, are
the paginated table; with them every item of the range is read and those without a decision or labels
are dropped in Python), and each chunk costs a constant number of queries (items or decisions; decision
findings with their values; with annotations, assignments with their annotations and the annotations'
findings with their values), each selected by the chunk's range of item ids: ``.values_list`` rows,
never model instances. Category ids
become keys and paths through one `CodebookIndex` read once per export.

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
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from itertools import groupby
from operator import itemgetter
from typing import Any

from django.db.models import Exists, OuterRef, Q, QuerySet
from django.db.models import Value as SQLValue

from apps.accounts.models import Study
from apps.adjudication.models import Decision, DecisionFinding, DecisionValue
from apps.annotation.models import Assignment, Finding
from apps.corpus.models import Item
from apps.taxonomy.index import CodebookIndex

from .counts import CountAccumulator, CountNode, CountTable, DimensionTree
from .tables import (
    PENDING_VALUE,
    AnnotationRecord,
    DecisionRecord,
    ExportItem,
    FindingRecord,
    Value,
)

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
Label = tuple[int, int | None, int | None, bool]
"""A label value as read: (dimension id, category id or None, original category id, pending)."""


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


class ValueCache:
    """Category id → `tables.Value` at one level of the tree, and the codebook's display order."""

    def __init__(self, index: CodebookIndex, level: int | None = None) -> None:
        self.index = index
        self.level = level
        self.dimension_keys = {d.id: d.key for d in index.all_dimensions}
        self.dimension_order = {d.key: position for position, d in enumerate(index.all_dimensions)}
        self.category_order: dict[int, int] = {}
        for dimension in index.all_dimensions:
            for position, category_id in enumerate(index.tree(dimension.key, active_only=False)):
                self.category_order[category_id] = position
        self._values: dict[tuple[int, int | None], Value] = {}
        self._findings: dict[tuple[Label, ...], dict[str, tuple[Value, ...]]] = {}
        self._dimension_values: dict[tuple[str, tuple[Value, ...]], tuple[Value, ...]] = {}

    def value(self, category_id: int, original_id: int | None = None) -> Value:
        cached = self._values.get((category_id, original_id))
        if cached is None:
            shown = category_id
            if self.level is not None:
                shown = self.index.ancestor_at_depth(category_id, self.level)
            original = ""
            if original_id is not None and original_id != category_id:
                original = self.index.category(original_id).key
            cached = Value(self.index.category(shown).key, self.index.path(shown), original)
            self._values[(category_id, original_id)] = cached
        return cached

    def finding(self, number: int, values: Sequence[Label]) -> FindingRecord:
        """A finding from its label values: dimensions in codebook order, each one's values in tree order
        (duplicates, which a level creates, dropped). Findings with the same values share one mapping."""
        as_read = tuple(values)
        ordered = self._findings.get(as_read)
        if ordered is not None:
            return FindingRecord(number, ordered)
        key = tuple(sorted(values, key=_label_key))
        ordered = self._findings.get(key)
        if ordered is None:
            per_dimension: dict[str, list[tuple[int, Value]]] = defaultdict(list)
            for dimension_id, category_id, original_id, pending in key:
                name = self.dimension_keys[dimension_id]
                if pending or category_id is None:
                    per_dimension[name].append((-1, PENDING_VALUE))
                else:
                    value = self.value(category_id, original_id)
                    per_dimension[name].append((self.category_order[category_id], value))
            ordered = {}
            for name in sorted(per_dimension, key=lambda k: self.dimension_order[k]):
                chosen = tuple(dict.fromkeys(value for _, value in sorted(per_dimension[name], key=_first)))
                # One tuple object per distinct value list, so writers can cache what they make of it.
                ordered[name] = self._dimension_values.setdefault((name, chosen), chosen)
            self._findings[key] = ordered
        self._findings[as_read] = ordered
        return FindingRecord(number, ordered)


def _first(pair: tuple[int, Value]) -> int:
    return pair[0]


def _label_key(label: Label) -> tuple[int, int, int, bool]:
    dimension_id, category_id, original_id, pending = label
    return (dimension_id, category_id or 0, original_id or 0, pending)


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

    def _decisions(self) -> QuerySet[Decision]:
        """The study's current decisions that match the filters (the item's source included)."""
        decisions = Decision.objects.filter(study=self.study, is_current=True)
        if self.options.provenance is not None:
            decisions = decisions.filter(provenance=self.options.provenance)
        if self.options.round is not None:
            decisions = decisions.filter(round__number=self.options.round)
        if self.options.source is not None:
            decisions = decisions.filter(item__source=self.options.source)
        return decisions

    def _assignments(self) -> QuerySet[Assignment]:
        assignments = Assignment.objects.filter(study=self.study)
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
                rows = list(
                    self._decisions()
                    .filter(item_id__gt=last)
                    .order_by("item_id")
                    .values_list("item_id", "item__url", "item__title", "item__source", *_DECISION_FIELDS)[
                        : self.chunk_size
                    ]
                )
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
                heads = {
                    row[0]: row[1:]
                    for row in self._decisions()
                    .filter(item_id__gte=first, item_id__lte=last)
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
            .annotate(pending=SQLValue(False))
            .values_list(
                "decision_id",
                "number",
                "values__dimension_id",
                "values__category_id",
                "values__original_category_id",
                "pending",
            )
        )
        findings = _group_findings(rows)
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
                findings=tuple(
                    self.values.finding(number, values)
                    for number, values in sorted(findings.get(decision_id, {}).items())
                ),
            )
        return out

    def _read_annotations(self, first: int, last: int) -> dict[int, list[AnnotationRecord]]:
        heads = list(
            self._assignments()
            .filter(item_id__gte=first, item_id__lte=last)
            .order_by("item_id", "round__number", "annotator__username", "id")
            .values_list(
                "item_id",
                "annotator__username",
                "round__number",
                "annotation__id",
                "annotation__memo",
                "annotation__submitted_at",
            )
        )
        findings: dict[int, dict[int, tuple[Label, ...]]] = {}
        submitted = [h[3] for h in heads if h[5] is not None]
        if submitted:
            rows = (
                Finding.objects.filter(
                    # The id range lets the database walk the (annotation, number) index.
                    annotation_id__gte=min(submitted),
                    annotation_id__lte=max(submitted),
                    annotation__assignment__study=self.study,
                    annotation__assignment__item_id__gte=first,
                    annotation__assignment__item_id__lte=last,
                    annotation__submitted_at__isnull=False,
                )
                .order_by("annotation_id", "number")
                .values_list(
                    "annotation_id",
                    "number",
                    "values__dimension_id",
                    "values__category_id",
                    "values__original_category_id",
                    "values__pending",
                )
            )
            findings = _group_findings(rows)
        out: dict[int, list[AnnotationRecord]] = defaultdict(list)
        for item_id, username, round_number, annotation_id, memo, submitted_at in heads:
            done = submitted_at is not None
            out[item_id].append(
                AnnotationRecord(
                    annotator=username,
                    round=round_number,
                    status="submitted" if done else "open",
                    memo=(memo or "") if done else "",
                    submitted_at=iso(submitted_at),
                    findings=tuple(
                        self.values.finding(number, values)
                        for number, values in sorted(findings.get(annotation_id, {}).items())
                    )
                    if done
                    else (),
                )
            )
        return out


def _group_findings(rows: Iterable[tuple[Any, ...]]) -> dict[int, dict[int, tuple[Label, ...]]]:
    """Rows (owner id, finding number, *`Label`) ordered by owner and number → owner id → finding number
    → its labels (a finding without values has an empty tuple: its row's label columns are null)."""
    out: dict[int, dict[int, tuple[Label, ...]]] = defaultdict(dict)
    for (owner, number), group in groupby(rows, key=itemgetter(0, 1)):
        # Columns 2-5 are already a Label (pending is a boolean column or a boolean constant).
        out[owner][number] = tuple(row[2:] for row in group if row[2] is not None)
    return out


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
