"""The per-annotator quality report (docs/quality.md), computed from plain data. Pure module: no Django.

An annotator's **judgement** is their value for one unit (an item in a round) and one dimension: the set
of top-level categories over all their findings there, *pending* a value of its own (the rule agreement
uses, docs/agreement.md). A judgement is a **gold check** when it answers a gold check (an item a lead
marked as one, seeded into the round or given in a training round); the others are reliability
judgements. The **final** value of an item and a dimension is
its current decision's set of top-level categories.

Per annotator, dimension and round (and over all rounds, ``round`` None):

* ``n_gold`` / ``gold_accuracy``: gold checks with a final value, and the share whose value equals it,
  with a 95 % Wilson interval;
* ``n_final`` / ``final_accuracy`` / ``final_kappa``: reliability judgements of decided items with a
  final value in the dimension, the share equal to it (Wilson interval), and Cohen's kappa between the
  annotator's values and the final ones over those items (a set compared whole, as a nominal value);
* ``median_active_seconds``: the median active time per submitted item (measured in the browser: the
  workbench visible and the person active), over the annotator's items of the round;
* ``pending_rate``: the share of the annotator's judgements that are *pending*.

A figure that cannot be computed is ``None`` with its reason in ``undefined``.
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from scipy.stats import false_discovery_control, fisher_exact

from apps.agreement.metrics import RatingTable, cohen_kappa
from apps.raters.gold_metrics import wilson_interval

PENDING = "pending"
ALPHA = 0.05
NO_GOLD = "no gold check answered (a lead seeds gold checks into a round: docs/quality.md)"
FAST_WORDS_PER_SECOND = 10
"""Reading faster than 600 words a minute is skimming at best: an item labelled faster is flagged."""
FAST_MIN_WORDS = 100
"""Items shorter than this are never flagged as too fast: a short post can be read in seconds."""

CSV_FIELDS = (
    "annotator",
    "dimension",
    "round",
    "n_items",
    "n_gold",
    "gold_accuracy",
    "gold_low",
    "gold_high",
    "n_final",
    "final_accuracy",
    "final_low",
    "final_high",
    "final_kappa",
    "median_active_seconds",
    "pending_rate",
    "undefined",
)


@dataclass(frozen=True)
class Judgement:
    annotator: str
    round: int
    item: int
    dimension: str
    value: frozenset[str]
    gold: bool = False


@dataclass(frozen=True)
class Timing:
    """One submitted item's active seconds, and the length of the text the annotator had to read."""

    annotator: str
    round: int
    item: int
    seconds: int
    words: int


@dataclass
class ReportRow:
    annotator: str
    dimension: str
    round: int | None
    n_items: int
    n_gold: int
    gold_accuracy: float | None
    gold_interval: tuple[float, float] | None
    n_final: int
    final_accuracy: float | None
    final_interval: tuple[float, float] | None
    final_kappa: float | None
    median_active_seconds: float | None
    pending_rate: float | None
    undefined: dict[str, str] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return {
            "annotator": self.annotator,
            "dimension": self.dimension,
            "round": self.round,
            "n_items": self.n_items,
            "n_gold": self.n_gold,
            "gold_accuracy": self.gold_accuracy,
            "gold_accuracy_ci": list(self.gold_interval) if self.gold_interval else None,
            "n_final": self.n_final,
            "final_accuracy": self.final_accuracy,
            "final_accuracy_ci": list(self.final_interval) if self.final_interval else None,
            "final_kappa": self.final_kappa,
            "median_active_seconds": self.median_active_seconds,
            "pending_rate": self.pending_rate,
            "undefined": dict(self.undefined),
        }

    def as_csv(self) -> dict[str, Any]:
        gold, final = self.gold_interval or (None, None), self.final_interval or (None, None)
        return {
            "annotator": self.annotator,
            "dimension": self.dimension,
            "round": "all" if self.round is None else self.round,
            "n_items": self.n_items,
            "n_gold": self.n_gold,
            "gold_accuracy": _blank(self.gold_accuracy),
            "gold_low": _blank(gold[0]),
            "gold_high": _blank(gold[1]),
            "n_final": self.n_final,
            "final_accuracy": _blank(self.final_accuracy),
            "final_low": _blank(final[0]),
            "final_high": _blank(final[1]),
            "final_kappa": _blank(self.final_kappa),
            "median_active_seconds": _blank(self.median_active_seconds),
            "pending_rate": _blank(self.pending_rate),
            "undefined": "; ".join(f"{k}: {v}" for k, v in sorted(self.undefined.items())),
        }


def _blank(value: float | None) -> str | float:
    return "" if value is None else value


def value_name(value: frozenset[str]) -> str:
    """A judgement's value as one nominal label: its categories sorted and joined with '+'."""
    return "+".join(sorted(value)) if value else "(none)"


def _kappa(pairs: Sequence[tuple[frozenset[str], frozenset[str]]]) -> tuple[float | None, str | None]:
    triples = [
        (str(i), rater, value_name(value))
        for i, (mine, final) in enumerate(pairs)
        for rater, value in (("annotator", mine), ("final", final))
    ]
    if not triples:
        return None, "no decided item labelled"
    result = cohen_kappa(RatingTable.from_triples(triples, annotators=("annotator", "final")))
    return result.value, result.reason


def _row(
    annotator: str,
    dimension: str,
    round_number: int | None,
    judgements: Sequence[Judgement],
    finals: Mapping[tuple[int, str], frozenset[str]],
    seconds: Sequence[int],
) -> ReportRow:
    undefined: dict[str, str] = {}
    gold = [
        (j.value, finals[j.item, j.dimension])
        for j in judgements
        if j.gold and (j.item, j.dimension) in finals
    ]
    final = [
        (j.value, finals[j.item, j.dimension])
        for j in judgements
        if not j.gold and (j.item, j.dimension) in finals
    ]
    gold_hits = sum(1 for mine, answer in gold if mine == answer)
    final_hits = sum(1 for mine, answer in final if mine == answer)
    if not gold:
        undefined["gold_accuracy"] = NO_GOLD
    if not final:
        undefined["final_accuracy"] = "no decided item labelled (gold checks aside)"
    kappa, reason = _kappa(final)
    if reason:
        undefined["final_kappa"] = reason
    if not seconds:
        undefined["median_active_seconds"] = (
            "no active time recorded (labels imported, or made through the API)"
        )
    if not judgements:
        undefined["pending_rate"] = "no item labelled"
    pending = sum(1 for j in judgements if PENDING in j.value)
    return ReportRow(
        annotator=annotator,
        dimension=dimension,
        round=round_number,
        n_items=len(judgements),
        n_gold=len(gold),
        gold_accuracy=gold_hits / len(gold) if gold else None,
        gold_interval=wilson_interval(gold_hits, len(gold)),
        n_final=len(final),
        final_accuracy=final_hits / len(final) if final else None,
        final_interval=wilson_interval(final_hits, len(final)),
        final_kappa=kappa,
        median_active_seconds=float(statistics.median(seconds)) if seconds else None,
        pending_rate=pending / len(judgements) if judgements else None,
        undefined=undefined,
    )


def annotator_rows(
    judgements: Iterable[Judgement],
    finals: Mapping[tuple[int, str], frozenset[str]],
    timings: Iterable[Timing],
    *,
    round_number: int | None = None,
    overall: bool = True,
) -> list[ReportRow]:
    """The report's rows: per annotator and dimension, one row per round they labelled (only
    ``round_number`` when given) and, with ``overall``, one over all rounds (``round`` None). Sorted by
    annotator, dimension, round (the overall row last)."""
    by_key: dict[tuple[str, str], list[Judgement]] = defaultdict(list)
    for judgement in judgements:
        by_key[judgement.annotator, judgement.dimension].append(judgement)
    seconds: dict[tuple[str, int], list[int]] = defaultdict(list)
    for timing in timings:
        seconds[timing.annotator, timing.round].append(timing.seconds)
    rows: list[ReportRow] = []
    for (annotator, dimension), theirs in sorted(by_key.items()):
        rounds = sorted({j.round for j in theirs})
        if round_number is not None:
            rounds = [r for r in rounds if r == round_number]
        for number in rounds:
            rows.append(
                _row(
                    annotator,
                    dimension,
                    number,
                    [j for j in theirs if j.round == number],
                    finals,
                    seconds.get((annotator, number), []),
                )
            )
        if overall and round_number is None:
            every = [s for (name, _), values in sorted(seconds.items()) if name == annotator for s in values]
            rows.append(_row(annotator, dimension, None, theirs, finals, every))
    return rows


@dataclass(frozen=True)
class CategoryUse:
    """How often an annotator chose a category, against the other annotators of the same dimension.

    ``p_value``: Fisher's exact test (two-sided) of the annotator's judgements with and without the
    category against the other annotators'; ``q_value``: Benjamini-Hochberg adjusted over every test of
    the dimension (each annotator and category); ``tendency`` is ``over`` or ``under`` when q < 0.05,
    else ``""``. *Pending* is not a category and is not tested."""

    annotator: str
    dimension: str
    category: str
    count: int
    n: int
    share: float
    others_share: float
    p_value: float | None
    q_value: float | None
    tendency: str


def category_use(judgements: Iterable[Judgement]) -> list[CategoryUse]:
    """Per dimension, annotator and category used by anyone: the annotator's share of judgements that chose
    it against the pooled share of every other annotator (reliability judgements only), tested as
    `CategoryUse` says."""
    by_dimension: dict[str, dict[str, list[frozenset[str]]]] = defaultdict(lambda: defaultdict(list))
    for j in judgements:
        if not j.gold:
            by_dimension[j.dimension][j.annotator].append(j.value)
    uses: list[CategoryUse] = []
    for dimension, per_annotator in sorted(by_dimension.items()):
        counts = {a: Counter(c for value in values for c in value) for a, values in per_annotator.items()}
        categories = sorted({c for counter in counts.values() for c in counter} - {PENDING})
        rows: list[tuple[str, str, int, int, int, int]] = []
        for annotator, values in sorted(per_annotator.items()):
            others_n = sum(len(v) for a, v in per_annotator.items() if a != annotator)
            for category in categories:
                others = sum(counter[category] for a, counter in counts.items() if a != annotator)
                rows.append((annotator, category, counts[annotator][category], len(values), others, others_n))
        p_values = [
            float(fisher_exact([[k, n - k], [o, m - o]]).pvalue) if n and m else None
            for _, _, k, n, o, m in rows
        ]
        tested = [p for p in p_values if p is not None]
        adjusted = iter(false_discovery_control(tested, method="bh").tolist() if tested else [])
        for (annotator, category, k, n, o, m), p in zip(rows, p_values, strict=True):
            q = float(next(adjusted)) if p is not None else None
            share, others_share = (k / n if n else 0.0), (o / m if m else 0.0)
            tendency = ("over" if share > others_share else "under") if q is not None and q < ALPHA else ""
            uses.append(
                CategoryUse(annotator, dimension, category, k, n, share, others_share, p, q, tendency)
            )
    return uses


@dataclass(frozen=True)
class Confusion:
    annotator: str
    dimension: str
    chosen: str
    final: str
    count: int


def confusions(
    judgements: Iterable[Judgement], finals: Mapping[tuple[int, str], frozenset[str]], *, top: int = 3
) -> list[Confusion]:
    """Per annotator and dimension, the ``top`` most frequent (their value, the final value) pairs that
    differ, over reliability judgements of decided items; ties in name order."""
    pairs: dict[tuple[str, str], Counter[tuple[str, str]]] = defaultdict(Counter)
    for j in judgements:
        answer = finals.get((j.item, j.dimension))
        if answer is not None and not j.gold and j.value != answer:
            pairs[j.annotator, j.dimension][value_name(j.value), value_name(answer)] += 1
    found: list[Confusion] = []
    for (annotator, dimension), counter in sorted(pairs.items()):
        ranked = sorted(counter.items(), key=lambda kv: (-kv[1], kv[0]))[:top]
        found.extend(Confusion(annotator, dimension, a, b, n) for (a, b), n in ranked)
    return found


@dataclass(frozen=True)
class GoldMiss:
    annotator: str
    round: int
    item: int
    dimension: str
    given: str
    gold: str


def gold_misses(
    judgements: Iterable[Judgement], finals: Mapping[tuple[int, str], frozenset[str]]
) -> list[GoldMiss]:
    """Every gold check whose value differs from the gold answer (the item's final value), by annotator,
    round, item and dimension."""
    found = [
        GoldMiss(j.annotator, j.round, j.item, j.dimension, value_name(j.value), value_name(answer))
        for j in judgements
        if j.gold and (answer := finals.get((j.item, j.dimension))) is not None and j.value != answer
    ]
    return sorted(found, key=lambda m: (m.annotator, m.round, m.item, m.dimension))


def too_fast(timings: Iterable[Timing]) -> list[Timing]:
    """Items labelled much faster than their length suggests: at least `FAST_MIN_WORDS` words, read at
    more than `FAST_WORDS_PER_SECOND` words a second of active time. Longest text first."""
    flagged = [
        t for t in timings if t.words >= FAST_MIN_WORDS and t.seconds * FAST_WORDS_PER_SECOND < t.words
    ]
    return sorted(flagged, key=lambda t: (-t.words, t.annotator, t.round, t.item))


def drift(rows: Iterable[ReportRow]) -> dict[tuple[str, str], list[tuple[int, float]]]:
    """Per annotator and dimension, the final accuracy of each round in round order (rounds without a
    decided item left out): the points of the drift chart."""
    points: dict[tuple[str, str], list[tuple[int, float]]] = defaultdict(list)
    for row in rows:
        if row.round is not None and row.final_accuracy is not None:
            points[row.annotator, row.dimension].append((row.round, row.final_accuracy))
    return {key: sorted(values) for key, values in sorted(points.items())}


def text_report(rows: Sequence[ReportRow]) -> str:
    """The rows as a plain-text table for a terminal."""
    header = (
        f"{'annotator':<16} {'dimension':<16} {'round':>5} {'items':>5} {'gold':>11} {'final':>11} "
        f"{'kappa':>6} {'sec':>6} {'pend':>5}"
    )
    lines = [header, "-" * len(header)]

    def share(value: float | None, n: int) -> str:
        return f"{value:.2f} ({n})" if value is not None else f"- ({n})"

    def number(value: float | None, spec: str) -> str:
        return format(value, spec) if value is not None else "-"

    for r in rows:
        lines.append(
            f"{r.annotator[:16]:<16} {r.dimension[:16]:<16} {'all' if r.round is None else r.round:>5} "
            f"{r.n_items:>5} {share(r.gold_accuracy, r.n_gold):>11} {share(r.final_accuracy, r.n_final):>11} "
            f"{number(r.final_kappa, '.3f'):>6} {number(r.median_active_seconds, '.0f'):>6} "
            f"{number(r.pending_rate, '.2f'):>5}"
        )
    return "\n".join(lines)
