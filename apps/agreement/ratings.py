"""A study's submitted labels as plain data, and the rating tables agreement is computed on
(docs/design.md §6).

`load_study_ratings(study)` reads, in a constant number of queries whatever the study's size (the codebook
index's three, the rounds, the annotators, and two for the submitted label values), columns of integers
that `build_table` turns into a `metrics.RatingTable` or `metrics.MultiRatingTable` for one dimension,
one round or all rounds, at one level of the category tree. Nothing here writes.

The rules (docs/agreement.md, "Agreement in a study"):

* **only submitted annotations** count (``Annotation.submitted_at`` set); drafts are invisible;
* the **phase** (`PHASES`): ``blind`` (the default) reads a revealed round's frozen blind record
  (``annotation.BlindValue``, written once at the reveal) and an unrevealed round's current labels, so the
  blind figures of a round never change after its reveal; ``discussed`` reads the current labels of
  every round (after the discussion's revisions);
* a **unit** is an item in a round: the same item labelled again in a later round is another unit;
* an annotator's **value** for a unit and a dimension is the set of categories over all their findings'
  values in that dimension, each category replaced by its ancestor at the requested ``level``
  (``CodebookIndex.ancestor_at_depth``; a category not deeper than the level stays itself; no level = the
  category itself, full depth); *pending* is the value ``"pending"``, a value of its own;
* an annotator with no value in the dimension (it did not apply to any of their findings) **did not
  rate** the unit for that dimension;
* the table is **nominal** (`RatingTable`, one value per rating) when the dimension is single-choice and
  every (unit, annotator) has its values from one finding and one value; otherwise (a multi-choice
  dimension, or any annotator with values from several findings) it is a **set table**
  (`MultiRatingTable`), where nominal coefficients compare whole sets;
* **declared categories** at a level are the active categories where the tree is cut at that level (the
  categories at that depth, and active leaves above it), then any other category a rating in the table
  uses (retired, merged, proposed, or an inner category chosen directly), then ``pending``; names are
  category keys, in tree order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt
from django.db.models import BigIntegerField, Value
from django.db.models.functions import Cast, Coalesce
from numpy.lib.recfunctions import structured_to_unstructured, unstructured_to_structured

from apps.accounts.models import User
from apps.annotation.models import Annotation, BlindValue, Finding, LabelValue, Round, RoundPhase
from apps.raters.ratings import model_columns, model_label_rows, rater_names
from apps.taxonomy.index import CodebookIndex, DimensionInfo, UnknownDimensionError

from .fetch import int_rows
from .metrics import MultiRatingTable, RatingTable

if TYPE_CHECKING:
    from apps.accounts.models import Study

IntArray = npt.NDArray[np.int64]

PENDING = "pending"
BLIND, DISCUSSED = "blind", "discussed"
PHASES = (BLIND, DISCUSSED)
"""The value of a *pending* (undecided) rating; no category of a dimension may have this key."""

_NO_CATEGORY = -1
_COLUMNS = ("round", "item", "annotator", "finding", "dimension", "category")
_ROW_DTYPE = np.dtype([(name, np.int64) for name in _COLUMNS])

__all__ = [
    "BLIND",
    "DISCUSSED",
    "PENDING",
    "PHASES",
    "DimensionTable",
    "RatingsError",
    "RoundInfo",
    "StudyRatings",
    "build_table",
    "declared_categories",
    "load_study_ratings",
]


class RatingsError(ValueError):
    """A request the study's data cannot answer: an unknown dimension or round, a bad level."""


@dataclass(frozen=True, slots=True)
class RoundInfo:
    id: int
    number: int
    name: str

    @property
    def label(self) -> str:
        return self.name or f"Round {self.number}"


@dataclass(frozen=True, eq=False)
class StudyRatings:
    """Every submitted label value of a study, column-wise, with the codebook it is read against.

    ``rows`` is a structured array with the integer fields ``round`` (the round's number), ``item`` (item
    id), ``annotator`` (user id), ``finding`` (finding number), ``dimension`` (dimension id) and
    ``category`` (category id, ``-1`` for *pending*). ``annotators`` maps user id to username for every
    annotator in ``rows``.
    """

    study_id: int
    index: CodebookIndex
    rounds: tuple[RoundInfo, ...]
    annotators: dict[int, str]
    rows: npt.NDArray[np.void]
    phase: str = BLIND

    @property
    def codebook_version(self) -> int:
        return self.index.version

    @property
    def round_numbers(self) -> tuple[int, ...]:
        return tuple(r.number for r in self.rounds)

    def dimension(self, key: str) -> DimensionInfo:
        """A dimension by key (retired ones included); RatingsError listing the active keys otherwise."""
        try:
            return self.index.dimension(key)
        except UnknownDimensionError:
            known = ", ".join(d.key for d in self.index.dimensions) or "none (the study has no codebook)"
            raise RatingsError(f"unknown dimension {key!r}; valid dimensions: {known}") from None

    def dimension_rows(self, dimension_id: int) -> npt.NDArray[np.void]:
        """The rows of one dimension, in their order in ``rows`` (a copy)."""
        order, starts = self._by_dimension
        span = starts.get(dimension_id)
        if span is None:
            return self.rows[:0]
        # Taking whole int64 rows is ten times faster than taking structured ones.
        columns = structured_to_unstructured(self.rows, dtype=np.int64, copy=False)
        taken = np.take(columns, order[span[0] : span[1]], axis=0)
        rows: npt.NDArray[np.void] = unstructured_to_structured(taken, dtype=self.rows.dtype)
        return rows

    @cached_property
    def _by_dimension(self) -> tuple[IntArray, dict[int, tuple[int, int]]]:
        """Row indices grouped by dimension (stable), and each dimension's (start, end) among them:
        one sort for every table built from these ratings instead of a pass over all rows each."""
        order = np.argsort(self.rows["dimension"], kind="stable")
        dimensions, starts, counts = np.unique(
            self.rows["dimension"][order], return_index=True, return_counts=True
        )
        spans = {int(d): (int(a), int(a + n)) for d, a, n in zip(dimensions, starts, counts, strict=True)}
        return order.astype(np.int64), spans

    def check_round(self, number: int) -> RoundInfo:
        for info in self.rounds:
            if info.number == number:
                return info
        known = ", ".join(str(n) for n in self.round_numbers) or "none (the study has no rounds)"
        raise RatingsError(f"unknown round {number}; valid rounds: {known}")


def _blind_rows(study: Study, dimension_ids: list[int]) -> IntArray:
    """The frozen blind record of the study's revealed rounds in these dimensions, one row of `_COLUMNS`
    each (one query)."""
    big = BigIntegerField()
    return int_rows(
        BlindValue.objects.filter(
            record__round__study=study, record__assignment__gold=False, dimension_id__in=dimension_ids
        )
        .annotate(
            round_=Cast("record__round__number", big),
            item_=Cast("record__item_id", big),
            annotator_=Cast("record__annotator_id", big),
            number_=Cast("finding", big),
            dimension_=Cast("dimension_id", big),
            category_=Coalesce(Cast("category_id", big), Value(_NO_CATEGORY), output_field=big),
        )
        .values_list("round_", "item_", "annotator_", "number_", "dimension_", "category_"),
        len(_COLUMNS),
    )


def _label_rows(study: Study, dimension_ids: list[int], phase: str = DISCUSSED) -> IntArray:
    """The submitted label values of the study in these dimensions, one row of `_COLUMNS` each.

    Two reads joined here, rather than one query joining four tables for every label value (which cost
    PostgreSQL half as much again at 570,000 values): the findings of the study's submitted annotations,
    with their round, item, annotator and number, and the label values in the dimensions (of the study's
    codebook), kept when their finding is one of those (not a draft's).
    """
    big = BigIntegerField()
    current = Finding.objects.filter(  # gold checks never count in agreement (docs/quality.md)
        annotation__assignment__study=study,
        annotation__submitted_at__isnull=False,
        annotation__assignment__gold=False,
    )
    if phase == BLIND:  # a revealed round's blind labels are its blind record (`_blind_rows`)
        current = current.filter(annotation__assignment__round__phase=RoundPhase.BLIND)
    findings = int_rows(
        current.annotate(
            id_=Cast("pk", big),
            round_=Cast("annotation__assignment__round__number", big),
            item_=Cast("annotation__assignment__item_id", big),
            annotator_=Cast("annotation__assignment__annotator_id", big),
            number_=Cast("number", big),
        ).values_list("id_", "round_", "item_", "annotator_", "number_"),
        5,
    )
    if not dimension_ids:
        return np.zeros((0, len(_COLUMNS)), dtype=np.int64)
    values = int_rows(
        LabelValue.objects.filter(dimension_id__in=dimension_ids)
        .annotate(
            finding_=Cast("finding_id", big),
            dimension_=Cast("dimension_id", big),
            category_=Coalesce(Cast("category_id", big), Value(_NO_CATEGORY), output_field=big),
        )
        .values_list("finding_", "dimension_", "category_"),
        3,
    )
    if not len(findings):
        return np.zeros((0, len(_COLUMNS)), dtype=np.int64)
    order = np.argsort(findings[:, 0])
    position = np.minimum(np.searchsorted(findings[order, 0], values[:, 0]), len(order) - 1)
    finding = order[position]
    kept = findings[finding, 0] == values[:, 0]  # a draft's values go
    return np.column_stack([findings[finding[kept], 1:], values[kept, 1:]])


def load_study_ratings(
    study: Study,
    *,
    dimension: str | None = None,
    raters: Sequence[str] | None = None,
    phase: str = BLIND,
    include_assisted: bool = False,
) -> StudyRatings:
    """Read the study's submitted label values (all dimensions, or one) in a constant number of queries,
    as they were blind or after discussion (`phase`, module docstring).

    Without ``raters``, every annotator's labels and no model's (model raters never count unless asked
    for). With ``raters`` (annotators' usernames and model raters' names, ``NAME#k`` for a model's
    sample k: `apps.raters.ratings`), the labels of exactly those; a model rater's column has a negative
    id. When a model is among them, a person's labels made with a model's suggestion shown are left out
    (`Annotation.suggestion_shown`: a model is never scored against labels made with its help) unless
    ``include_assisted``. Raises RatingsError for an unknown ``dimension``, ``phase`` or rater, or fewer
    than two raters.
    """
    if phase not in PHASES:
        raise RatingsError(f"unknown phase {phase!r}; valid phases: {', '.join(PHASES)}")
    index = CodebookIndex.for_study(study)
    round_rows = list(
        Round.objects.filter(study=study).order_by("number").values_list("id", "number", "name", "phase")
    )
    rounds = tuple(RoundInfo(pk, number, name) for pk, number, name, _ in round_rows)
    revealed = any(round_phase != RoundPhase.BLIND for *_, round_phase in round_rows)
    partial = StudyRatings(study.pk, index, rounds, {}, np.zeros(0, dtype=_ROW_DTYPE))
    dimension_ids = (
        [d.id for d in index.all_dimensions] if dimension is None else [partial.dimension(dimension).id]
    )
    table = _label_rows(study, dimension_ids, phase)
    if phase == BLIND and revealed and dimension_ids:  # one more query, only once a round is revealed
        table = np.concatenate([table, _blind_rows(study, dimension_ids)])
    if raters is not None:
        table, annotators = _chosen_raters(study, table, raters, dimension_ids, include_assisted)
    rows = table.view(_ROW_DTYPE).reshape(-1)
    if raters is None:
        annotators = dict(
            User.objects.filter(pk__in=np.unique(rows["annotator"]).tolist()).values_list("id", "username")
        )
    return StudyRatings(study.pk, index, rounds, annotators, rows, phase)


def _chosen_raters(
    study: Study, rows: IntArray, names: Sequence[str], dimension_ids: list[int], include_assisted: bool
) -> tuple[IntArray, dict[int, str]]:
    """The rows of the named raters only (people's, then models'), and each column's name; with a model
    among them, the people's assisted rows left out unless `include_assisted`."""
    repeated = sorted({n for n in names if list(names).count(n) > 1})
    if repeated:
        raise RatingsError(f"--raters names {', '.join(repeated)} more than once")
    if len(names) < 2:
        raise RatingsError(
            "--raters needs at least two raters (annotators' usernames or model raters' names)"
        )
    people = dict(User.objects.filter(username__in=list(names)).values_list("username", "id"))
    models = model_columns(study, [n for n in names if n not in people])
    unknown = [n for n in names if n not in people and n not in models]
    if unknown:
        labelled = User.objects.filter(pk__in=np.unique(rows[:, 2]).tolist()).order_by("username")
        known = [*labelled.values_list("username", flat=True), *rater_names(study)]
        raise RatingsError(
            f"unknown rater(s) {', '.join(map(repr, unknown))}: not an annotator's username or a model "
            f"rater of study {study.slug} (known: {', '.join(known) or 'none'}; NAME#k: sample k of a model)"
        )
    human = rows[np.isin(rows[:, 2], list(people.values()))]
    if models and not include_assisted:
        human = _without_assisted(study, human)
    model = model_label_rows(study, list(models.values()), dimension_ids)
    extra = np.array(model, dtype=np.int64).reshape(-1, len(_COLUMNS))
    annotators = {pk: name for name, pk in people.items()} | {c.id: c.name for c in models.values()}
    return np.concatenate([human, extra]), annotators


def _without_assisted(study: Study, rows: IntArray) -> IntArray:
    """The rows (round, item, annotator first) whose annotation showed no model suggestion (one query)."""
    assisted = {
        (round_number, item_id, annotator_id)
        for round_number, item_id, annotator_id in Annotation.objects.filter(
            assignment__study=study, suggestion_shown=True
        ).values_list("assignment__round__number", "assignment__item_id", "assignment__annotator_id")
    }
    if not assisted or not len(rows):
        return rows
    keep: npt.NDArray[np.bool_] = np.fromiter(
        ((int(r), int(i), int(a)) not in assisted for r, i, a in rows[:, :3]), dtype=bool, count=len(rows)
    )
    kept: IntArray = rows[keep]
    return kept


@dataclass(frozen=True, eq=False)
class DimensionTable:
    """One dimension's ratings ready for `metrics`: the table, and how to read its names back.

    ``units[i]`` is the (round number, item id) of table item ``i`` (named ``"<round>:<item id>"``);
    ``labels`` maps every declared category name (a key, or ``pending``) to the category id (``None``
    for pending); ``counts`` is how many ratings chose each declared category (a set counts once for
    each of its members).
    """

    dimension: DimensionInfo
    rounds: tuple[int, ...]
    level: int | None
    table: RatingTable | MultiRatingTable
    units: tuple[tuple[int, int], ...]
    labels: dict[str, int | None]
    counts: dict[str, int]
    several_findings: bool

    @property
    def is_multi(self) -> bool:
        return isinstance(self.table, MultiRatingTable)

    @property
    def n_pairable(self) -> int:
        """Units with two or more ratings: the ones the coefficients compare."""
        rated = self.table.codes >= 0 if isinstance(self.table, RatingTable) else self.table.rated
        return int((rated.sum(axis=1) >= 2).sum())

    def unit_of(self, name: str) -> tuple[int, int]:
        round_number, item_id = name.split(":", 1)
        return int(round_number), int(item_id)


def _check_level(level: int | None) -> None:
    if level is not None and level < 1:
        raise RatingsError(f"the level must be 1 (the top of the tree) or more, got {level}")


def declared_categories(
    index: CodebookIndex, dimension: DimensionInfo, level: int | None, used: Sequence[int] = ()
) -> list[int]:
    """Category ids declared at ``level`` (None = full depth), in tree order (module docstring): the active
    categories at depth ``level`` and the active leaves above it, then those of ``used`` not among them."""
    _check_level(level)
    active = index.tree(dimension.key)
    cut = [
        c
        for c in active
        if (level is not None and active.depth(c) == level)
        or (not active.children(c) and (level is None or active.depth(c) < level))
    ]
    extra = set(used) - set(cut)
    if not extra:
        return cut
    full = index.tree(dimension.key, active_only=False)
    return cut + [c for c in full if c in extra]


def build_table(
    ratings: StudyRatings, dimension_key: str, *, round_number: int | None = None, level: int | None = None
) -> DimensionTable:
    """The rating table of one dimension, for one round (or all rounds), at one level of the tree.

    Raises RatingsError for an unknown dimension or round, a level below 1, or a category keyed
    ``pending`` (it would be confused with the *pending* value).
    """
    dimension = ratings.dimension(dimension_key)
    _check_level(level)
    rounds = ratings.round_numbers if round_number is None else (ratings.check_round(round_number).number,)
    rows = ratings.dimension_rows(dimension.id)
    rows = rows[np.isin(rows["round"], rounds)]
    index = ratings.index

    # Each category id of the rows → the category it counts as at this level.
    category_ids = np.unique(rows["category"])
    mapped = {
        raw: raw if level is None else index.ancestor_at_depth(raw, level)
        for raw in category_ids.tolist()
        if raw != _NO_CATEGORY
    }
    declared_ids = declared_categories(index, dimension, level, sorted(set(mapped.values())))
    names = [index.category(c).key for c in declared_ids]
    if PENDING in names:
        raise RatingsError(
            f"dimension {dimension.key!r} has a category keyed {PENDING!r}, which agreement cannot tell "
            "from the pending value; rename its key"
        )
    labels: dict[str, int | None] = {**dict(zip(names, declared_ids, strict=True)), PENDING: None}
    code_of_id = {c: k for k, c in enumerate(declared_ids)}
    lookup = np.array(
        [
            len(declared_ids) if raw == _NO_CATEGORY else code_of_id[mapped[raw]]
            for raw in category_ids.tolist()
        ],
        dtype=np.int64,
    )
    codes = lookup[np.searchsorted(category_ids, rows["category"])]
    n_values = len(declared_ids) + 1

    # Units (round, item) in round then item order; annotators by username.
    width = int(rows["item"].max()) + 1 if rows.size else 1
    unit_keys, unit = np.unique(rows["round"] * width + rows["item"], return_inverse=True)
    unit = unit.reshape(-1).astype(np.int64)
    annotator_ids = sorted(
        np.unique(rows["annotator"]).tolist(), key=lambda a: (ratings.annotators.get(a, ""), a)
    )
    annotator_names = tuple(ratings.annotators.get(a, f"user-{a}") for a in annotator_ids)
    by_id = np.array(sorted(annotator_ids), dtype=np.int64)
    column_of_sorted = np.array([annotator_ids.index(a) for a in by_id.tolist()], dtype=np.int64)
    annotator = column_of_sorted[np.searchsorted(by_id, rows["annotator"])] if rows.size else unit.copy()
    n_units, n_annotators = len(unit_keys), len(annotator_ids)

    # Several findings of one annotator with a value here, or several values in one rating → sets.
    cell = unit * max(n_annotators, 1) + annotator
    n_findings = int(rows["finding"].max()) + 1 if rows.size else 1
    several_findings = _any_repeated(np.unique(cell * n_findings + rows["finding"]) // n_findings)
    chosen_values = np.unique(cell * n_values + codes)  # each (unit, annotator, value) once
    several_values = _any_repeated(chosen_values // n_values)

    unit_rounds, unit_items = (unit_keys // width).tolist(), (unit_keys % width).tolist()
    units = tuple(zip(unit_rounds, unit_items, strict=True))
    items = tuple(map("{}:{}".format, unit_rounds, unit_items))
    table: RatingTable | MultiRatingTable
    if dimension.multiple or several_findings or several_values:
        present = np.zeros((n_units, n_annotators, n_values), dtype=np.bool_)
        rated = np.zeros((n_units, n_annotators), dtype=np.bool_)
        present[unit, annotator, codes] = True
        rated[unit, annotator] = True
        table = MultiRatingTable(present, rated, (*names, PENDING), items, annotator_names)
        chosen = np.bincount(chosen_values % n_values, minlength=n_values)  # = present.sum(axis=(0, 1))
    else:
        matrix = np.full((n_units, n_annotators), -1, dtype=np.int64)
        matrix[unit, annotator] = codes
        table = RatingTable(matrix, (*names, PENDING), items, annotator_names)
        chosen = np.bincount(codes, minlength=n_values)
    counts = {name: int(n) for name, n in zip((*names, PENDING), chosen.tolist(), strict=True)}
    return DimensionTable(
        dimension=dimension,
        rounds=rounds,
        level=level,
        table=table,
        units=units,
        labels=labels,
        counts=counts,
        several_findings=several_findings,
    )


def _any_repeated(sorted_keys: IntArray) -> bool:
    """Whether a value occurs twice in a sorted array."""
    return bool(sorted_keys.size > 1 and (sorted_keys[1:] == sorted_keys[:-1]).any())
