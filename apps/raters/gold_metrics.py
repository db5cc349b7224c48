"""A rater measured against the gold decisions: accuracy, per-category precision, recall and F1, and the
confusion matrix. Pure: no Django.

Each unit is one item of one dimension: the gold category keys (the current decision's) and the rater's.
Accuracy is the share of items whose sets are equal, with a Wilson score interval (95 %). Per category:
support (gold items with it), predicted (items the rater gave it), true positives, precision = tp /
predicted, recall = tp / support, F1 their harmonic mean, each None where its denominator is 0 (so a
category nobody used does not pull the macro average to 0). Macro F1 averages the defined F1s; micro F1
pools the counts. The confusion matrix counts (gold, rater) pairs for single-choice dimensions, where
each side holds one category.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Any

Z95 = 1.959963984540054


def wilson_interval(successes: int, n: int, z: float = Z95) -> tuple[float, float] | None:
    """The Wilson score interval of a proportion (95 % by default); None when n is 0. The one copy: the
    annotator quality report (`quality/report.py`) uses it too."""
    if n <= 0:
        return None
    if not 0 <= successes <= n:
        raise ValueError(f"successes must lie in [0, {n}], got {successes}")
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def _ratio(a: int, b: int) -> float | None:
    return a / b if b else None


def _f1(precision: float | None, recall: float | None) -> float | None:
    if precision is None or recall is None:
        return None
    return 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)


def gold_report(
    pairs: Sequence[tuple[frozenset[str], frozenset[str]]], categories: Sequence[str], *, multiple: bool
) -> dict[str, Any]:
    """`pairs` are (gold keys, rater keys) per item; `categories` the dimension's keys in codebook order
    (a key outside them is still counted, after them). The report (module docstring) as plain data."""
    keys = list(dict.fromkeys([*categories, *sorted({k for g, r in pairs for k in g | r} - set(categories))]))
    exact = sum(1 for gold, rated in pairs if gold == rated)
    support: Counter[str] = Counter()
    predicted: Counter[str] = Counter()
    hits: Counter[str] = Counter()
    for gold, rated in pairs:
        support.update(gold)
        predicted.update(rated)
        hits.update(gold & rated)
    per_category = {}
    for key in keys:
        precision, recall = _ratio(hits[key], predicted[key]), _ratio(hits[key], support[key])
        per_category[key] = {
            "support": support[key],
            "predicted": predicted[key],
            "true_positives": hits[key],
            "precision": precision,
            "recall": recall,
            "f1": _f1(precision, recall),
        }
    f1s = [row["f1"] for row in per_category.values() if row["f1"] is not None]
    tp, n_predicted, n_support = sum(hits.values()), sum(predicted.values()), sum(support.values())
    interval = wilson_interval(exact, len(pairs))
    report: dict[str, Any] = {
        "n": len(pairs),
        "accuracy": _ratio(exact, len(pairs)),
        "accuracy_ci": list(interval) if interval else None,
        "macro_f1": sum(f1s) / len(f1s) if f1s else None,
        "micro_f1": _f1(_ratio(tp, n_predicted), _ratio(tp, n_support)),
        "per_category": per_category,
    }
    if not multiple:
        cells: Counter[tuple[str, str]] = Counter(
            (next(iter(g)), next(iter(r))) for g, r in pairs if len(g) == 1 and len(r) == 1
        )
        report["confusion"] = {
            "categories": keys,
            "counts": [[cells[(g, r)] for r in keys] for g in keys],  # rows: gold; columns: the rater
        }
    return report
