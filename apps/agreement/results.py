"""What a coefficient returns (`metrics.py`): a :class:`Result` (a value, or ``None`` with the reason it is
undefined), an interval, and the per-pair, per-category and confusion-matrix records. Pure module: no
Django. `metrics` re-exports every public name."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from .rating_tables import IntArray


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
    def of(cls, value: Fraction | float) -> Result:
        return cls(float(value))

    @classmethod
    def undefined(cls, reason: str) -> Result:
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


def result_of(value: Fraction | str) -> Result:
    return Result.undefined(value) if isinstance(value, str) else Result.of(value)
