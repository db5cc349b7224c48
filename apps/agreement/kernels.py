"""Agreement counts for many variables at once: every declared category as a present / absent variable,
every annotator pair, every pair of ratings of one item (issue 10).

Pure (numpy and the standard library, no Django) and below `metrics`, which imports it. Each function
takes whole-table numpy passes to get the same exact integer sums that `metrics._alpha`, `_fleiss` and
`_cohen` get for one variable at a time (one category as a present / absent variable, one pair of
columns), then finishes every value with the same formula in exact rational arithmetic: the
coefficients are equal to the one-at-a-time ones, not merely close (``tests/agreement/test_vectorised.py``
pins this against the code before issue 10). A value is a `Fraction`, or a `str` saying why it is
undefined, worded as in `metrics`.

Cost: O(ratings + categories) time and memory for the per-category coefficients of single labels
(`Chosen` holds sparse counts: a dense items x categories table took 7 GB at 30,000 categories, issue
18), and O(rating pairs) for the pairwise ones, instead of a Python loop over categories or annotator
pairs with a pass over every item in each.
"""

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import partial

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
Value = Fraction | str

NO_PAIRABLE_UNIT = "no item has two or more ratings"
NO_SHARED_ITEM = "no item is rated by both annotators"

__all__ = [
    "NO_PAIRABLE_UNIT",
    "NO_SHARED_ITEM",
    "Chosen",
    "Value",
    "binary_alpha",
    "binary_cohen",
    "binary_cohen_counts",
    "binary_cohen_single",
    "binary_fleiss",
    "cohen_from_counts",
    "pairwise_cohen",
    "rating_pairs",
]


def _absent_or_present(name: str, t0: int) -> str:
    """How `metrics` names the first value with ratings of a present / absent variable."""
    return f"not {name}" if t0 else name


@dataclass(frozen=True, eq=False)
class Chosen:
    """Sparse item x category counts: ``count[j]`` of the ``m[unit[j]]`` ratings of item ``unit[j]``
    chose category ``code[j]`` (one entry per item and category chosen at least once; ``q`` categories).

    Sparse so that memory grows with the ratings, not with items x categories: a ratings file with
    30,000 distinct categories over as many items made the dense table 7 GB (issue 18).
    """

    unit: IntArray
    code: IntArray
    count: IntArray
    m: IntArray
    q: int

    @classmethod
    def from_cells(cls, unit: IntArray, code: IntArray, m: IntArray, q: int) -> "Chosen":
        """From one ``(unit, code)`` pair per choice, in any order and with repeats."""
        width = max(q, 1)
        keys, counts = np.unique(unit.astype(np.int64) * width + code, return_counts=True)
        return cls(keys // width, keys % width, counts.astype(np.int64), m.astype(np.int64), q)

    def group_sums(self, r: int) -> tuple[IntArray, IntArray]:
        """Over the items with ``m == r``: per category, the sum of the counts and of their squares."""
        keep = self.m[self.unit] == r
        code, count = self.code[keep], self.count[keep].astype(np.float64)
        # float64 sums of whole numbers far below 2**53 are exact.
        first = np.bincount(code, weights=count, minlength=self.q)
        second = np.bincount(code, weights=count * count, minlength=self.q)
        return np.rint(first).astype(np.int64), np.rint(second).astype(np.int64)


def binary_alpha(chosen: Chosen, names: Sequence[str]) -> list[Value]:
    """Nominal Krippendorff's alpha of each category as a present / absent variable.

    ``chosen`` counts, per item ``u`` and category ``k`` (``names[k]``), how many of the ``m[u]``
    ratings of ``u`` chose ``k``. Per
    category, as `metrics._alpha`: n = sum of m over items with m >= 2; expected = n^2 - t0^2 - t1^2
    (t1 ratings chose it, t0 did not); observed = sum over m = r of sum_u 2 p (r - p) / (r - 1).
    """
    m = chosen.m
    pairable = m >= 2
    if not pairable.any():
        return [NO_PAIRABLE_UNIT] * len(names)
    n = int(m[pairable].sum())
    sizes = [int(r) for r in np.unique(m[pairable])]
    ones = np.zeros(len(names), dtype=np.int64)
    disagreeing = {}
    for r in sizes:
        first, second = chosen.group_sums(r)
        ones += first
        # sum_u 2 p (r - p) = 2 (r sum p - sum p^2): the pairs of the item's ratings that differ.
        disagreeing[r] = 2 * (r * first - second)
    values: list[Value] = []
    for k, name in enumerate(names):
        t1 = int(ones[k])
        t0 = n - t1
        expected = n * n - t0 * t0 - t1 * t1
        if expected == 0:
            value = _absent_or_present(name, t0)
            values.append(f"expected disagreement is zero: all {n} pairable ratings are {value!r}")
            continue
        observed = sum((Fraction(int(d[k]), r - 1) for r, d in disagreeing.items()), Fraction(0))
        values.append(1 - (n - 1) * observed / expected)
    return values


def binary_fleiss(chosen: Chosen, names: Sequence[str]) -> list[Value]:
    """Fleiss' kappa of each category as a present / absent variable (as `metrics._fleiss`): defined
    when every item with a rating has the same number r >= 2 of them."""
    m = chosen.m
    rated = m >= 1
    sizes = np.unique(m[rated])
    if sizes.size == 0:
        return ["no ratings"] * len(names)
    if sizes.size > 1:
        reason = (
            f"items have between {sizes[0]} and {sizes[-1]} ratings; "
            "Fleiss' kappa needs the same number (two or more) on every item"
        )
        return [reason] * len(names)
    r, n_units = int(sizes[0]), int(rated.sum())
    if r < 2:
        return ["every item has a single rating; Fleiss' kappa needs two or more on every item"] * len(names)
    nm = n_units * r
    ones, squares = chosen.group_sums(r)
    values: list[Value] = []
    for k, name in enumerate(names):
        t1 = int(ones[k])
        t0 = nm - t1
        expected_square = t0 * t0 + t1 * t1
        if expected_square == nm * nm:
            value = _absent_or_present(name, t0)
            values.append(f"expected disagreement is zero: all {nm} ratings are {value!r}")
            continue
        # sum_u (r - p)^2 + p^2 over the rated items, minus nm: the agreeing ordered pairs.
        agreeing = n_units * r * r - 2 * r * t1 + 2 * int(squares[k]) - nm
        p_bar = Fraction(agreeing, n_units * r * (r - 1))
        p_e = Fraction(expected_square, nm * nm)
        values.append((p_bar - p_e) / (1 - p_e))
    return values


def cohen_from_counts(n: int, agree: int, chance: int, constant: Callable[[], str]) -> tuple[Value, Value]:
    """Percent agreement and Cohen's kappa of two annotators from their counts on the ``n`` items both
    rated: ``agree`` items with equal values and ``chance`` = sum_c rows_c * cols_c. ``constant()``
    names the value both gave every item, asked for only when the expected disagreement is zero
    (sum_c rows_c * cols_c = n^2 only when both gave one and the same value to all n items)."""
    if n == 0:
        return NO_SHARED_ITEM, NO_SHARED_ITEM
    if chance == n * n:
        kappa: Value = (
            f"expected disagreement is zero: both annotators rated all {n} shared items {constant()!r}"
        )
    else:
        kappa = Fraction(n * agree - chance, n * n - chance)
    return Fraction(agree, n), kappa


def binary_cohen(a: BoolArray, b: BoolArray, names: Sequence[str]) -> list[Value]:
    """Cohen's kappa of each category as a present / absent variable: ``a[i, k]`` and ``b[i, k]`` say
    whether the two annotators chose category ``k`` on the ``i``-th item both rated (in table order)."""
    n = a.shape[0]
    if n == 0:
        return [NO_SHARED_ITEM] * len(names)
    sa, sb = a.sum(axis=0).astype(np.int64), b.sum(axis=0).astype(np.int64)
    agree = (a == b).sum(axis=0).astype(np.int64)
    return binary_cohen_counts(n, sa, sb, agree, a[0], names)


def binary_cohen_single(codes_a: IntArray, codes_b: IntArray, names: Sequence[str]) -> list[Value]:
    """`binary_cohen` for single labels: ``codes_a[i]`` and ``codes_b[i]`` index ``names`` on the
    ``i``-th item both rated. O(items + categories) memory, where the one-hot matrices of `binary_cohen`
    would take items x categories."""
    n, q = len(codes_a), len(names)
    if n == 0:
        return [NO_SHARED_ITEM] * q
    sa, sb = np.bincount(codes_a, minlength=q), np.bincount(codes_b, minlength=q)
    both = np.bincount(codes_a[codes_a == codes_b], minlength=q)
    # Items where the two differ on "chose k": those where exactly one of them chose it.
    agree = n - (sa + sb - 2 * both)
    first_a = np.zeros(q, dtype=np.bool_)
    first_a[codes_a[0]] = True
    return binary_cohen_counts(
        n, sa.astype(np.int64), sb.astype(np.int64), agree.astype(np.int64), first_a, names
    )


def binary_cohen_counts(
    n: int, sa: IntArray, sb: IntArray, agree: IntArray, first_a: BoolArray, names: Sequence[str]
) -> list[Value]:
    """Cohen's kappa of each category from its counts on the ``n`` items both rated: ``sa[k]`` / ``sb[k]``
    items where each chose it, ``agree[k]`` where both or neither did, ``first_a[k]`` whether the first
    annotator chose it on the first such item (the constant value named when kappa is undefined)."""
    values: list[Value] = []
    for k, name in enumerate(names):
        x, y = int(sa[k]), int(sb[k])
        chance = (n - x) * (n - y) + x * y
        constant = name if first_a[k] else f"not {name}"
        values.append(cohen_from_counts(n, int(agree[k]), chance, partial(str, constant))[1])
    return values


def rating_pairs(rated: BoolArray) -> Iterator[tuple[int, IntArray, IntArray, IntArray]]:
    """Every unordered pair of ratings of one item, as ``(r, item, a, b)``: the items with ``r >= 2``
    ratings (ascending ``r``), and on each, the columns ``a < b`` of its ``i``-th and ``j``-th rating,
    for one ``(i, j)`` at a time, so that memory stays O(items) however many annotators rate an item."""
    m = rated.sum(axis=1)
    _, columns = np.nonzero(rated)  # row-major: each row's rated columns, ascending, one after another
    start = np.cumsum(m) - m
    for r in np.unique(m[m >= 2]).tolist():
        items = np.flatnonzero(m == r).astype(np.int64)
        first = start[items]
        for i, j in zip(*np.triu_indices(r, 1), strict=True):
            yield r, items, columns[first + i].astype(np.int64), columns[first + j].astype(np.int64)


def pairwise_cohen(codes: IntArray, q: int, label: Callable[[int], str]) -> list[tuple[int, Value, Value]]:
    """``(n, percent agreement, Cohen's kappa)`` of every annotator pair ``(j, k)``, j < k in column
    order, on the items both rated; ``codes`` is items x annotators with values in ``[-1, q)``."""
    n_annotators = codes.shape[1]
    pair_of = np.full((n_annotators, n_annotators), -1, dtype=np.int64)
    upper = np.triu_indices(n_annotators, 1)
    n_pairs = len(upper[0])
    pair_of[upper] = np.arange(n_pairs)
    n = np.zeros(n_pairs, dtype=np.int64)
    agree = np.zeros(n_pairs, dtype=np.int64)
    rows = np.zeros(n_pairs * q, dtype=np.int64)
    cols = np.zeros(n_pairs * q, dtype=np.int64)
    for _, item, col_a, col_b in rating_pairs(codes >= 0):
        pair = pair_of[col_a, col_b]
        code_a, code_b = codes[item, col_a], codes[item, col_b]
        n += np.bincount(pair, minlength=n_pairs)
        agree += np.bincount(pair[code_a == code_b], minlength=n_pairs)
        rows += np.bincount(pair * q + code_a, minlength=n_pairs * q)
        cols += np.bincount(pair * q + code_b, minlength=n_pairs * q)
    rows, cols = rows.reshape(n_pairs, q), cols.reshape(n_pairs, q)
    chance = (rows * cols).sum(axis=1)
    out = []
    for p in range(n_pairs):
        # With zero expected disagreement, the one value of the pair is the one its rows count.
        constant = partial(label, int(np.argmax(rows[p])) if q else 0)
        pa, kappa = cohen_from_counts(int(n[p]), int(agree[p]), int(chance[p]), constant)
        out.append((int(n[p]), pa, kappa))
    return out
