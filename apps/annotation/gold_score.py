"""Scoring an answer against a gold check. Pure module: no Django.

A **judgement** is what someone chose for one item in one dimension: the set of top-level categories over
all their findings there, *pending* a value of its own (the rule of the quality report and of agreement at
``--level 1``, docs/quality.md). A gold judgement is **correct** when it equals the gold answer's set; a
dimension the answer leaves empty is not scored.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

PENDING = "pending"


def judgements(
    findings: Iterable[Mapping[str, Iterable[int | None]]], top: Callable[[int], str]
) -> dict[str, frozenset[str]]:
    """Per dimension key, the set of top-level category keys over the findings (None: *pending*).
    `top` maps a category id to its top-level category's key."""
    out: dict[str, set[str]] = {}
    for finding in findings:
        for dimension, chosen in finding.items():
            values = out.setdefault(dimension, set())
            for category in chosen:
                values.add(PENDING if category is None else top(category))
    return {dimension: frozenset(values) for dimension, values in out.items() if values}


@dataclass(frozen=True)
class Check:
    """One scored judgement: the dimension, the answer given and the gold one."""

    dimension: str
    given: frozenset[str]
    gold: frozenset[str]

    @property
    def correct(self) -> bool:
        return self.given == self.gold


def checks(given: Mapping[str, frozenset[str]], gold: Mapping[str, frozenset[str]]) -> list[Check]:
    """The scored judgements of one item, in dimension order: every dimension the gold answer has a value
    in (an answer that left it empty scores as wrong)."""
    return [Check(d, given.get(d, frozenset()), gold[d]) for d in sorted(gold) if gold[d]]


@dataclass(frozen=True)
class Score:
    correct: int
    total: int

    @property
    def percent(self) -> float | None:
        """The share correct, in percent; None when nothing was scored."""
        return 100 * self.correct / self.total if self.total else None

    def passes(self, pass_mark: int | None) -> bool:
        """Whether the score reaches `pass_mark` (percent; None: no pass mark, always passes)."""
        if pass_mark is None:
            return True
        percent = self.percent
        return percent is not None and percent >= pass_mark - 1e-9


def score(all_checks: Sequence[Check]) -> Score:
    return Score(sum(1 for c in all_checks if c.correct), len(all_checks))
