"""Inter-rater agreement coefficients on plain data (docs/design.md §6; formulas in docs/agreement.md).

Pure module: numpy and the standard library, no Django. A coefficient takes a table and returns a
:class:`Result`, a value or ``None`` with the reason it is undefined; it never returns NaN, and never
turns an undefined coefficient into 1 or 0.

Point estimates are computed in exact rational arithmetic (:class:`fractions.Fraction` over integer
counts aggregated with numpy) and rounded once to a float, so they are the correctly rounded values of
the published formulas, and "expected disagreement is zero" is an exact test, not a float comparison.
Only the bootstrap replicates are float64.

Tables:
- :class:`RatingTable`: one label per (item, annotator), ``-1`` where the annotator did not rate.
- :class:`MultiRatingTable`: a set of labels per (item, annotator) (multi-choice dimensions), with a
  ``rated`` mask that tells "chose no category" (rated, empty set) from "did not rate".

Nominal coefficients on a multi table treat each distinct set as one nominal value
(:meth:`MultiRatingTable.as_nominal`); Gwet's AC1 then runs over every subset of the declared
categories. ``pending`` is an ordinary label.

The per-category and pairwise coefficients, and the rater pairs of set-valued alpha, are counted for
all categories or pairs at once by `kernels` (issue 10: a Python loop per category or per annotator
pair dominated at 100,000 items); the values are the same, to the last bit.
"""

import json
import math
from collections.abc import Callable, Iterable, Sequence, Set
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from . import kernels

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
FloatArray = npt.NDArray[np.float64]

MISSING = -1
MAX_BOOTSTRAP = 10_000
"""The most bootstrap replicates the API and ``agreement --bootstrap`` accept."""
MAX_MULTI_CELLS = 100_000_000
"""A :class:`MultiRatingTable` holds one flag per (item, annotator, category): above this many (100 MB)
it is refused rather than built (docs/agreement.md, "Limits")."""
NO_CATEGORY = ""
"""The label of a multi-choice triple meaning "rated, chose no category"."""

SetDistance = Literal["masi", "jaccard"]

__all__ = [
    "CATEGORY_METRICS",
    "MAX_BOOTSTRAP",
    "MAX_MULTI_CELLS",
    "MISSING",
    "NO_CATEGORY",
    "CategoryAgreement",
    "ConfusionMatrix",
    "IntervalResult",
    "MultiRatingTable",
    "PairAgreement",
    "RatingTable",
    "Result",
    "SetDistance",
    "agreement_report",
    "bootstrap_alpha_ci",
    "category_key",
    "cohen_kappa",
    "confusion_matrix",
    "fleiss_kappa",
    "gwet_ac1",
    "jaccard_distance",
    "krippendorff_alpha_nominal",
    "krippendorff_alpha_set",
    "masi_distance",
    "pair_key",
    "pairwise",
    "per_category",
    "percent_agreement",
]


# --------------------------------------------------------------------------------------------- results
@dataclass(frozen=True, slots=True)
class Result:
    """A coefficient: ``value`` (finite float) or ``None`` with ``reason``; exactly one is set."""

    value: float | None
    reason: str | None = None

    def __post_init__(self) -> None:
        if (self.value is None) == (self.reason is None):
            raise ValueError("a Result has either a value or a reason, not both and not neither")
        if self.value is not None and not math.isfinite(self.value):
            raise ValueError(f"a coefficient must be finite, got {self.value}")

    @classmethod
    def of(cls, value: Fraction | float) -> "Result":
        return cls(float(value))

    @classmethod
    def undefined(cls, reason: str) -> "Result":
        return cls(None, reason)


@dataclass(frozen=True, slots=True)
class IntervalResult:
    """A percentile interval ``(low, high)`` or ``None`` with ``reason``; ``replicates`` kept."""

    value: tuple[float, float] | None
    reason: str | None = None
    replicates: int = 0


@dataclass(frozen=True, slots=True)
class PairAgreement:
    """Agreement of one annotator pair on the items both rated (``n``)."""

    a: str
    b: str
    n: int
    percent_agreement: Result
    cohen_kappa: Result


@dataclass(frozen=True, slots=True)
class CategoryAgreement:
    """One declared category as a present / absent variable."""

    cohen_kappa: Result
    fleiss_kappa: Result
    krippendorff_alpha: Result


@dataclass(frozen=True, eq=False)
class ConfusionMatrix:
    """Labels of annotator ``a`` (rows) against ``b`` (columns) on the items both rated.

    ``items[r][c]`` lists the item ids (in table order) counted in ``counts[r, c]``.
    """

    a: str
    b: str
    labels: tuple[str, ...]
    counts: IntArray
    items: tuple[tuple[tuple[str, ...], ...], ...]


# ---------------------------------------------------------------------------------------------- tables
def _unique_names(kind: str, names: Sequence[str]) -> tuple[str, ...]:
    names = tuple(names)
    if len(set(names)) < len(names):  # name the first repeat
        seen: set[str] = set()
        for name in names:
            if name in seen:
                raise ValueError(f"duplicate {kind} {name!r}")
            seen.add(name)
    return names


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
    ) -> "RatingTable":
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
            if label not in category_index:
                raise ValueError(
                    f"label {label!r} (item {item!r}, annotator {annotator!r}) is not a declared "
                    f"category; declared: {', '.join(map(repr, categories))}"
                )
            if annotator not in annotator_index:
                raise ValueError(
                    f"annotator {annotator!r} (item {item!r}) is not one of the listed annotators"
                )
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
    ) -> "MultiRatingTable":
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
            if label != NO_CATEGORY and label not in category_index:
                raise ValueError(
                    f"label {label!r} (item {item!r}, annotator {annotator!r}) is not a declared "
                    f"category; declared: {', '.join(map(repr, categories))}"
                )
            if annotator not in annotator_index:
                raise ValueError(
                    f"annotator {annotator!r} (item {item!r}) is not one of the listed annotators"
                )
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


# ----------------------------------------------------------------------------- count-based core (exact)
@dataclass(frozen=True, eq=False)
class _Cells:
    """Sparse unit x value counts: ``count[j]`` ratings of ``unit[j]`` had value ``code[j]``.

    ``m[u]`` is the number of ratings of unit ``u``; ``q`` the number of values; ``label(c)`` names
    value ``c`` in reasons.
    """

    unit: IntArray
    code: IntArray
    count: IntArray
    m: IntArray
    q: int
    label: Callable[[int], str]


def _cells_from_codes(codes: IntArray, q: int, label: Callable[[int], str]) -> _Cells:
    mask = codes >= 0
    units = np.nonzero(mask)[0].astype(np.int64)
    width = max(q, 1)
    keys, counts = np.unique(units * width + codes[mask], return_counts=True)
    return _Cells(keys // width, keys % width, counts.astype(np.int64), mask.sum(axis=1), q, label)


def _per_unit(cells: _Cells, values: IntArray) -> IntArray:
    """Sum of ``values`` (one per cell) for each unit; exact for the small integers used here."""
    return np.rint(np.bincount(cells.unit, weights=values, minlength=len(cells.m))).astype(np.int64)


def _per_value(cells: _Cells, values: IntArray, where: BoolArray) -> list[int]:
    """Sum of ``values`` per value code over the cells whose unit is in ``where``, as Python ints."""
    keep = where[cells.unit]
    totals = np.bincount(cells.code[keep], weights=values[keep], minlength=cells.q)
    return [round(float(t)) for t in totals]


def _sum_by_m(m: IntArray, values: IntArray, where: BoolArray) -> dict[int, int]:
    """``{r: sum of values over units in where with m == r}``, exact Python ints."""
    return {int(r): int(values[where & (m == r)].sum()) for r in np.unique(m[where])}


def _no_pairable_unit(cells: _Cells) -> str | None:
    if not (cells.m >= 2).any():
        return kernels.NO_PAIRABLE_UNIT
    return None


def _percent_agreement(cells: _Cells) -> Fraction | str:
    """Mean over units with m >= 2 of the share of agreeing ordered rater pairs."""
    if reason := _no_pairable_unit(cells):
        return reason
    pairable = cells.m >= 2
    agreeing = _per_unit(cells, cells.count * (cells.count - 1))
    total = sum(
        (Fraction(s, r * (r - 1)) for r, s in _sum_by_m(cells.m, agreeing, pairable).items()), Fraction(0)
    )
    return total / int(pairable.sum())


def _alpha(cells: _Cells) -> Fraction | str:
    """Krippendorff's nominal alpha: 1 - (n - 1) * sum_u D_u / (n^2 - sum_c n_c^2), where
    D_u = (m_u^2 - sum_c n_uc^2) / (m_u - 1) over pairable units (Krippendorff 2011, sec. C)."""
    if reason := _no_pairable_unit(cells):
        return reason
    pairable = cells.m >= 2
    totals = _per_value(cells, cells.count, pairable)
    n = sum(totals)
    expected = n * n - sum(t * t for t in totals)
    if expected == 0:
        value = cells.label(next(c for c, t in enumerate(totals) if t))
        return f"expected disagreement is zero: all {n} pairable ratings are {value!r}"
    squares = _per_unit(cells, cells.count * cells.count)
    observed = sum(
        (Fraction(s, r - 1) for r, s in _sum_by_m(cells.m, cells.m * cells.m - squares, pairable).items()),
        Fraction(0),
    )
    return 1 - (n - 1) * observed / expected


def _fleiss(cells: _Cells) -> Fraction | str:
    """Fleiss' kappa (Fleiss 1971) over the units with at least one rating; needs a constant m >= 2."""
    rated = cells.m >= 1
    sizes = np.unique(cells.m[rated])
    if sizes.size == 0:
        return "no ratings"
    if sizes.size > 1:
        return (
            f"items have between {sizes[0]} and {sizes[-1]} ratings; "
            "Fleiss' kappa needs the same number (two or more) on every item"
        )
    m, n_units = int(sizes[0]), int(rated.sum())
    if m < 2:
        return "every item has a single rating; Fleiss' kappa needs two or more on every item"
    totals = _per_value(cells, cells.count, rated)
    nm = n_units * m
    expected_square = sum(t * t for t in totals)
    if expected_square == nm * nm:
        value = cells.label(next(c for c, t in enumerate(totals) if t))
        return f"expected disagreement is zero: all {nm} ratings are {value!r}"
    agreeing = int(_per_unit(cells, cells.count * cells.count)[rated].sum()) - nm
    p_bar = Fraction(agreeing, n_units * m * (m - 1))
    p_e = Fraction(expected_square, nm * nm)
    return (p_bar - p_e) / (1 - p_e)


def _ac1(cells: _Cells, n_declared: int) -> Fraction | str:
    """Gwet's AC1 (Gwet 2008; irrCAC ``CAC.gwet``): p_a as percent agreement over units with m >= 2;
    p_e = sum_k pi_k (1 - pi_k) / (q - 1), pi_k = mean over units with m >= 1 of n_uk / m_u."""
    if n_declared < 2:
        return f"Gwet's AC1 needs two or more possible values (declared categories), got {n_declared}"
    p_a = _percent_agreement(cells)
    if isinstance(p_a, str):
        return p_a
    rated = cells.m >= 1
    sizes = [int(r) for r in np.unique(cells.m[rated])]
    lcm = math.lcm(*sizes)
    # pi_k = P_k / (lcm * n_rated) with integer P_k = sum over cells of count * lcm / m_u.
    weights = cells.count * (lcm // np.maximum(cells.m[cells.unit], 1))
    numerators = _per_value(cells, weights, rated)
    denominator = lcm * int(rated.sum())
    sum_pi_squared = Fraction(sum(p * p for p in numerators), denominator * denominator)
    p_e = (1 - sum_pi_squared) / (n_declared - 1)
    return (p_a - p_e) / (1 - p_e)


def _cohen(
    codes_a: IntArray, codes_b: IntArray, q: int, label: Callable[[int], str]
) -> tuple[int, Result, Result]:
    """Cohen's kappa (Cohen 1960) and percent agreement on the items both rated: ``(n, pa, kappa)``."""
    both = (codes_a >= 0) & (codes_b >= 0)
    a, b = codes_a[both], codes_b[both]
    rows = np.bincount(a, minlength=q)
    cols = np.bincount(b, minlength=q)
    chance = sum(int(x) * int(y) for x, y in zip(rows.tolist(), cols.tolist(), strict=True))
    pa, kappa = kernels.cohen_from_counts(len(a), int((a == b).sum()), chance, lambda: label(int(a[0])))
    return len(a), _result(pa), _result(kappa)


def _result(value: Fraction | str) -> Result:
    return Result.undefined(value) if isinstance(value, str) else Result.of(value)


# ------------------------------------------------------------------------------------ nominal view
@dataclass(frozen=True, eq=False)
class _Nominal:
    codes: IntArray
    labels: tuple[str, ...]
    n_declared: int  # size of the declared value domain, for AC1 (2**K subsets for a multi table)

    @property
    def cells(self) -> _Cells:
        return _cells_from_codes(self.codes, len(self.labels), self.labels.__getitem__)


def _nominal(table: AnyTable) -> _Nominal:
    if isinstance(table, RatingTable):
        return _Nominal(table.codes, table.categories, len(table.categories))
    nominal = table.as_nominal()
    # Every subset of the declared categories is a possible value, the empty set included.
    return _Nominal(nominal.codes, nominal.categories, 2 ** len(table.categories))


# ------------------------------------------------------------------------------------- public metrics
def percent_agreement(table: AnyTable) -> Result:
    """Mean over items with two or more ratings of the share of agreeing rater pairs (sets: equal sets)."""
    return _result(_percent_agreement(_nominal(table).cells))


def krippendorff_alpha_nominal(table: AnyTable) -> Result:
    """Krippendorff's alpha, nominal, over items with two or more ratings; missing ratings allowed.

    Reference: ``krippendorff.alpha(level_of_measurement="nominal")``. Undefined when every pairable
    rating has the same value (expected disagreement zero).
    """
    return _result(_alpha(_nominal(table).cells))


def fleiss_kappa(table: AnyTable) -> Result:
    """Fleiss' kappa; defined only when every item with a rating has the same number (>= 2) of them.

    Items without any rating are ignored. Reference: ``statsmodels.stats.inter_rater.fleiss_kappa`` on
    the items x categories count table.
    """
    return _result(_fleiss(_nominal(table).cells))


def gwet_ac1(table: AnyTable) -> Result:
    """Gwet's AC1 over the declared categories (a multi table: over all 2**K subsets of them).

    Missing ratings as irrCAC ``CAC(ratings, categories=...).gwet()``: p_a over items with two or more
    ratings, the category shares pi_k averaged over every item with at least one rating.
    """
    nominal = _nominal(table)
    return _result(_ac1(nominal.cells, nominal.n_declared))


def cohen_kappa(table: AnyTable) -> Result:
    """Cohen's kappa for a table of exactly two annotators, over the items both rated (listwise).

    References: ``sklearn.metrics.cohen_kappa_score``, ``statsmodels.stats.inter_rater.cohens_kappa``.
    """
    return _cohen_kappa(_nominal(table))


def _cohen_kappa(nominal: _Nominal) -> Result:
    if nominal.codes.shape[1] != 2:
        return Result.undefined(
            f"Cohen's kappa needs exactly two annotators, the table has {nominal.codes.shape[1]} "
            "(see pairwise)"
        )
    return _cohen(nominal.codes[:, 0], nominal.codes[:, 1], len(nominal.labels), nominal.labels.__getitem__)[
        2
    ]


def pairwise(table: AnyTable) -> list[PairAgreement]:
    """Every annotator pair ``(a, b)``, a before b in table order, on the items both rated."""
    return _pairwise(_nominal(table), table.annotators)


def _pairwise(nominal: _Nominal, annotators: tuple[str, ...]) -> list[PairAgreement]:
    counts = kernels.pairwise_cohen(nominal.codes, len(nominal.labels), nominal.labels.__getitem__)
    names = [(a, b) for j, a in enumerate(annotators) for b in annotators[j + 1 :]]
    return [
        PairAgreement(a, b, n, _result(pa), _result(kappa))
        for (a, b), (n, pa, kappa) in zip(names, counts, strict=True)
    ]


def per_category(table: AnyTable) -> dict[str, CategoryAgreement]:
    """Each declared category, used or not, as a present / absent variable (missing where not rated):
    Cohen's kappa (two annotators), Fleiss' kappa and nominal Krippendorff's alpha. All categories at
    once (`kernels`): the values `_cohen`, `_fleiss` and `_alpha` give for one category at a time."""
    n_categories = len(table.categories)
    names = table.categories
    # Sparse counts (kernels.Chosen): memory grows with the ratings, never with items x categories.
    if isinstance(table, RatingTable):
        rated = table.codes >= 0
        units, columns = np.nonzero(rated)
        codes = table.codes[units, columns]
    else:
        rated = table.rated
        units, _, codes = np.nonzero(table.present)
    chosen = kernels.Chosen.from_cells(units, codes, rated.sum(axis=1), n_categories)
    if len(table.annotators) == 2:
        both = rated[:, 0] & rated[:, 1]
        if isinstance(table, RatingTable):
            values = kernels.binary_cohen_single(table.codes[both, 0], table.codes[both, 1], names)
        else:
            values = kernels.binary_cohen(table.present[both, 0], table.present[both, 1], names)
        kappas = [_result(v) for v in values]
    else:
        reason = f"Cohen's kappa needs exactly two annotators, the table has {len(table.annotators)}"
        kappas = [Result.undefined(reason)] * n_categories
    fleiss = kernels.binary_fleiss(chosen, names)
    alpha = kernels.binary_alpha(chosen, names)
    return {
        name: CategoryAgreement(kappas[k], _result(fleiss[k]), _result(alpha[k]))
        for k, name in enumerate(names)
    }


def confusion_matrix(table: RatingTable, a: str, b: str) -> ConfusionMatrix:
    """Declared categories of ``a`` (rows) x ``b`` (columns) on the items both rated, with the items
    of every cell. For a multi table pass ``multi.as_nominal()``. Unknown or equal annotators raise."""
    for name in (a, b):
        if name not in table.annotators:
            raise ValueError(f"unknown annotator {name!r}; the table has {', '.join(table.annotators)}")
    if a == b:
        raise ValueError(f"a confusion matrix needs two different annotators, got {a!r} twice")
    codes_a, codes_b = table.codes[:, table.annotators.index(a)], table.codes[:, table.annotators.index(b)]
    q = len(table.categories)
    both = np.flatnonzero((codes_a >= 0) & (codes_b >= 0))
    cell = codes_a[both] * q + codes_b[both]
    counts = np.bincount(cell, minlength=q * q).astype(np.int64)
    groups = np.split(both[np.argsort(cell, kind="stable")], np.cumsum(counts)[:-1]) if q else []
    items = tuple(tuple(tuple(table.items[i] for i in groups[r * q + c]) for c in range(q)) for r in range(q))
    return ConfusionMatrix(a, b, table.categories, _frozen(counts.reshape(q, q)), items)


# ------------------------------------------------------------------------------------ set distances
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


# ---------------------------------------------------------------------------------------- bootstrap
def bootstrap_alpha_ci(table: AnyTable, replicates: int, seed: int | None = None) -> IntervalResult:
    """95 % percentile interval of nominal Krippendorff's alpha over ``replicates`` bootstrap samples.

    Each replicate draws, with replacement, as many units as there are pairable units (items with two
    or more ratings, the only ones alpha depends on), from ``numpy.random.default_rng(seed)``.
    Replicates where alpha is undefined are dropped; the interval is ``numpy.percentile(..., [2.5,
    97.5])`` (linear interpolation) of the rest. Replicates are float64.
    """
    return _bootstrap(_nominal(table).cells, replicates, seed)


def _bootstrap(cells: _Cells, replicates: int, seed: int | None) -> IntervalResult:
    if replicates < 1:
        raise ValueError(f"the number of bootstrap replicates must be positive, got {replicates}")
    pairable = np.flatnonzero(cells.m >= 2)
    if pairable.size == 0:
        return IntervalResult(None, "no item has two or more ratings")
    # Re-index pairable units 0..U-1 and keep their cells only.
    position = np.full(len(cells.m), -1, dtype=np.int64)
    position[pairable] = np.arange(pairable.size)
    keep = position[cells.unit] >= 0
    unit, code, count = position[cells.unit[keep]], cells.code[keep], cells.count[keep].astype(np.float64)
    m = cells.m[pairable].astype(np.float64)
    squares = np.bincount(unit, weights=count * count, minlength=pairable.size)
    observed_per_unit = (m * m - squares) / (m - 1)

    rng = np.random.default_rng(seed)
    values = []
    for _ in range(replicates):
        weight = np.bincount(rng.integers(0, pairable.size, pairable.size), minlength=pairable.size)
        totals = np.bincount(code, weights=weight[unit] * count, minlength=cells.q)
        n = totals.sum()
        expected = n * n - (totals * totals).sum()
        if expected > 0:
            values.append(1.0 - (n - 1.0) * float(weight @ observed_per_unit) / expected)
    if not values:
        return IntervalResult(None, "alpha is undefined in every bootstrap replicate")
    low, high = np.percentile(np.array(values), [2.5, 97.5])
    return IntervalResult((float(low), float(high)), None, len(values))


# ------------------------------------------------------------------------------------------- report
CATEGORY_METRICS = ("cohen_kappa", "fleiss_kappa", "krippendorff_alpha")


def category_key(category: str, metric: str) -> str:
    """The key in a report's ``undefined`` of one category's coefficient."""
    return f"per_category[{category}].{metric}"


def pair_key(a: str, b: str, metric: str) -> str:
    """The key in a report's ``undefined`` of one annotator pair's coefficient."""
    return f"pairwise[{a}, {b}].{metric}"


def agreement_report(
    table: AnyTable, *, bootstrap: int | None = None, seed: int | None = None
) -> dict[str, Any]:
    """The JSON object of docs/design.md §6 (key order as there); JSON-serialisable, no NaN.

    Every ``null`` has its reason in ``undefined``, keyed by metric name, ``per_category[<category>].
    <metric>`` or ``pairwise[<a>, <b>].<metric>``. ``n_ratings`` counts (item, annotator) ratings (a set
    is one rating). Multi tables add ``krippendorff_alpha_masi`` and ``krippendorff_alpha_jaccard``;
    ``bootstrap=B`` adds ``krippendorff_alpha_ci``.
    """
    undefined: dict[str, str] = {}

    def put(key: str, result: Result) -> float | None:
        if result.reason is not None:
            undefined[key] = result.reason
        return result.value

    nominal = _nominal(table)
    cells = nominal.cells
    report: dict[str, Any] = {
        "n_items": len(table.items),
        "n_annotators": len(table.annotators),
        "n_ratings": table.n_ratings,
        "percent_agreement": put("percent_agreement", _result(_percent_agreement(cells))),
        "cohen_kappa": put("cohen_kappa", _cohen_kappa(nominal)),
        "fleiss_kappa": put("fleiss_kappa", _result(_fleiss(cells))),
        "krippendorff_alpha": put("krippendorff_alpha", _result(_alpha(cells))),
        "gwet_ac1": put("gwet_ac1", _result(_ac1(cells, nominal.n_declared))),
    }
    if isinstance(table, MultiRatingTable):
        set_sums = _set_alpha_sums(table)
        report["krippendorff_alpha_masi"] = put("krippendorff_alpha_masi", _set_alpha(set_sums, "masi"))
        report["krippendorff_alpha_jaccard"] = put(
            "krippendorff_alpha_jaccard", _set_alpha(set_sums, "jaccard")
        )
    report["per_category"] = {
        name: {
            metric: put(category_key(name, metric), getattr(agreement, metric)) for metric in CATEGORY_METRICS
        }
        for name, agreement in per_category(table).items()
    }
    report["pairwise"] = [
        {
            "a": pair.a,
            "b": pair.b,
            "n": pair.n,
            "percent_agreement": put(pair_key(pair.a, pair.b, "percent_agreement"), pair.percent_agreement),
            "cohen_kappa": put(pair_key(pair.a, pair.b, "cohen_kappa"), pair.cohen_kappa),
        }
        for pair in _pairwise(nominal, table.annotators)
    ]
    if bootstrap is not None:
        interval = _bootstrap(cells, bootstrap, seed)
        report["krippendorff_alpha_ci"] = None if interval.value is None else list(interval.value)
        if interval.reason is not None:
            undefined["krippendorff_alpha_ci"] = interval.reason
    report["undefined"] = undefined
    return report
