"""Reproducible samples of items and balanced assignment to annotators (docs/design.md §2, steps 2-3).
No Django.

Every function is deterministic: the same inputs and seed give the same result on every machine and
Python 3 version (``random.Random`` with an int or str seed, ``shuffle`` and ``random``, whose algorithms
Python keeps stable), whatever the order of the inputs, because ids and names are sorted first.
"""

from __future__ import annotations

import random
from collections import Counter, deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import NamedTuple

# Closures of `rebalance_open`: find an item one annotator can hand another, and hand it over.
_Movable = Callable[[str, str], int | None]
_Apply = Callable[[int, str, str], None]


class SamplingError(ValueError):
    """Input a sample or an assignment cannot be made from; the message names the value at fault."""


def _distinct_sorted(item_ids: Iterable[int], what: str = "item") -> list[int]:
    counts = Counter(item_ids)
    repeated = sorted(i for i, n in counts.items() if n > 1)
    if repeated:
        raise SamplingError(f"{what} ids appear more than once: {repeated[:10]}")
    return sorted(counts)


def allocate_proportional(stratum_sizes: Mapping[str, int], size: int) -> dict[str, int]:
    """How many of `size` items each stratum gets: proportional allocation with largest-remainder rounding
    (Hamilton's method).

    Stratum h of N_h items (N in all) gets ⌊size·N_h/N⌋; the items still missing go one each to the strata
    with the largest remainders size·N_h mod N (ties: the larger stratum, then the label in sorted order).
    The shares add up to `size` exactly and never exceed a stratum's size; a stratum whose exact share is
    below one may get none, as proportional allocation implies.
    """
    for label, count in stratum_sizes.items():
        if count < 0:
            raise SamplingError(f"stratum {label!r} has a negative size {count}")
    total = sum(stratum_sizes.values())
    if size < 0:
        raise SamplingError(f"sample size must be 0 or more, got {size}")
    if size > total:
        raise SamplingError(f"cannot draw {size} items from a population of {total}")
    if total == 0:
        return {label: 0 for label in stratum_sizes}
    shares = {label: size * count // total for label, count in stratum_sizes.items()}
    left = size - sum(shares.values())
    ranked = sorted(stratum_sizes, key=lambda h: (-(size * stratum_sizes[h] % total), -stratum_sizes[h], h))
    for label in ranked[:left]:
        shares[label] += 1
    return shares


def draw_sample(
    item_ids: Sequence[int], size: int, seed: int, strata: Mapping[int, str] | None = None
) -> list[int]:
    """A simple random sample without replacement of `size` of `item_ids`, reproducible from `seed`.

    Uniform: the ids are sorted, shuffled with ``random.Random(seed)`` and the first `size` taken, so a
    larger sample with the same seed extends a smaller one. Stratified (`strata` maps every item id to its
    stratum; extra keys are ignored): `allocate_proportional` gives each stratum its share, each stratum is
    shuffled with its own generator seeded ``f"{seed}:{stratum}"`` (a stratum's draw does not depend on the
    other strata) and the union is shuffled with ``random.Random(seed)``.

    Returns the ids in random order (a fair queue order). Raises SamplingError for a negative size, a size
    above the number of items, a repeated id, or an item without a stratum.
    """
    population = _distinct_sorted(item_ids)
    if size < 0:
        raise SamplingError(f"sample size must be 0 or more, got {size}")
    if size > len(population):
        raise SamplingError(f"cannot draw {size} items from a population of {len(population)}")
    if strata is None:
        rng = random.Random(seed)
        rng.shuffle(population)
        return population[:size]
    groups: dict[str, list[int]] = {}
    missing = []
    for item_id in population:
        label = strata.get(item_id)
        if label is None:
            missing.append(item_id)
        elif not isinstance(label, str):
            raise SamplingError(f"item {item_id}: stratum must be a string, got {label!r}")
        else:
            groups.setdefault(label, []).append(item_id)
    if missing:
        raise SamplingError(f"{len(missing)} items have no stratum: {missing[:10]}")
    shares = allocate_proportional({label: len(ids) for label, ids in groups.items()}, size)
    chosen: list[int] = []
    for label in sorted(groups):
        members = groups[label]
        random.Random(f"{seed}:{label}").shuffle(members)
        chosen.extend(members[: shares[label]])
    chosen.sort()
    random.Random(seed).shuffle(chosen)
    return chosen


def _check_annotators(annotators: Sequence[str]) -> list[str]:
    names = list(annotators)
    for name in names:
        if not isinstance(name, str) or not name:
            raise SamplingError(f"annotator names must be non-empty strings, got {name!r}")
    if len(set(names)) != len(names):
        repeated = sorted({n for n in names if names.count(n) > 1})
        raise SamplingError(f"annotators listed more than once: {repeated}")
    return sorted(names)


def assign_balanced(
    item_ids: Sequence[int],
    annotators: Sequence[str],
    overlap: int,
    existing_load: Mapping[str, int] | None = None,
    seed: int = 0,
) -> dict[int, list[str]]:
    """Give each item to exactly `overlap` distinct annotators, balancing their work.

    Items are taken in a seeded random order; each goes to the `overlap` annotators with the least work so
    far (`existing_load`, e.g. open assignments of earlier rounds, plus what this call gave them), ties
    going first to those paired least often with the annotators already chosen for the item (so every
    pair of annotators shares about as many items, which pairwise agreement needs), then by a seeded draw.

    Guarantees: without `existing_load`, or with loads that differ by at most one, the totals differ by at
    most one; in general an annotator gets new work only while nobody who could still take the item has
    two fewer. Result: item id → annotator names (sorted), items in ascending order. Raises
    SamplingError when overlap is below 1 or above the number of annotators, or on repeated ids or names.
    """
    items = _distinct_sorted(item_ids)
    names = _check_annotators(annotators)
    if overlap < 1:
        raise SamplingError(f"overlap must be 1 or more, got {overlap}")
    if overlap > len(names):
        raise SamplingError(f"overlap {overlap} needs at least {overlap} annotators, got {len(names)}")
    load = {name: 0 for name in names}
    for name, count in (existing_load or {}).items():
        if count < 0:
            raise SamplingError(f"annotator {name!r} has a negative existing load {count}")
        if name in load:
            load[name] = count
    paired = {(a, b): 0 for a in names for b in names}
    rng = random.Random(seed)
    order = list(items)
    rng.shuffle(order)
    result: dict[int, list[str]] = {}
    for item_id in order:
        tiebreak = {name: rng.random() for name in names}
        chosen: list[str] = []
        for _ in range(overlap):
            best = min(
                (name for name in names if name not in chosen),
                key=lambda n: (load[n], sum(paired[n, c] for c in chosen), tiebreak[n]),
            )
            for other in chosen:
                paired[best, other] += 1
                paired[other, best] += 1
            chosen.append(best)
            load[best] += 1
        result[item_id] = sorted(chosen)
    return {item_id: result[item_id] for item_id in items}


class Move(NamedTuple):
    """Hand one open assignment of `item_id` from one annotator to another."""

    item_id: int
    from_annotator: str
    to_annotator: str


def rebalance_open(
    open_assignments: Iterable[tuple[int, str]],
    annotators: Sequence[str],
    *,
    closed_assignments: Iterable[tuple[int, str]] = (),
    seed: int = 0,
) -> list[Move]:
    """Moves that share the open (not yet submitted) work of a round evenly among `annotators`, e.g.
    after adding an annotator. Submitted work never moves.

    `open_assignments` and `closed_assignments` are (item id, annotator) pairs. An annotator holding open
    work but missing from `annotators` is leaving: all of their open work moves. No move gives an annotator
    an item they already hold, open or closed, so no item is labelled twice by one person.

    Result: open loads differ by at most one whenever some assignment of the open work allows it (with
    many closed assignments of the same items it may not); otherwise the spread is the least possible.
    Method: direct moves from the most to the least loaded annotator, and when none is possible, chains of
    moves (A gives to B, B to C) found by breadth-first search; each step lowers the sum of squared loads,
    and none being left means that sum is minimal (the optimality condition of convex-cost flows). Which
    items move is drawn with `seed`. The returned moves are net (one per changed assignment), sorted by item.

    Raises SamplingError on an empty or repeated annotator list, a pair listed twice, a pair both open and
    closed, or a leaving annotator's item that every remaining annotator already holds.
    """
    names = _check_annotators(annotators)
    if not names:
        raise SamplingError("at least one annotator is needed")
    holds: dict[str, set[int]] = {}
    open_of: dict[str, dict[int, None]] = {name: {} for name in names}
    initial: set[tuple[int, str]] = set()
    for item_id, name in open_assignments:
        if (item_id, name) in initial:
            raise SamplingError(f"open assignment of item {item_id} to {name!r} is listed twice")
        initial.add((item_id, name))
        holds.setdefault(name, set()).add(item_id)
    for item_id, name in closed_assignments:
        if (item_id, name) in initial:
            raise SamplingError(f"item {item_id} for {name!r} is listed both open and closed")
        holds.setdefault(name, set()).add(item_id)
    rng = random.Random(seed)
    for item_id, name in sorted(initial):
        open_of.setdefault(name, {})[item_id] = None
    for name in sorted(open_of):  # a seeded order decides which items move first
        shuffled = list(open_of[name])
        rng.shuffle(shuffled)
        open_of[name] = dict.fromkeys(shuffled)
    for name in names:
        holds.setdefault(name, set())
    load = {name: len(open_of[name]) for name in names}

    def move(item_id: int, giver: str, taker: str) -> None:
        del open_of[giver][item_id]
        holds[giver].discard(item_id)
        open_of[taker][item_id] = None
        holds[taker].add(item_id)
        if giver in load:
            load[giver] -= 1
        load[taker] += 1

    def movable(giver: str, taker: str) -> int | None:
        for item_id in open_of[giver]:
            if item_id not in holds[taker]:
                return item_id
        return None

    for leaving in sorted(set(open_of) - set(names)):
        for item_id in sorted(open_of[leaving]):
            takers = [n for n in names if item_id not in holds[n]]
            if not takers:
                raise SamplingError(
                    f"item {item_id}: every annotator already has it, so {leaving!r}'s open assignment "
                    "cannot move"
                )
            move(item_id, leaving, min(takers, key=lambda n: (load[n], n)))

    while max(load.values()) - min(load.values()) > 1:
        if not _direct_move(names, load, movable, move) and not _chain_move(names, load, movable, move):
            break

    final = {(item_id, name) for name, items in open_of.items() for item_id in items}
    removed = sorted(initial - final)
    added: dict[int, list[str]] = {}
    for item_id, name in sorted(final - initial):
        added.setdefault(item_id, []).append(name)
    moves = []
    for item_id, name in removed:
        moves.append(Move(item_id, name, added[item_id].pop(0)))
    return moves


def _direct_move(
    names: list[str],
    load: dict[str, int],
    movable: _Movable,
    move: _Apply,
) -> bool:
    givers = sorted(names, key=lambda n: (-load[n], n))
    takers = sorted(names, key=lambda n: (load[n], n))
    for giver in givers:
        for taker in takers:
            if load[giver] - load[taker] < 2:
                break
            item_id = movable(giver, taker)
            if item_id is not None:
                move(item_id, giver, taker)
                return True
    return False


def _chain_move(names: list[str], load: dict[str, int], movable: _Movable, move: _Apply) -> bool:
    """One chain of moves from an annotator with load L to one with load L - 2 or less (BFS over "can
    hand an item to"), or False when no such chain exists."""
    for start in sorted(names, key=lambda n: (-load[n], n)):
        came_from: dict[str, tuple[str, int] | None] = {start: None}
        queue = deque([start])
        while queue:
            giver = queue.popleft()
            for taker in sorted(names, key=lambda n: (load[n], n)):
                if taker in came_from:
                    continue
                item_id = movable(giver, taker)
                if item_id is None:
                    continue
                came_from[taker] = (giver, item_id)
                if load[taker] <= load[start] - 2:
                    steps = []
                    node = taker
                    while (link := came_from[node]) is not None:
                        steps.append((link[1], link[0], node))
                        node = link[0]
                    # Every annotator on the chain gives once and takes once, so the order of the steps
                    # does not matter: no step takes away an item a later step hands on.
                    for item, giver_name, taker_name in steps:
                        move(item, giver_name, taker_name)
                    return True
                queue.append(taker)
    return False
