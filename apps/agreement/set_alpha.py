"""Krippendorff's alpha on set-valued labels (multi-choice dimensions) with the MASI or Jaccard distance,
and the two distances. Pure module: numpy and the standard library, no Django. `metrics` re-exports every
public name."""

from __future__ import annotations

import json
from collections.abc import Set
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from . import kernels
from .rating_tables import FloatArray, IntArray, MultiRatingTable
from .results import Result

SetDistance = Literal["masi", "jaccard"]


def _set_delta(inter: int, union: int, relation: int, distance: SetDistance) -> Fraction:
    """Distance from |A & B|, |A | B| and the relation (0 equal, 1 subset, 2 overlap, 3 disjoint)."""
    if union == 0:
        return Fraction(0)  # two empty sets: identical values
    jaccard = Fraction(inter, union)
    if distance == "jaccard":
        return 1 - jaccard
    monotonicity = (Fraction(1), Fraction(2, 3), Fraction(1, 3), Fraction(0))[relation]
    return 1 - jaccard * monotonicity


def _relation(inter: IntArray, size_a: IntArray, size_b: IntArray) -> IntArray:
    return np.select(
        [(inter == size_a) & (inter == size_b), inter == np.minimum(size_a, size_b), inter > 0],
        [0, 1, 2],
        default=3,
    ).astype(np.int64)


def masi_distance(a: Set[str], b: Set[str]) -> float:
    """MASI distance 1 - J * M (Passonneau 2006): M = 1 equal, 2/3 subset, 1/3 overlap, 0 disjoint.

    Two empty sets are at distance 0 (nltk's ``masi_distance`` divides by zero there; elsewhere equal).
    """
    inter, union = len(a & b), len(a | b)
    relation = int(_relation(np.array([inter]), np.array([len(a)]), np.array([len(b)]))[0])
    return float(_set_delta(inter, union, relation, "masi"))


def jaccard_distance(a: Set[str], b: Set[str]) -> float:
    """Jaccard distance 1 - |A & B| / |A | B|; two empty sets are at distance 0."""
    return float(_set_delta(len(a & b), len(a | b), 0, "jaccard"))


class _DeltaSums:
    """Accumulates weights per (|A & B|, |A|, |B|), which fix the distance, so that sum(weight * delta)
    stays exact: the weights are whole numbers, and so are their float64 sums (far below 2**53).
    |A | B| and the relation are derived per distinct triple in `total`, not per pair of sets.

    Sparse (the triples seen, not all (K + 1)**3 of them): a dense array took 8 (K + 1)**3 bytes, a
    gigabyte at 500 categories (issue 18)."""

    def __init__(self, n_categories: int) -> None:
        self.width = n_categories + 1
        self.keys: IntArray = np.zeros(0, dtype=np.int64)
        self.weights: FloatArray = np.zeros(0, dtype=np.float64)

    def add(self, inter: IntArray, size_a: IntArray, size_b: IntArray, weight: npt.NDArray[Any]) -> None:
        weight = np.asarray(weight, dtype=np.float64).ravel()
        used = weight != 0
        key = ((inter * self.width + size_a) * self.width + size_b).ravel()[used]
        keys, inverse = np.unique(np.concatenate([self.keys, key]), return_inverse=True)
        weights = np.concatenate([self.weights, weight[used]])
        self.weights = np.bincount(inverse.ravel(), weights=weights, minlength=len(keys)).astype(np.float64)
        self.keys = keys.astype(np.int64)

    def total(self, distance: SetDistance) -> Fraction:
        used = self.weights != 0
        keys = self.keys[used]
        rest, size_b = np.divmod(keys, self.width)
        inter, size_a = np.divmod(rest, self.width)
        union, relation = size_a + size_b - inter, _relation(inter, size_a, size_b)
        weights: dict[tuple[int, int, int], int] = {}
        for i, u, r, weight in zip(
            inter.tolist(), union.tolist(), relation.tolist(), self.weights[used].tolist(), strict=True
        ):
            weights[(i, u, r)] = weights.get((i, u, r), 0) + round(weight)
        return sum(
            (weight * _set_delta(*triple, distance) for triple, weight in weights.items()), Fraction(0)
        )


def krippendorff_alpha_set(table: MultiRatingTable, distance: SetDistance) -> Result:
    """Krippendorff's alpha over set values with the MASI or Jaccard distance.

    alpha = 1 - D_o / D_e with D_o = (1/n) sum_u sum_{c != k in u} delta(c, k) / (m_u - 1) and
    D_e = 1 / (n (n - 1)) sum over ordered pairs of distinct pairable ratings of delta (Krippendorff
    2011); the same as nltk ``AnnotationTask(distance=...).alpha()``. Cost O(N A^2 K + V^2 K) for V
    distinct pairable sets. Undefined when every pairable rating is the same set.
    """
    if distance not in ("masi", "jaccard"):
        raise ValueError(f"unknown set distance {distance!r}; use 'masi' or 'jaccard'")
    return _set_alpha(_set_alpha_sums(table), distance)


@dataclass(frozen=True, eq=False)
class _SetAlphaSums:
    observed: dict[int, _DeltaSums]  # m_u -> rater pairs of units with m_u ratings
    expected: _DeltaSums
    n: int  # pairable ratings


def _set_alpha_sums(table: MultiRatingTable) -> _SetAlphaSums | str:
    """The distance-independent part of :func:`krippendorff_alpha_set`, or why it is undefined."""
    pairable = table.rated.sum(axis=1) >= 2
    if not pairable.any():
        return kernels.NO_PAIRABLE_UNIT
    n_categories = len(table.categories)

    # Observed: each unordered pair of raters of a unit counts twice, weighted 1 / (m_u - 1) later.
    observed: dict[int, _DeltaSums] = {}
    for r, unit, a, b in kernels.rating_pairs(table.rated):
        if r not in observed:
            observed[r] = _DeltaSums(n_categories)
        sums = observed[r]
        chosen_a, chosen_b = table.present[unit, a], table.present[unit, b]
        inter = (chosen_a & chosen_b).sum(axis=1, dtype=np.int64)
        size_a, size_b = chosen_a.sum(axis=1, dtype=np.int64), chosen_b.sum(axis=1, dtype=np.int64)
        sums.add(inter, size_a, size_b, np.full(len(inter), 2.0))

    # Expected: over all ordered pairs of pairable ratings, grouped by distinct set. The sets of the
    # pairable units keep their order among all the table's sets (size, then declared order).
    all_codes, all_sets = table.distinct_sets
    pairable_codes = all_codes[pairable]
    pairable_codes = pairable_codes[pairable_codes >= 0]
    used = np.unique(pairable_codes)
    sets = [all_sets[s] for s in used.tolist()]
    counts = np.bincount(np.searchsorted(used, pairable_codes), minlength=len(sets)).astype(np.float64)
    n = int(counts.sum())
    if len(sets) == 1:
        value = json.dumps([table.categories[k] for k in sets[0]], ensure_ascii=False)
        return f"expected disagreement is zero: all {n} pairable ratings are the set {value}"
    members = np.zeros((len(sets), n_categories), dtype=np.float64)
    for v, chosen in enumerate(sets):
        members[v, list(chosen)] = 1.0
    set_sizes = members.sum(axis=1).astype(np.int64)
    expected = _DeltaSums(n_categories)
    # Each unordered pair of different sets once, weighted twice: the distance is symmetric, and a set
    # is at distance 0 from itself. Blocks of rows against the columns from the block on.
    chunk = max(1, 1_000_000 // len(sets))
    for start in range(0, len(sets), chunk):
        block, rest = slice(start, start + chunk), slice(start, None)
        # float64 products of 0/1 vectors are exact integer intersection sizes.
        inter = np.rint(members[block] @ members[rest].T).astype(np.int64)
        above = np.arange(inter.shape[1])[None, :] > np.arange(inter.shape[0])[:, None]
        weight = np.where(above, 2.0 * counts[block, None] * counts[None, rest], 0.0)
        expected.add(inter, set_sizes[block, None], set_sizes[None, rest], weight)
    return _SetAlphaSums(observed, expected, n)


def _set_alpha(sums: _SetAlphaSums | str, distance: SetDistance) -> Result:
    if isinstance(sums, str):
        return Result.undefined(sums)
    observed = sum((group.total(distance) / (r - 1) for r, group in sums.observed.items()), Fraction(0))
    expected = sums.expected.total(distance)
    if expected == 0:  # unreachable for MASI and Jaccard (distinct sets are at positive distance)
        return Result.undefined("expected disagreement is zero")
    return Result.of(1 - (sums.n - 1) * observed / expected)
