"""The tables agreement is computed on (`metrics.py`): :class:`RatingTable`, one label per (item,
annotator), and :class:`MultiRatingTable`, a set of labels per (item, annotator) with a ``rated`` mask.
Pure module: numpy and the standard library, no Django. `metrics` re-exports every public name."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
FloatArray = npt.NDArray[np.float64]

MISSING = -1
MAX_MULTI_CELLS = 100_000_000
"""A :class:`MultiRatingTable` holds one flag per (item, annotator, category): above this many (100 MB)
it is refused rather than built (docs/agreement.md, "Limits")."""
NO_CATEGORY = ""
"""The label of a multi-choice triple meaning "rated, chose no category"."""


def _unique_names(kind: str, names: Sequence[str]) -> tuple[str, ...]:
    names = tuple(names)
    if len(set(names)) < len(names):  # name the first repeat
        seen: set[str] = set()
        for name in names:
            if name in seen:
                raise ValueError(f"duplicate {kind} {name!r}")
            seen.add(name)
    return names


def _check_rating(
    item: object, annotator: str, label: str, declared: bool, categories: Sequence[str], annotators: Any
) -> None:
    """Refuse (ValueError naming the row) a rating of an undeclared category or by an unlisted annotator."""
    if not declared:
        raise ValueError(
            f"label {label!r} (item {item!r}, annotator {annotator!r}) is not a declared "
            f"category; declared: {', '.join(map(repr, categories))}"
        )
    if annotator not in annotators:
        raise ValueError(f"annotator {annotator!r} (item {item!r}) is not one of the listed annotators")


def _frozen(array: npt.NDArray[Any]) -> npt.NDArray[Any]:
    array = np.array(array, copy=True)
    array.setflags(write=False)
    return array


@dataclass(frozen=True, eq=False)
class RatingTable:
    """Single-label ratings: ``codes[i, a]`` indexes ``categories``, or is ``-1`` (did not rate).

    Invariants (checked): ``codes`` is 2-D with shape ``(len(items), len(annotators))`` and values in
    ``[-1, len(categories))``; items, annotators and categories are unique. ``codes`` is a read-only copy.
    """

    codes: IntArray
    categories: tuple[str, ...]
    items: tuple[str, ...]
    annotators: tuple[str, ...]

    def __post_init__(self) -> None:
        codes = np.asarray(self.codes)
        if codes.ndim != 2 or not np.issubdtype(codes.dtype, np.integer):
            raise ValueError("codes must be a 2-D integer array (items x annotators)")
        object.__setattr__(self, "categories", _unique_names("category", self.categories))
        object.__setattr__(self, "items", _unique_names("item", self.items))
        object.__setattr__(self, "annotators", _unique_names("annotator", self.annotators))
        if codes.shape != (len(self.items), len(self.annotators)):
            raise ValueError(
                f"codes has shape {codes.shape}, expected ({len(self.items)}, {len(self.annotators)})"
            )
        if codes.size and (codes.min() < MISSING or codes.max() >= len(self.categories)):
            raise ValueError(f"codes must lie in [-1, {len(self.categories)})")
        object.__setattr__(self, "codes", _frozen(codes.astype(np.int64)))

    @classmethod
    def from_triples(
        cls,
        triples: Iterable[tuple[str, str, str]],
        categories: Sequence[str] | None = None,
        *,
        annotators: Sequence[str] | None = None,
    ) -> RatingTable:
        """Build from ``(item, annotator, label)`` triples, one per rating.

        ``categories``: the declared categories, in order; a label outside them raises ``ValueError``
        (AC1 depends on the declared set, so a stray label is an error, not a silent extension).
        Without it, the categories are the labels seen, sorted. ``annotators``: the table's columns in
        this order (an annotator listed without ratings is an all-missing column); without it, the
        annotators seen, sorted. Items keep their first-seen order. A second rating for the same
        (item, annotator) raises ``ValueError``.
        """
        rows = list(triples)
        if categories is None:
            categories = sorted({label for _, _, label in rows})
        if annotators is None:
            annotators = sorted({annotator for _, annotator, _ in rows})
        category_index = {c: k for k, c in enumerate(_unique_names("category", categories))}
        annotator_index = {a: j for j, a in enumerate(_unique_names("annotator", annotators))}
        item_index: dict[str, int] = {}
        cells: dict[tuple[int, int], int] = {}
        for item, annotator, label in rows:
            _check_rating(item, annotator, label, label in category_index, categories, annotator_index)
            i = item_index.setdefault(item, len(item_index))
            key = (i, annotator_index[annotator])
            if key in cells:
                raise ValueError(
                    f"item {item!r} has two ratings by annotator {annotator!r}: "
                    f"{categories[cells[key]]!r} and {label!r}"
                )
            cells[key] = category_index[label]
        codes = np.full((len(item_index), len(annotator_index)), MISSING, dtype=np.int64)
        if cells:
            where = np.array(list(cells.keys()), dtype=np.int64)
            codes[where[:, 0], where[:, 1]] = np.fromiter(cells.values(), dtype=np.int64, count=len(cells))
        return cls(codes, tuple(categories), tuple(item_index), tuple(annotators))

    @property
    def n_ratings(self) -> int:
        return int((self.codes >= 0).sum())


@dataclass(frozen=True, eq=False)
class MultiRatingTable:
    """Set-valued ratings: ``present[i, a, k]`` is True when annotator ``a`` chose category ``k`` on item
    ``i``; ``rated[i, a]`` is True when ``a`` rated ``i`` at all (possibly choosing no category).

    Invariants (checked): shapes ``(items, annotators, categories)`` and ``(items, annotators)``; no
    category chosen where ``rated`` is False; names unique. Arrays are read-only copies.
    """

    present: BoolArray
    rated: BoolArray
    categories: tuple[str, ...]
    items: tuple[str, ...]
    annotators: tuple[str, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "categories", _unique_names("category", self.categories))
        object.__setattr__(self, "items", _unique_names("item", self.items))
        object.__setattr__(self, "annotators", _unique_names("annotator", self.annotators))
        present = np.asarray(self.present, dtype=np.bool_)
        rated = np.asarray(self.rated, dtype=np.bool_)
        shape = (len(self.items), len(self.annotators))
        if rated.shape != shape or present.shape != (*shape, len(self.categories)):
            raise ValueError(
                f"present {present.shape} / rated {rated.shape} do not match {len(self.items)} items x "
                f"{len(self.annotators)} annotators x {len(self.categories)} categories"
            )
        # Every chosen category lies in a rated cell (counting beats a 3-D any() by far).
        if np.count_nonzero(present) != np.count_nonzero(present[rated]):
            raise ValueError("a category is chosen for an (item, annotator) marked as not rated")
        object.__setattr__(self, "present", _frozen(present))
        object.__setattr__(self, "rated", _frozen(rated))

    @classmethod
    def from_triples(
        cls,
        triples: Iterable[tuple[str, str, str]],
        categories: Sequence[str] | None = None,
        *,
        annotators: Sequence[str] | None = None,
    ) -> MultiRatingTable:
        """Build from ``(item, annotator, label)`` triples, one per chosen label.

        The triples of one (item, annotator) form its set; a label ``""`` (:data:`NO_CATEGORY`) marks
        the pair as rated, so on its own it gives the empty set (the CSV parser refuses mixing it with
        labels). Categories and annotators as in :meth:`RatingTable.from_triples` (undeclared label →
        ``ValueError``). More than :data:`MAX_MULTI_CELLS` items x annotators x categories →
        ``ValueError`` naming the three numbers.
        """
        rows = list(triples)
        if categories is None:
            categories = sorted({label for _, _, label in rows if label != NO_CATEGORY})
        if annotators is None:
            annotators = sorted({annotator for _, annotator, _ in rows})
        category_index = {c: k for k, c in enumerate(_unique_names("category", categories))}
        annotator_index = {a: j for j, a in enumerate(_unique_names("annotator", annotators))}
        item_index: dict[str, int] = {}
        rated_cells: set[tuple[int, int]] = set()
        chosen: list[tuple[int, int, int]] = []
        for item, annotator, label in rows:
            declared = label == NO_CATEGORY or label in category_index
            _check_rating(item, annotator, label, declared, categories, annotator_index)
            i = item_index.setdefault(item, len(item_index))
            j = annotator_index[annotator]
            rated_cells.add((i, j))
            if label != NO_CATEGORY:
                chosen.append((i, j, category_index[label]))
        cells = len(item_index) * len(annotator_index) * len(category_index)
        if cells > MAX_MULTI_CELLS:
            raise ValueError(
                f"{len(item_index):,} items x {len(annotator_index):,} annotators x "
                f"{len(category_index):,} categories is {cells:,} multi-choice cells, above the limit "
                f"of {MAX_MULTI_CELLS:,}; split the ratings (by round or by dimension) or declare fewer "
                "categories"
            )
        rated = np.zeros((len(item_index), len(annotator_index)), dtype=np.bool_)
        present = np.zeros((*rated.shape, len(category_index)), dtype=np.bool_)
        if rated_cells:
            where = np.array(sorted(rated_cells), dtype=np.int64)
            rated[where[:, 0], where[:, 1]] = True
        if chosen:
            ijk = np.array(chosen, dtype=np.int64)
            present[ijk[:, 0], ijk[:, 1], ijk[:, 2]] = True
        return cls(present, rated, tuple(categories), tuple(item_index), tuple(annotators))

    @property
    def n_ratings(self) -> int:
        """Rated (item, annotator) pairs: one set-valued rating each."""
        return int(self.rated.sum())

    def as_nominal(self) -> RatingTable:
        """The same ratings with each distinct chosen set as one nominal category.

        A set's category name is the JSON array of its labels in declared order (``'[]'`` for "chose
        no category", ``'["bug", "crash"]'``), which is injective and machine-readable.
        """
        codes, sets = self.distinct_sets
        names = tuple(
            json.dumps([self.categories[k] for k in members], ensure_ascii=False) for members in sets
        )
        return RatingTable(codes, names, self.items, self.annotators)

    @cached_property
    def distinct_sets(self) -> tuple[IntArray, list[tuple[int, ...]]]:
        """Codes ``items x annotators`` (``-1`` = not rated) indexing the distinct chosen sets, ordered
        by size then declared order; computed once per table (the arrays are read-only)."""
        codes, sets = _distinct_sets(self.present, self.rated, len(self.categories))
        codes.setflags(write=False)
        return codes, sets


def _distinct_sets(
    present: BoolArray, rated: BoolArray, n_categories: int
) -> tuple[IntArray, list[tuple[int, ...]]]:
    """Codes ``items x annotators`` (``-1`` = not rated) indexing the distinct chosen sets of category
    indices, ordered by size then declared order (so independent of item and annotator order)."""
    codes = np.full(rated.shape, MISSING, dtype=np.int64)
    rows, cols = np.nonzero(rated)
    if rows.size == 0:
        return codes, []
    chosen = present[rows, cols]
    packed = np.packbits(chosen, axis=1)
    width = max(8, -(-packed.shape[1] // 8) * 8)  # whole 8-byte words, at least one (no categories)
    padded = np.zeros((len(rows), width), dtype=np.uint8)
    padded[:, : packed.shape[1]] = packed
    # One 64-bit key per set up to 64 categories (fast integer sort), else a byte string.
    key_type = np.dtype(np.uint64) if width == 8 else np.dtype((np.void, width))
    keys = padded.view(key_type).ravel()
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    sets = [tuple(np.flatnonzero(chosen[i, :n_categories]).tolist()) for i in first.tolist()]
    order = sorted(range(len(sets)), key=lambda s: (len(sets[s]), sets[s]))
    rank = np.empty(len(sets), dtype=np.int64)
    rank[order] = np.arange(len(sets))
    codes[rows, cols] = rank[inverse.ravel()]
    return codes, [sets[s] for s in order]


AnyTable = RatingTable | MultiRatingTable
