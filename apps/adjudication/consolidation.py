"""Compare the annotators' findings of one item: unanimous, majority or disagreement
(docs/design.md §2 step 7).

No Django. An annotation is a sequence of *findings*; a finding maps a dimension key to its value: a
``frozenset`` of category ids (one id for a single-choice dimension, several for a multi-choice one) or
``PENDING`` (the annotator left the dimension undecided). A dimension absent from a finding, or mapped to an
empty set, was not answered (it did not apply).

Conventions, shared with the agreement figures (§6):

* Labels are compared as **canonical value maps**: the order of findings, of dimensions and of the chosen
  categories does not matter; *pending* is a value of its own. Findings form a multiset: an annotation that
  reports the same fault twice differs from one that reports it once.
* **Unanimous**: every annotation has the same canonical findings and none of them is pending.
* **Majority** (only with the rule ``"majority"`` and ``k >= 3`` annotations): no value is pending, a strict
  majority (more than ``k / 2``) reports the same number of findings, and after aligning those annotations'
  findings (see `align`) every (finding, dimension) has a value chosen by a strict majority of all ``k``
  annotators. An annotator whose number of findings is in the minority votes against every value.
* Anything else is a **disagreement**, with the dimensions on which the annotations differ.

An item is consolidated at all only once it is `ready` (`apps.annotation.completion`, the rule the
annotators' lock shares): every annotation of its round submitted, and at
least two of them and at least as many as the round's overlap (docs/design.md §2 step 7). One
annotator's labels are never agreement: until a second annotator submits, the item waits.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Final, Literal

PENDING: Final = "pending"

Value = frozenset[int] | Literal["pending"]
FindingValues = Mapping[str, Value]
Findings = Sequence[FindingValues]

# A canonical value is the sorted tuple of category ids; the empty tuple stands for *pending* (an answered
# dimension always has at least one category, so the two never collide). Tuples sort, so whole annotations
# can be put in a canonical order.
CanonicalValue = tuple[int, ...]
CanonicalFinding = tuple[tuple[str, CanonicalValue], ...]
CanonicalFindings = tuple[CanonicalFinding, ...]

# Brute-force alignment tries every pairing up to this many findings; past it, a greedy pairing is used.
_EXHAUSTIVE_LIMIT: Final = 7


class Rule(StrEnum):
    UNANIMOUS = "unanimous"
    MAJORITY = "majority"


class Outcome(StrEnum):
    UNANIMOUS = "unanimous"
    MAJORITY = "majority"
    DISAGREEMENT = "disagreement"


@dataclass(frozen=True)
class Consolidation:
    """The result for one item.

    `findings` holds the gold findings (canonical order) when `outcome` is unanimous or majority and is
    empty for a disagreement. `disagreeing_dimensions` lists, sorted, the dimensions where annotations
    differ (for a majority: where the minority differed).
    """

    outcome: Outcome
    findings: tuple[dict[str, frozenset[int]], ...] = ()
    disagreeing_dimensions: tuple[str, ...] = ()

    @property
    def decided(self) -> bool:
        return self.outcome is not Outcome.DISAGREEMENT


@dataclass(frozen=True)
class Change:
    """How a decision differs from one annotation.

    `dimensions` maps each dimension whose values differ to ``(annotator's values, decision's values)``,
    each a sorted tuple of category ids with ``PENDING`` for a pending value.
    """

    identical: bool
    findings_from: int
    findings_to: int
    dimensions: dict[str, tuple[tuple[int | str, ...], tuple[int | str, ...]]] = field(default_factory=dict)


# --- Canonical forms -----------------------------------------------------------------------------------


def canonical_value(value: Value) -> CanonicalValue | None:
    """``()`` for pending, the sorted ids otherwise, None for an unanswered (empty) value."""
    if value == PENDING:
        return ()
    if not isinstance(value, frozenset | set):
        raise TypeError(f"a value is a frozenset of category ids or {PENDING!r}, got {value!r}")
    return tuple(sorted(value)) or None


def canonical_finding(finding: FindingValues) -> CanonicalFinding:
    """The finding as sorted ``(dimension, value)`` pairs, unanswered dimensions dropped."""
    pairs = []
    for dimension, value in finding.items():
        canonical = canonical_value(value)
        if canonical is not None:
            pairs.append((dimension, canonical))
    return tuple(sorted(pairs))


def canonical_findings(findings: Findings) -> CanonicalFindings:
    """The annotation's findings as a sorted multiset of canonical findings (order-insensitive)."""
    return tuple(sorted(canonical_finding(f) for f in findings))


def same_labels(a: Findings, b: Findings) -> bool:
    """True when two annotations (or an annotation and a decision) carry identical labels."""
    return canonical_findings(a) == canonical_findings(b)


def has_pending(findings: Findings) -> bool:
    return any(value == PENDING for finding in findings for value in finding.values())


def _as_value(canonical: CanonicalValue) -> Value:
    return PENDING if canonical == () else frozenset(canonical)


def _dimensions(annotations: Iterable[Findings]) -> set[str]:
    return {
        d
        for findings in annotations
        for f in findings
        for d, v in f.items()
        if canonical_value(v) is not None
    }


def _value_of(finding: CanonicalFinding, dimension: str) -> CanonicalValue | None:
    for key, value in finding:
        if key == dimension:
            return value
    return None


# --- Alignment -----------------------------------------------------------------------------------------


def _score(a: CanonicalFinding, b: CanonicalFinding) -> int:
    """How many dimensions two findings answer identically."""
    mapping = dict(b)
    return sum(1 for key, value in a if mapping.get(key) == value)


def align(reference: Findings, other: Findings) -> list[int | None]:
    """For each finding of `reference` (in canonical order), the index into `other`'s canonical order of
    the finding paired with it, or None when `other` has fewer findings.

    The pairing maximises the number of identically answered dimensions; ties go to the lexicographically
    smallest pairing, so the result does not depend on the order in which either annotation listed its
    findings. Up to 7 findings every pairing is tried; beyond, findings are paired greedily.
    """
    ref = canonical_findings(reference)
    oth = canonical_findings(other)
    return _align(ref, oth)


def _align(ref: CanonicalFindings, oth: CanonicalFindings) -> list[int | None]:
    n, m = len(ref), len(oth)
    if n == 0:
        return []
    slots = min(n, m)
    if max(n, m) <= _EXHAUSTIVE_LIMIT:
        best: tuple[int | None, ...] | None = None
        best_score = -1
        for chosen_refs in itertools.combinations(range(n), slots):
            for chosen_oth in itertools.permutations(range(m), slots):
                pairing: list[int | None] = [None] * n
                for r, o in zip(chosen_refs, chosen_oth, strict=True):
                    pairing[r] = o
                score = sum(_score(ref[r], oth[o]) for r, o in zip(chosen_refs, chosen_oth, strict=True))
                key = tuple(pairing)
                if score > best_score or (score == best_score and best is not None and _lt(key, best)):
                    best, best_score = key, score
        return list(best or ())
    pairing_greedy: list[int | None] = [None] * n
    free = set(range(m))
    for r in range(n):
        if not free:
            break
        o = max(sorted(free), key=lambda j: _score(ref[r], oth[j]))
        pairing_greedy[r] = o
        free.discard(o)
    return pairing_greedy


def _lt(a: tuple[int | None, ...], b: tuple[int | None, ...]) -> bool:
    """Order pairings with None after every index, so complete pairings come first."""
    return tuple(m if m is not None else 1 << 30 for m in a) < tuple(
        m if m is not None else 1 << 30 for m in b
    )


def align_rows(annotations: Sequence[Findings]) -> list[list[int | None]]:
    """Rows for showing annotations side by side: row ``i`` gives, for each annotation, the index (into that
    annotation's canonical order) of its finding shown in row ``i``, or None.

    The annotation with the most findings (ties: the smallest canonical form) is the reference; every other
    annotation is aligned to it with `align`. The result does not depend on the order of `annotations`
    except for the column order itself.
    """
    if not annotations:
        return []
    canon = [canonical_findings(a) for a in annotations]
    ref_index = min(range(len(canon)), key=lambda i: (-len(canon[i]), canon[i]))
    reference = canon[ref_index]
    columns = [
        list(range(len(reference))) if i == ref_index else _align(reference, c) for i, c in enumerate(canon)
    ]
    return [[column[row] for column in columns] for row in range(len(reference))]


def ordered(findings: Findings) -> list[dict[str, Value]]:
    """The findings in canonical order (the order `align` and `align_rows` index into), as plain dicts."""
    return [{d: _as_value(v) for d, v in f} for f in canonical_findings(findings)]


# --- Consolidation -------------------------------------------------------------------------------------


def _projection(findings: CanonicalFindings, dimension: str) -> tuple[tuple[int, ...], ...]:
    # An unanswered dimension is (-1,) so that "not answered" differs from every real value and from
    # pending (()); category ids are positive.
    return tuple(sorted(v if (v := _value_of(f, dimension)) is not None else (-1,) for f in findings))


def disagreeing_dimensions(annotations: Sequence[Findings]) -> tuple[str, ...]:
    """Dimensions where the annotations' values differ or any value is pending, sorted.

    Each annotation is projected on a dimension as the multiset of its findings' values there. When the
    annotations differ only in how values pair up into findings (no projection differs), every answered
    dimension is reported, since the lead must look at all of them.
    """
    canon = [canonical_findings(a) for a in annotations]
    dims = _dimensions(annotations)
    differing = {
        d
        for d in dims
        if len({_projection(c, d) for c in canon}) > 1 or any(_value_of(f, d) == () for c in canon for f in c)
    }
    if not differing and len(set(canon)) > 1:
        differing = dims
    return tuple(sorted(differing))


def consolidate(annotations: Sequence[Findings], *, rule: Rule | str = Rule.UNANIMOUS) -> Consolidation:
    """Consolidate the k submitted annotations of one item (module docstring for the rules).

    `annotations` holds every annotation of the item's round, in any order: swapping annotators changes
    nothing. With no annotation at all there is nothing to agree on: a disagreement with no dimensions.
    Raises ValueError on an unknown rule.
    """
    rule = Rule(rule)
    canon = [canonical_findings(a) for a in annotations]
    if not canon:
        return Consolidation(Outcome.DISAGREEMENT)
    differing = disagreeing_dimensions(annotations)
    pending = any(has_pending(a) for a in annotations)
    if not pending and len(set(canon)) == 1 and canon[0]:
        return Consolidation(Outcome.UNANIMOUS, tuple(_as_gold(f) for f in canon[0]))
    if rule is Rule.MAJORITY and len(canon) >= 3 and not pending:
        gold = _majority(canon)
        if gold is not None:
            return Consolidation(Outcome.MAJORITY, gold, differing)
    return Consolidation(Outcome.DISAGREEMENT, (), differing)


def _as_gold(finding: CanonicalFinding) -> dict[str, frozenset[int]]:
    return {d: frozenset(v) for d, v in finding}


def _majority(canon: list[CanonicalFindings]) -> tuple[dict[str, frozenset[int]], ...] | None:
    k = len(canon)
    count, votes = Counter(len(c) for c in canon).most_common(1)[0]
    if 2 * votes <= k or count == 0:
        return None
    group = [c for c in canon if len(c) == count]
    reference = min(group)
    aligned = [[c[j] for j in _align(reference, c) if j is not None] for c in group]
    dims = sorted({d for c in group for f in c for d, _ in f})
    gold: list[dict[str, frozenset[int]]] = []
    for i in range(count):
        finding: dict[str, frozenset[int]] = {}
        for d in dims:
            tally = Counter(_value_of(a[i], d) for a in aligned)
            value, n = tally.most_common(1)[0]
            if 2 * n <= k:
                return None
            if value is not None:
                finding[d] = frozenset(value)
        if not finding:
            return None
        gold.append(finding)
    return tuple(gold)


# --- Comparing a decision with the annotations ---------------------------------------------------------


def _flat(findings: CanonicalFindings, dimension: str) -> tuple[int | str, ...]:
    values: set[int | str] = set()
    for f in findings:
        v = _value_of(f, dimension)
        if v == ():
            values.add(PENDING)
        elif v is not None:
            values.update(v)
    return tuple(sorted(values, key=lambda x: (isinstance(x, str), str(x) if isinstance(x, str) else x)))


def change(annotation: Findings, decision: Findings) -> Change:
    """What the decision changed relative to one annotation: per dimension whose projection differs, the
    annotator's values and the decision's values (flattened over findings), and both finding counts."""
    a = canonical_findings(annotation)
    b = canonical_findings(decision)
    dims = sorted(_dimensions([annotation, decision]))
    changed = {d: (_flat(a, d), _flat(b, d)) for d in dims if _projection(a, d) != _projection(b, d)}
    return Change(identical=a == b, findings_from=len(a), findings_to=len(b), dimensions=changed)


def overrides_everyone(decision: Findings, annotations: Sequence[Findings]) -> bool:
    """True when the decision holds something no annotator chose: on some dimension its values match no
    annotation's, or its number of findings matches none. Picking each dimension from a different
    annotator is not an override. With no annotations, any decision is an override."""
    if not annotations:
        return True
    d = canonical_findings(decision)
    canon = [canonical_findings(a) for a in annotations]
    if all(len(c) != len(d) for c in canon):
        return True
    dims = _dimensions([decision, *annotations])
    return any(all(_projection(c, dim) != _projection(d, dim) for c in canon) for dim in dims)
