"""Bootstrap intervals for Cohen's kappa, Fleiss' kappa and Gwet's AC1 (pure: numpy, no Django).

Each interval is the 95 % percentile interval (``numpy.percentile(..., [2.5, 97.5])``) of the coefficient
over ``replicates`` bootstrap samples of the items, drawn with replacement from the items the coefficient
is computed on: the items both annotators rated (Cohen), the rated items (Fleiss, AC1; AC1's category
shares are averaged over them, its agreement over those with two or more ratings, as the point estimate).
Replicates where the coefficient is undefined are dropped, as for alpha (`metrics.bootstrap_alpha_ci`).

Items with the same ratings (the same multiset of values) are exchangeable: every coefficient here depends
only on how many items of each such *profile* a sample holds. Drawing n items with replacement is therefore
the same as drawing the profiles' counts from a multinomial distribution with the profiles' shares, which
this module does (``Generator.multinomial``), so a replicate costs the number of distinct profiles, not the
number of items, and replicates are computed a block at a time as matrix products. Each coefficient draws
from its own ``numpy.random.default_rng(seed)``, so an interval does not change when another is added.
"""

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import numpy.typing as npt

from .results import IntervalResult

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

BLOCK_CELLS = 4_000_000
"""The most (replicate x profile) weights held at once."""


@dataclass(frozen=True)
class Profiles:
    """The distinct rating profiles of a set of items.

    ``size[p]`` items share profile p; profile p has ``m[p]`` ratings, ``count[j]`` of them with value
    ``code[j]`` for the cells j with ``profile[j] == p``; ``q`` values in all.
    """

    size: IntArray
    m: IntArray
    profile: IntArray
    code: IntArray
    count: IntArray
    q: int

    def per_profile(self, values: FloatArray) -> FloatArray:
        """Sum of ``values`` (one per cell) for each profile."""
        return np.bincount(self.profile, weights=values, minlength=len(self.size)).astype(np.float64)

    def shares(self, weights: FloatArray, values: FloatArray) -> FloatArray:
        """``(replicates x q)``: for each replicate (a row of profile weights), the sum per value of the
        cells' ``values`` weighted by their profile's weight."""
        out = np.zeros((weights.shape[0], self.q))
        for k, cells in self.cells_of_value.items():
            out[:, k] = weights[:, self.profile[cells]] @ values[cells]
        return out

    @cached_property
    def cells_of_value(self) -> dict[int, IntArray]:
        """The cells of each value that has any, computed once for every block of replicates."""
        order = np.argsort(self.code, kind="stable")
        values, starts = np.unique(self.code[order], return_index=True)
        return dict(zip(values.tolist(), np.split(order, starts[1:]), strict=True))


def profiles(unit: IntArray, code: IntArray, count: IntArray, q: int) -> Profiles:
    """Group units by their ratings: the sparse cells ``count[j]`` ratings of ``unit[j]`` had value
    ``code[j]`` (as `metrics._Cells`). Units without any cell are in no profile."""
    empty = np.zeros(0, np.int64)
    if unit.size == 0:
        return Profiles(empty, empty, empty, empty, empty, q)
    order = np.lexsort((code, unit))
    unit, code, count = unit[order], code[order], count[order]
    starts = np.flatnonzero(np.r_[True, unit[1:] != unit[:-1]])
    lengths = np.diff(np.r_[starts, unit.size])
    # One row per rated unit: its (code, count) pairs in code order, padded with -1.
    row = np.repeat(np.arange(starts.size), lengths)
    column = 2 * (np.arange(unit.size) - np.repeat(starts, lengths))
    rows = np.full((starts.size, 2 * int(lengths.max())), -1, dtype=np.int64)
    rows[row, column] = code
    rows[row, column + 1] = count
    distinct, size = np.unique(rows, axis=0, return_counts=True)
    codes, counts = distinct[:, 0::2], distinct[:, 1::2]
    filled = codes >= 0
    profile = np.nonzero(filled)[0]
    m = np.where(filled, counts, 0).sum(axis=1)
    return Profiles(
        size.astype(np.int64), m.astype(np.int64), profile.astype(np.int64), codes[filled], counts[filled], q
    )


def percentile_interval(values: FloatArray, what: str) -> IntervalResult:
    if values.size == 0:
        return IntervalResult(None, f"{what} is undefined in every bootstrap replicate")
    low, high = np.percentile(values, [2.5, 97.5])
    return IntervalResult((float(low), float(high)), None, int(values.size))


Statistic = Callable[[FloatArray], FloatArray]
"""Profile weights (replicates x profiles) -> the coefficient per replicate, NaN where undefined."""


def _replicate(size: IntArray, statistic: Statistic, replicates: int, seed: int | None) -> FloatArray:
    """The statistic over ``replicates`` samples of the items, ``size[p]`` of them of profile p."""
    if replicates < 1:
        raise ValueError(f"the number of bootstrap replicates must be positive, got {replicates}")
    rng = np.random.default_rng(seed)
    n_items = int(size.sum())
    block = max(1, BLOCK_CELLS // max(len(size), 1))
    values = []
    for start in range(0, replicates, block):
        weights = rng.multinomial(n_items, size / n_items, size=min(block, replicates - start)).astype(
            np.float64
        )
        values.append(statistic(weights))
    result: FloatArray = np.concatenate(values)
    finite: FloatArray = result[np.isfinite(result)]
    return finite


def _divide(numerator: FloatArray, denominator: FloatArray) -> FloatArray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(denominator != 0, numerator / np.where(denominator != 0, denominator, 1), np.nan)


@dataclass(frozen=True)
class Resampling:
    """A coefficient as a function of the sample: ``statistic(weights)`` is its value (NaN where undefined)
    for each row of ``weights``, the number of items of each profile in a sample; ``size`` is that number
    in the study's own sample. A row of ``size`` itself gives the point estimate."""

    size: IntArray
    statistic: Statistic
    name: str

    def interval(self, replicates: int, seed: int | None) -> IntervalResult:
        return percentile_interval(_replicate(self.size, self.statistic, replicates, seed), self.name)


def cohen_kappa(codes_a: IntArray, codes_b: IntArray, q: int) -> Resampling | str:
    """Cohen's kappa of two annotators' codes (-1: not rated), over the items both rated; its profiles are
    the (a, b) pairs of values, in ``np.unique`` order of ``a * q + b``."""
    both = (codes_a >= 0) & (codes_b >= 0)
    if not both.any():
        return "no item was rated by both annotators"
    pairs, size = np.unique(codes_a[both] * q + codes_b[both], return_counts=True)
    row = np.zeros((pairs.size, q))
    col = np.zeros((pairs.size, q))
    row[np.arange(pairs.size), pairs // q] = 1
    col[np.arange(pairs.size), pairs % q] = 1
    agree = (pairs // q == pairs % q).astype(np.float64)

    def kappa(weights: FloatArray) -> FloatArray:
        n = weights.sum(axis=1)
        chance = ((weights @ row) * (weights @ col)).sum(axis=1)
        return _divide(n * (weights @ agree) - chance, n * n - chance)

    return Resampling(size.astype(np.int64), kappa, "Cohen's kappa")


def fleiss_kappa(found: Profiles) -> Resampling | str:
    """Fleiss' kappa over the rated items; they must all have the same number (two or more) of ratings."""
    sizes = np.unique(found.m)
    if sizes.size != 1 or sizes[0] < 2:
        return "Fleiss' kappa needs the same number (two or more) of ratings on every item"
    m = float(sizes[0])
    squares = found.per_profile((found.count * found.count).astype(np.float64))

    def kappa(weights: FloatArray) -> FloatArray:
        n = weights.sum(axis=1)
        p_bar = (weights @ (squares - m)) / (n * m * (m - 1))
        p = found.shares(weights, found.count.astype(np.float64)) / (n * m)[:, None]
        p_e = (p * p).sum(axis=1)
        return _divide(p_bar - p_e, 1 - p_e)

    return Resampling(found.size, kappa, "Fleiss' kappa")


def gwet_ac1(found: Profiles, n_declared: int) -> Resampling | str:
    """Gwet's AC1 over ``n_declared`` possible values, as `metrics.gwet_ac1`: agreement over the items
    with two or more ratings, the category shares over every rated item."""
    if n_declared < 2:
        return "Gwet's AC1 needs two or more possible values"
    pairable = (found.m >= 2).astype(np.float64)
    m = found.m.astype(np.float64)
    pairs = found.per_profile((found.count * (found.count - 1)).astype(np.float64))
    agreement = np.where(found.m >= 2, pairs / np.maximum(m * (m - 1), 1), 0.0)
    share_of_unit = found.count / m[found.profile]

    def ac1(weights: FloatArray) -> FloatArray:
        p_a = _divide(weights @ agreement, weights @ pairable)
        pi = found.shares(weights, share_of_unit) / weights.sum(axis=1)[:, None]
        p_e = (1 - (pi * pi).sum(axis=1)) / (n_declared - 1)
        return _divide(p_a - p_e, 1 - p_e)

    return Resampling(found.size, ac1, "Gwet's AC1")


def interval(resampling: Resampling | str, replicates: int, seed: int | None) -> IntervalResult:
    """The 95 % interval, or the reason the coefficient cannot be resampled."""
    if isinstance(resampling, str):
        return IntervalResult(None, resampling)
    return resampling.interval(replicates, seed)
