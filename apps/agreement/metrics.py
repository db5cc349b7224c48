"""Inter-rater agreement coefficients on plain data (docs/design.md §6; formulas in docs/agreement.md).

Pure module: numpy and the standard library, no Django. A coefficient takes a table and returns a
:class:`Result`, a value or ``None`` with the reason it is undefined; it never returns NaN, and never
turns an undefined coefficient into 1 or 0.

Point estimates are computed in exact rational arithmetic (:class:`fractions.Fraction` over integer
counts aggregated with numpy) and rounded once to a float, so they are the correctly rounded values of
the published formulas, and "expected disagreement is zero" is an exact test, not a float comparison.
Only the bootstrap replicates are float64.

The tables are `rating_tables.py`'s, the results `results.py`'s, set-valued alpha `set_alpha.py`'s; this
module re-exports them, so `metrics.RatingTable` and the rest keep working.

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

import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from . import bootstrap, kernels
from .rating_tables import (
    MAX_MULTI_CELLS,
    MISSING,
    NO_CATEGORY,
    AnyTable,
    BoolArray,
    IntArray,
    MultiRatingTable,
    RatingTable,
    _frozen,
)
from .results import CategoryAgreement, ConfusionMatrix, IntervalResult, PairAgreement, Result, result_of
from .set_alpha import (
    SetDistance,
    _set_alpha,
    _set_alpha_sums,
    jaccard_distance,
    krippendorff_alpha_set,
    masi_distance,
)

MAX_BOOTSTRAP = 10_000
"""The most bootstrap replicates the API and ``agreement --bootstrap`` accept."""


__all__ = [
    "CATEGORY_METRICS",
    "INTERVAL_METRICS",
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
    return len(a), result_of(pa), result_of(kappa)


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
    return result_of(_percent_agreement(_nominal(table).cells))


def krippendorff_alpha_nominal(table: AnyTable) -> Result:
    """Krippendorff's alpha, nominal, over items with two or more ratings; missing ratings allowed.

    Reference: ``krippendorff.alpha(level_of_measurement="nominal")``. Undefined when every pairable
    rating has the same value (expected disagreement zero).
    """
    return result_of(_alpha(_nominal(table).cells))


def fleiss_kappa(table: AnyTable) -> Result:
    """Fleiss' kappa; defined only when every item with a rating has the same number (>= 2) of them.

    Items without any rating are ignored. Reference: ``statsmodels.stats.inter_rater.fleiss_kappa`` on
    the items x categories count table.
    """
    return result_of(_fleiss(_nominal(table).cells))


def gwet_ac1(table: AnyTable) -> Result:
    """Gwet's AC1 over the declared categories (a multi table: over all 2**K subsets of them).

    Missing ratings as irrCAC ``CAC(ratings, categories=...).gwet()``: p_a over items with two or more
    ratings, the category shares pi_k averaged over every item with at least one rating.
    """
    nominal = _nominal(table)
    return result_of(_ac1(nominal.cells, nominal.n_declared))


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
        PairAgreement(a, b, n, result_of(pa), result_of(kappa))
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
        kappas = [result_of(v) for v in values]
    else:
        reason = f"Cohen's kappa needs exactly two annotators, the table has {len(table.annotators)}"
        kappas = [Result.undefined(reason)] * n_categories
    fleiss = kernels.binary_fleiss(chosen, names)
    alpha = kernels.binary_alpha(chosen, names)
    return {
        name: CategoryAgreement(kappas[k], result_of(fleiss[k]), result_of(alpha[k]))
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
    ``bootstrap=B`` adds ``krippendorff_alpha_ci``, ``cohen_kappa_ci``, ``fleiss_kappa_ci`` and
    ``gwet_ac1_ci`` (`INTERVAL_METRICS`).
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
        "percent_agreement": put("percent_agreement", result_of(_percent_agreement(cells))),
        "cohen_kappa": put("cohen_kappa", _cohen_kappa(nominal)),
        "fleiss_kappa": put("fleiss_kappa", result_of(_fleiss(cells))),
        "krippendorff_alpha": put("krippendorff_alpha", result_of(_alpha(cells))),
        "gwet_ac1": put("gwet_ac1", result_of(_ac1(cells, nominal.n_declared))),
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
        for key, interval in _intervals(nominal, report, undefined, bootstrap, seed).items():
            report[key] = None if interval.value is None else list(interval.value)
            if interval.reason is not None:
                undefined[key] = interval.reason
    report["undefined"] = undefined
    return report


INTERVAL_METRICS = ("krippendorff_alpha", "cohen_kappa", "fleiss_kappa", "gwet_ac1")
"""The coefficients a report with ``bootstrap`` gives a 95 % interval, as ``<metric>_ci``."""


def _intervals(
    nominal: _Nominal, report: dict[str, Any], undefined: dict[str, str], replicates: int, seed: int | None
) -> dict[str, IntervalResult]:
    """Each of `INTERVAL_METRICS`' bootstrap interval (`bootstrap.py`), or the point estimate's reason
    when the coefficient itself is undefined. Each coefficient draws from its own generator."""
    cells = nominal.cells
    found = bootstrap.profiles(cells.unit, cells.code, cells.count, cells.q)
    compute: dict[str, Callable[[], IntervalResult]] = {
        "krippendorff_alpha": lambda: _bootstrap(cells, replicates, seed),
        "cohen_kappa": lambda: bootstrap.interval(
            bootstrap.cohen_kappa(nominal.codes[:, 0], nominal.codes[:, 1], cells.q), replicates, seed
        ),
        "fleiss_kappa": lambda: bootstrap.interval(bootstrap.fleiss_kappa(found), replicates, seed),
        "gwet_ac1": lambda: bootstrap.interval(
            bootstrap.gwet_ac1(found, nominal.n_declared), replicates, seed
        ),
    }
    if replicates < 1:
        raise ValueError(f"the number of bootstrap replicates must be positive, got {replicates}")
    # Alpha's interval is drawn whatever its point estimate (as before the others had one), the others'
    # only when their point estimate is defined; otherwise the reason is the point estimate's.
    return {
        f"{metric}_ci": compute[metric]()
        if metric == "krippendorff_alpha" or report[metric] is not None
        else IntervalResult(None, f"undefined: {undefined[metric]}")
        for metric in INTERVAL_METRICS
    }
