"""The Alternative Annotator Test (Calderon, Reichart and Dror, ACL 2025): may a model replace one of
the annotators? Pure: no Django (numpy and scipy's Student t distribution only).

The procedure, exactly as the reference implementation (github.com/nitaytech/AltTest,
``alt_test_example.ipynb``, function ``alt_test``) computes it:

1. Items rated by fewer than ``min_annotators`` (2) annotators, or not rated by the model, are left out.
2. For each annotator *h* in turn (leave one out), on each remaining item *h* rated: the remaining
   annotators are the others who rated it; *h*'s score and the model's score are their mean similarity to
   each remaining annotator's label: 1 or 0 (same label or not) for a single-choice dimension, the
   Jaccard similarity of the two sets for a multi-choice one (two empty sets: 1). The model's indicator is
   1 where its score is at least *h*'s, *h*'s indicator 1 where *h*'s is at least the model's (a tie counts
   for both). An annotator with fewer than ``min_items`` (30) such items is left out.
3. ``p`` is the one-sided one-sample t-test of the differences (h's indicator - model's indicator)
   against ``epsilon`` (H1: the mean is below epsilon), as ``scipy.stats.ttest_1samp(..., epsilon,
   alternative="less")``: with every difference equal, ``p`` is 0 below epsilon, 1 above it, and undefined
   (None, never rejected) at it.
4. Benjamini-Yekutieli at ``q`` over the annotators' p values: with the p values sorted, the hypotheses up
   to the largest rank *i* with ``p_(i) <= i / m * q / H_m`` (``H_m`` = 1 + 1/2 + ... + 1/m) are rejected:
   the model *won* against those annotators.
5. The winning rate is rejected / annotators considered, passed when at least 0.5; the advantage
   probability (rho) is the mean over the annotators of the model's mean indicator.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy.special import stdtr

Label = str | frozenset[str]
"""A single-choice label, or the set of categories of a multi-choice rating."""

DEFAULT_EPSILON = 0.2
DEFAULT_Q = 0.05
MIN_ANNOTATORS = 2
MIN_ITEMS = 30
PASS_RATE = 0.5

__all__ = [
    "DEFAULT_EPSILON",
    "DEFAULT_Q",
    "AltTestResult",
    "AnnotatorResult",
    "Label",
    "alt_test",
    "benjamini_yekutieli",
    "similarity",
    "ttest_less_pvalue",
]


@dataclass(frozen=True)
class AnnotatorResult:
    annotator: str
    n: int
    p_value: float | None
    rho: float
    won: bool


@dataclass(frozen=True)
class AltTestResult:
    """``winning_rate`` and ``advantage_probability`` are None (with ``reason``) when no annotator had
    ``min_items`` items shared with the model and another annotator."""

    epsilon: float
    q: float
    winning_rate: float | None
    advantage_probability: float | None
    passed: bool
    annotators: tuple[AnnotatorResult, ...]
    skipped: dict[str, int]
    n_items: int
    reason: str | None = None

    def to_json(self, rater: str) -> dict[str, object]:
        """The ``alt_test`` object of the ``agreement --alt-test`` contract (docs/design.md)."""
        return {
            "rater": rater,
            "epsilon": self.epsilon,
            "q": self.q,
            "winning_rate": self.winning_rate,
            "advantage_probability": self.advantage_probability,
            "passed": self.passed,
            "n_items": self.n_items,
            "annotators": [
                {"annotator": a.annotator, "n": a.n, "p_value": a.p_value, "rho": a.rho, "won": a.won}
                for a in self.annotators
            ],
            "skipped": dict(self.skipped),
            "reason": self.reason,
        }


def similarity(a: Label, b: Label) -> float:
    """1.0 or 0.0 for two single labels; the Jaccard similarity of two sets (1.0 for two empty sets)."""
    if isinstance(a, frozenset) and isinstance(b, frozenset):
        union = len(a | b)
        return 1.0 if union == 0 else len(a & b) / union
    if isinstance(a, frozenset) or isinstance(b, frozenset):
        raise TypeError("a single label compared with a set: one dimension's labels are all one kind")
    return 1.0 if a == b else 0.0


def ttest_less_pvalue(values: npt.NDArray[np.float64], epsilon: float) -> float | None:
    """p of the one-sided one-sample t-test H1: mean(values) < epsilon (at least two values)."""
    n = len(values)
    mean = float(np.mean(values))
    sd = float(np.std(values, ddof=1))
    if sd == 0.0 or not math.isfinite(sd):
        if mean == epsilon:
            return None
        return 0.0 if mean < epsilon else 1.0
    t = (mean - epsilon) / (sd / math.sqrt(n))
    return float(stdtr(n - 1, t))


def benjamini_yekutieli(p_values: list[float | None], q: float) -> set[int]:
    """Indices of the hypotheses rejected by the Benjamini-Yekutieli procedure at FDR ``q``; an undefined
    p value (None) counts among the m hypotheses but is never rejected."""
    m = len(p_values)
    if m == 0:
        return set()
    p = np.array([math.inf if v is None else v for v in p_values], dtype=float)
    order = np.argsort(p, kind="stable")
    harmonic = float(np.sum(1.0 / np.arange(1, m + 1)))
    thresholds = np.arange(1, m + 1) / m * (q / harmonic)
    below = np.nonzero(p[order] <= thresholds)[0]
    if not below.size:
        return set()
    return {int(i) for i in order[: int(below.max()) + 1]}


def alt_test(
    model: Mapping[str, Label],
    humans: Mapping[str, Mapping[str, Label]],
    *,
    epsilon: float = DEFAULT_EPSILON,
    q: float = DEFAULT_Q,
    min_annotators: int = MIN_ANNOTATORS,
    min_items: int = MIN_ITEMS,
) -> AltTestResult:
    """The alternative-annotator test of ``model`` (item → label) against ``humans`` (annotator → item →
    label), module docstring. Annotators keep the order of ``humans``."""
    if not 0 < q < 1:
        raise ValueError(f"q must lie strictly between 0 and 1, got {q}")
    if not 0 <= epsilon < 1:
        raise ValueError(f"epsilon must lie in [0, 1), got {epsilon}")
    raters_of: dict[str, list[str]] = {}
    for annotator, labels in humans.items():
        for item in labels:
            raters_of.setdefault(item, []).append(annotator)
    kept = {i for i, who in raters_of.items() if len(who) >= min_annotators and i in model}

    results: list[tuple[str, int, float | None, float]] = []
    skipped: dict[str, int] = {}
    for excluded, labels in humans.items():
        items = [i for i in labels if i in kept]
        if len(items) < min_items:
            skipped[excluded] = len(items)
            continue
        model_wins = np.empty(len(items))
        human_wins = np.empty(len(items))
        for k, item in enumerate(items):
            others = [humans[h][item] for h in raters_of[item] if h != excluded]
            human_score = float(np.mean([similarity(labels[item], o) for o in others]))
            model_score = float(np.mean([similarity(model[item], o) for o in others]))
            model_wins[k] = 1.0 if model_score >= human_score else 0.0
            human_wins[k] = 1.0 if human_score >= model_score else 0.0
        p = ttest_less_pvalue(human_wins - model_wins, epsilon)
        results.append((excluded, len(items), p, float(np.mean(model_wins))))

    if not results:
        return AltTestResult(
            epsilon, q, None, None, False, (), skipped, len(kept),
            reason=f"no annotator has {min_items} or more items shared with the model and another annotator",
        )  # fmt: skip
    rejected = benjamini_yekutieli([p for _, _, p, _ in results], q)
    annotators = tuple(
        AnnotatorResult(name, n, p, rho, k in rejected) for k, (name, n, p, rho) in enumerate(results)
    )
    winning_rate = len(rejected) / len(results)
    advantage = float(np.mean([a.rho for a in annotators]))
    return AltTestResult(
        epsilon, q, winning_rate, advantage, winning_rate >= PASS_RATE, annotators, skipped, len(kept)
    )
