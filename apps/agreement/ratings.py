"""A study's submitted labels as plain data, and the rating tables agreement is computed on (DESIGN.md §6).

`load_study_ratings(study)` reads, in a constant number of queries whatever the study's size (the codebook
index's three, the rounds, the annotators, and one for every submitted label value), columns of integers
that `build_table` turns into a `metrics.RatingTable` or `metrics.MultiRatingTable` for one dimension,
one round or all rounds, at one level of the category tree. Nothing here writes.

The rules (docs/agreement.md, "Agreement in a study"):

* **only submitted annotations** count (``Annotation.submitted_at`` set); drafts are invisible;
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
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt
from django.db.models import IntegerField, Value
from django.db.models.functions import Coalesce

from apps.accounts.models import User
from apps.annotation.models import LabelValue, Round
from apps.taxonomy.index import CodebookIndex, DimensionInfo, UnknownDimensionError

from .metrics import MultiRatingTable, RatingTable

if TYPE_CHECKING:
    from apps.accounts.models import Study

IntArray = npt.NDArray[np.int64]

PENDING = "pending"
"""The value of a *pending* (undecided) rating; no category of a dimension may have this key."""

_NO_CATEGORY = -1
_COLUMNS = ("round", "item", "annotator", "finding", "dimension", "category")
_ROW_DTYPE = np.dtype([(name, np.int64) for name in _COLUMNS])

__all__ = [
    "PENDING",
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

    def check_round(self, number: int) -> RoundInfo:
        for info in self.rounds:
            if info.number == number:
                return info
        known = ", ".join(str(n) for n in self.round_numbers) or "none (the study has no rounds)"
        raise RatingsError(f"unknown round {number}; valid rounds: {known}")


def load_study_ratings(study: Study, *, dimension: str | None = None) -> StudyRatings:
    """Read the study's submitted label values (all dimensions, or one) in a constant number of queries.

    Raises RatingsError for an unknown ``dimension``.
    """
    index = CodebookIndex.for_study(study)
    rounds = tuple(
        RoundInfo(pk, number, name)
        for pk, number, name in Round.objects.filter(study=study)
        .order_by("number")
        .values_list("id", "number", "name")
    )
    values = LabelValue.objects.filter(
        finding__annotation__assignment__study=study, finding__annotation__submitted_at__isnull=False
    )
    partial = StudyRatings(study.pk, index, rounds, {}, np.zeros(0, dtype=_ROW_DTYPE))
    if dimension is not None:
        values = values.filter(dimension_id=partial.dimension(dimension).id)
    query = values.annotate(
        category_or_pending=Coalesce("category_id", Value(_NO_CATEGORY), output_field=IntegerField())
    ).values_list(
        "finding__annotation__assignment__round__number",
        "finding__annotation__assignment__item_id",
        "finding__annotation__assignment__annotator_id",
        "finding__number",
        "dimension_id",
        "category_or_pending",
    )
    rows = np.fromiter(query.iterator(chunk_size=20_000), dtype=_ROW_DTYPE)
    annotators = dict(
        User.objects.filter(assignments__study=study, assignments__annotation__submitted_at__isnull=False)
        .distinct()
        .values_list("id", "username")
    )
    return StudyRatings(study.pk, index, rounds, annotators, rows)


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
    rows = ratings.rows
    rows = rows[(rows["dimension"] == dimension.id) & np.isin(rows["round"], rounds)]
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
    annotator_ids = sorted(set(rows["annotator"].tolist()), key=lambda a: (ratings.annotators.get(a, ""), a))
    annotator_names = tuple(ratings.annotators.get(a, f"user-{a}") for a in annotator_ids)
    by_id = np.array(sorted(annotator_ids), dtype=np.int64)
    column_of_sorted = np.array([annotator_ids.index(a) for a in by_id.tolist()], dtype=np.int64)
    annotator = column_of_sorted[np.searchsorted(by_id, rows["annotator"])] if rows.size else unit.copy()
    n_units, n_annotators = len(unit_keys), len(annotator_ids)

    # Several findings of one annotator with a value here, or several values in one rating → sets.
    cell = unit * max(n_annotators, 1) + annotator
    n_findings = int(rows["finding"].max()) + 1 if rows.size else 1
    several_findings = _any_repeated(np.unique(cell * n_findings + rows["finding"]) // n_findings)
    several_values = _any_repeated(np.unique(cell * n_values + codes) // n_values)

    units = tuple((int(k // width), int(k % width)) for k in unit_keys.tolist())
    items = tuple(f"{r}:{i}" for r, i in units)
    table: RatingTable | MultiRatingTable
    if dimension.multiple or several_findings or several_values:
        present = np.zeros((n_units, n_annotators, n_values), dtype=np.bool_)
        rated = np.zeros((n_units, n_annotators), dtype=np.bool_)
        present[unit, annotator, codes] = True
        rated[unit, annotator] = True
        table = MultiRatingTable(present, rated, (*names, PENDING), items, annotator_names)
        chosen = present.sum(axis=(0, 1))
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
