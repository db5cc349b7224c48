"""The study read into the plain inputs of `saturation` and `crosstab` (docs/paper.md).

Reads only; every query is scoped to one study. Raises `PaperError` (a ValueError) with a message in the
person's terms for an unknown dimension, field, annotator or a bad level.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import Min, QuerySet

from apps.accounts.models import Study
from apps.adjudication.models import DecisionValue
from apps.annotation.models import Annotation, LabelValue
from apps.corpus.models import Item
from apps.taxonomy.index import CodebookIndex, UnknownDimensionError
from apps.taxonomy.models import ChangeKind, CodebookChange

from . import crosstab as ct
from . import saturation as sat

GOLD = "gold"
ITEM_FIELDS = ("source", "round", "framework", "platform", "repository")
"""The item fields offered on the page; any key of an item's metadata works on the command line."""

CREATING_CHANGES = {
    ChangeKind.ADD: "codebook change",
    ChangeKind.SPLIT: "codebook change",
    ChangeKind.PROPOSE: "proposal",
    ChangeKind.ACCEPT: "proposal",
}


class PaperError(ValueError):
    """A request the study's data cannot answer; the message names the problem."""


def dimension_of(index: CodebookIndex, key: str) -> str:
    try:
        return index.dimension(key).key
    except UnknownDimensionError:
        known = ", ".join(d.key for d in index.dimensions) or "none"
        raise PaperError(f"the study has no dimension {key!r} (its dimensions: {known})") from None


def _check_level(level: int | None, what: str) -> None:
    if level is not None and level < 1:
        raise PaperError(f"{what} must be 1 (the top of the tree) or more, got {level}")


# --- Saturation --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CategoryEvent:
    """A category created during the study: when on the curve (items first submitted by then), how."""

    position: int
    category: str
    how: str


@dataclass(frozen=True)
class Saturation:
    dimension: str
    dimension_name: str
    overall: sat.Assessment
    per_annotator: dict[str, sat.Assessment]
    events: tuple[CategoryEvent, ...]


def saturation(
    study: Study,
    dimension_key: str,
    *,
    base: int = sat.DEFAULT_BASE,
    run: int = sat.DEFAULT_RUN,
    threshold: float = sat.DEFAULT_THRESHOLD,
    index: CodebookIndex | None = None,
) -> Saturation:
    """Saturation of one dimension over the items with a submitted, non-pending label in it, in the order
    of each item's first submission (ties by item id); the code is the category the annotator chose
    (before any merge moved the label)."""
    try:
        sat.check_parameters(base, run, threshold)
    except ValueError as exc:
        raise PaperError(str(exc)) from None
    index = index or CodebookIndex.for_study(study)
    key = dimension_of(index, dimension_key)
    rows = (
        LabelValue.objects.filter(
            finding__annotation__assignment__study=study,
            finding__annotation__assignment__gold=False,  # gold checks are answers, not labels
            finding__annotation__submitted_at__isnull=False,
            dimension__key=key,
            pending=False,
        )
        .order_by()
        .values_list(
            "finding__annotation__assignment__item_id",
            "finding__annotation__assignment__annotator__username",
            "finding__annotation__submitted_at",
            "category__key",
            "original_category__key",
        )
    )
    first: dict[int, datetime] = {}
    codes: dict[int, set[str]] = defaultdict(set)
    own: dict[str, dict[int, tuple[datetime, set[str]]]] = defaultdict(dict)
    for item_id, annotator, submitted_at, category, original in rows:
        assert submitted_at is not None  # filtered above
        code = original or category
        if item_id not in first or submitted_at < first[item_id]:
            first[item_id] = submitted_at
        codes[item_id].add(code)
        own[annotator].setdefault(item_id, (submitted_at, set()))[1].add(code)
    order = sorted(first, key=lambda i: (first[i], i))
    overall = sat.assess([codes[i] for i in order], base=base, run=run, threshold=threshold)
    per_annotator = {
        name: sat.assess(
            [c for _, _, c in sorted((at, i, c) for i, (at, c) in items.items())],
            base=base,
            run=run,
            threshold=threshold,
        )
        for name, items in sorted(own.items())
    }
    times = [first[i].timestamp() for i in order]
    # The codebook labelling started from: the oldest version a submitted annotation was made on. Its
    # categories are the study's starting codebook, not "created during the study".
    started_on = (
        Annotation.objects.filter(assignment__study=study, submitted_at__isnull=False).aggregate(
            v=Min("codebook_version")
        )["v"]
        or 0
    )
    changes = list(
        CodebookChange.objects.filter(
            codebook__study=study,
            dimension__key=key,
            kind__in=list(CREATING_CHANGES),
            version__gt=started_on,
        )
        .order_by("at", "id")
        .values_list("at", "kind", "category__key", "after")
    )
    places = sat.positions(times, [at.timestamp() for at, *_ in changes])
    events = tuple(
        CategoryEvent(place, category or str(after.get("key", "")), CREATING_CHANGES[ChangeKind(kind)])
        for place, (_, kind, category, after) in zip(places, changes, strict=True)
    )
    return Saturation(key, index.dimension(key).name, overall, per_annotator, events)


# --- Cross-tabulation --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Variable:
    """One side of a cross-tab: a dimension at a level, or an item field."""

    name: str
    dimension: str | None = None
    level: int | None = None

    @property
    def label(self) -> str:
        if self.dimension is None:
            return self.name
        return self.name if self.level is None else f"{self.name} (level {self.level})"


def variable(index: CodebookIndex, name: str, level: int | None, *, side: str) -> Variable:
    _check_level(level, f"the {side} level")
    keys = {d.key for d in index.dimensions}
    if name in keys:
        return Variable(index.dimension(name).name, name, level)
    if side == "rows":
        raise PaperError(f"--rows must be a dimension; the study has no dimension {name!r}")
    if level is not None:
        raise PaperError(f"{name!r} is an item field, not a dimension: it has no level")
    if not name:
        raise PaperError("name a dimension or an item field for the columns")
    return Variable(name)


def _category_paths(index: CodebookIndex, level: int | None) -> dict[int, str]:
    out = {}
    for dimension in index.all_dimensions:
        for category_id in index.tree(dimension.key, active_only=False):
            shown = category_id if level is None else index.ancestor_at_depth(category_id, level)
            out[category_id] = index.path(shown)
    return out


def _tree_order(index: CodebookIndex, dimension: str, level: int | None) -> list[str]:
    """The active categories' paths at `level`, in tree order (a shallower leaf stays itself)."""
    paths = _category_paths(index, level)
    return list(dict.fromkeys(paths[category_id] for category_id in index.tree(dimension)))


def _repository(url: str) -> str:
    parts = url.split("/")
    return "/".join(parts[3:5]) if len(parts) > 4 and parts[2] == "github.com" else ""


def _item_field(items: dict[int, tuple[str, str, dict[str, Any]]], item_id: int, name: str) -> str:
    url, source, metadata = items[item_id]
    if name == "source":
        return source
    value = metadata.get(name)
    if value in (None, "") and name == "repository":
        return _repository(url)
    return "" if value in (None, "") else str(value)


def crosstab(
    study: Study,
    *,
    rows: str,
    cols: str,
    rows_level: int | None = None,
    cols_level: int | None = None,
    labels: str = GOLD,
    index: CodebookIndex | None = None,
) -> ct.CrossTab:
    """The cross-tab of the study's findings (`crosstab` module docstring) over the current gold decisions
    or one annotator's submitted labels."""
    index = index or CodebookIndex.for_study(study)
    row_var = variable(index, rows, rows_level, side="rows")
    col_var = variable(index, cols, cols_level, side="cols")
    values: QuerySet[DecisionValue] | QuerySet[LabelValue]
    if labels == GOLD:
        values = DecisionValue.objects.filter(
            finding__decision__study=study, finding__decision__is_current=True
        )
        prefix = "finding__decision__"
    else:
        if not study.memberships.filter(user__username=labels).exists():
            raise PaperError(f"--labels must be 'gold' or the username of a member; {labels!r} is neither")
        values = LabelValue.objects.filter(
            finding__annotation__assignment__study=study,
            finding__annotation__assignment__annotator__username=labels,
            finding__annotation__assignment__gold=False,  # gold checks are answers, not labels
            finding__annotation__submitted_at__isnull=False,
            pending=False,
        )
        prefix = "finding__annotation__assignment__"
    wanted = [v.dimension for v in (row_var, col_var) if v.dimension]
    dimension_ids = {d.id: d.key for d in index.all_dimensions}
    records = (
        values.filter(dimension__key__in=wanted)
        .order_by()
        .values_list(
            "finding_id", f"{prefix}item_id", f"{prefix}round__number", "dimension_id", "category_id"
        )
    )
    paths = {level: _category_paths(index, level) for level in {row_var.level, col_var.level}}
    findings: dict[int, tuple[int, int | None, dict[str, set[str]]]] = {}
    for finding_id, item_id, round_number, dimension_id, category_id in records:
        _, _, chosen = findings.setdefault(finding_id, (item_id, round_number, defaultdict(set)))
        key = dimension_ids[dimension_id]
        for var in (row_var, col_var):
            if var.dimension == key:
                chosen[f"{var.dimension}@{var.level}"].add(paths[var.level][category_id])
    items: dict[int, tuple[str, str, dict[str, Any]]] = {}
    if col_var.dimension is None and col_var.name != "round":
        ids = {item_id for item_id, _, _ in findings.values()}
        items = {
            pk: (url, source, metadata)
            for pk, url, source, metadata in Item.objects.filter(study=study, id__in=ids).values_list(
                "id", "url", "source", "metadata"
            )
        }

    def side(
        var: Variable, item_id: int, round_number: int | None, chosen: dict[str, set[str]]
    ) -> Iterable[str]:
        if var.dimension is not None:
            return chosen.get(f"{var.dimension}@{var.level}", set())
        if var.name == "round":
            return () if round_number is None else (str(round_number),)
        value = _item_field(items, item_id, var.name)
        return (value,) if value else ()

    units = [
        ct.Unit(tuple(side(row_var, i, r, c)), tuple(side(col_var, i, r, c))) for i, r, c in findings.values()
    ]
    if col_var.dimension is None and col_var.name not in ITEM_FIELDS and not any(u.cols for u in units):
        raise PaperError(f"no item of the study has a field {col_var.name!r} (try source, round, framework)")
    return ct.crosstab(
        units,
        row_label=row_var.label,
        col_label=col_var.label,
        row_order=_tree_order(index, row_var.dimension or "", row_var.level) if row_var.dimension else (),
        col_order=_tree_order(index, col_var.dimension, col_var.level) if col_var.dimension else (),
    )
