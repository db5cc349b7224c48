"""Thematic saturation of one dimension's codes. Pure: no Django.

After Guest, Namey and Chen (2020), "A simple method to assess and report thematic saturation", PLOS ONE
15(5): e0232076. The items are taken in the order of their first submission; a code (category) is *new*
on the first item where any annotator used it. With base size b, run length r and threshold t:

* the codes in the base are those used on items 1..b;
* for k = b, b+1, ..., the run is items k+1..k+r and its new codes are those first used in the run;
* saturation is reached at item k+r for the first k whose run has at most t * (codes in the base) new
  codes; it is *not reached* when no such k has a full run (fewer than b + r items included).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

DEFAULT_BASE = 50
DEFAULT_RUN = 25
DEFAULT_THRESHOLD = 0.05


@dataclass(frozen=True)
class Assessment:
    """The new codes per item (in order) and the Guest et al. assessment on them."""

    new_codes: tuple[int, ...]
    base: int
    run: int
    threshold: float
    codes_in_base: int
    saturation_item: int | None
    """1-based number of the item at which saturation is reached (k + r), or None (not reached)."""

    @property
    def items(self) -> int:
        return len(self.new_codes)

    @property
    def cumulative(self) -> list[int]:
        """Distinct codes seen after each item: the saturation curve."""
        total, out = 0, []
        for count in self.new_codes:
            total += count
            out.append(total)
        return out

    @property
    def total_codes(self) -> int:
        return sum(self.new_codes)

    def as_json(self, dimension: str) -> dict[str, Any]:
        """The `saturation --format json` object of docs/design.md's command-line contract."""
        return {
            "dimension": dimension,
            "items": self.items,
            "order": "first_submission",
            "new_codes": list(self.new_codes),
            "base": self.base,
            "run": self.run,
            "threshold": self.threshold,
            "codes_in_base": self.codes_in_base,
            "saturation_item": self.saturation_item,
        }


def check_parameters(base: int, run: int, threshold: float) -> None:
    """ValueError naming the bad parameter."""
    if base < 1:
        raise ValueError(f"the base size must be at least 1 item, got {base}")
    if run < 1:
        raise ValueError(f"the run length must be at least 1 item, got {run}")
    if not 0 <= threshold <= 1:
        raise ValueError(f"the threshold must be a share between 0 and 1, got {threshold}")


def new_code_counts(codes_per_item: Iterable[Iterable[str]]) -> list[int]:
    """For each item in order, how many of its codes no earlier item used."""
    seen: set[str] = set()
    counts = []
    for codes in codes_per_item:
        fresh = set(codes) - seen
        counts.append(len(fresh))
        seen |= fresh
    return counts


def assess(
    codes_per_item: Sequence[Iterable[str]],
    *,
    base: int = DEFAULT_BASE,
    run: int = DEFAULT_RUN,
    threshold: float = DEFAULT_THRESHOLD,
) -> Assessment:
    """The Guest et al. assessment of items given in order (module docstring). ValueError on bad
    parameters."""
    check_parameters(base, run, threshold)
    new = new_code_counts(codes_per_item)
    codes_in_base = sum(new[:base])
    reached: int | None = None
    limit = threshold * codes_in_base
    for k in range(base, len(new) - run + 1):
        if sum(new[k : k + run]) <= limit + 1e-12:
            reached = k + run
            break
    return Assessment(tuple(new), base, run, threshold, codes_in_base, reached)


def positions(first_submissions: Sequence[float], moments: Iterable[float]) -> list[int]:
    """For each moment (e.g. when a category was created), how many items had been first submitted by
    then: where the moment falls on the curve's x axis. `first_submissions` must be sorted."""
    return [bisect_right(first_submissions, moment) for moment in moments]


def text_report(dimension: str, assessment: Assessment, per_annotator: dict[str, Assessment]) -> str:
    """The `saturation --format text` output."""
    a = assessment
    verdict = (
        f"saturation reached at item {a.saturation_item}"
        if a.saturation_item is not None
        else "saturation not reached"
    )
    lines = [
        f"Dimension {dimension}: {a.items} items in order of first submission, {a.total_codes} codes.",
        f"Base {a.base} items ({a.codes_in_base} codes), run {a.run} items, threshold {a.threshold:g}: "
        f"{verdict}.",
    ]
    for name, own in per_annotator.items():
        own_verdict = f"item {own.saturation_item}" if own.saturation_item is not None else "not reached"
        lines.append(f"  {name}: {own.items} items, {own.total_codes} codes, saturation {own_verdict}")
    return "\n".join(lines) + "\n"
