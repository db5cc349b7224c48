"""Reproducible samples, balanced assignment, and rebalancing open work when annotators change."""

from __future__ import annotations

import random
from collections import Counter
from itertools import combinations

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from apps.annotation.sampling import (
    Move,
    SamplingError,
    allocate_proportional,
    assign_balanced,
    draw_sample,
    rebalance_open,
)

CAST = ["alice", "bob", "charlie"]

# --- draw_sample ---------------------------------------------------------------------------------------


def test_the_same_seed_draws_the_same_sample() -> None:
    assert draw_sample(range(1000), 50, seed=7) == draw_sample(range(1000), 50, seed=7)


def test_a_seed_keeps_its_sample_across_releases() -> None:
    # The contract a replication package relies on: sorted ids, shuffled by random.Random(seed), first
    # `size` taken. Changing this value breaks every published seed.
    assert draw_sample(range(1, 21), 5, seed=2023) == [3, 8, 4, 1, 6]


def test_the_order_of_the_ids_given_does_not_matter() -> None:
    ids = list(range(500))
    shuffled = ids[:]
    random.Random(1).shuffle(shuffled)
    assert draw_sample(shuffled, 40, seed=3) == draw_sample(ids, 40, seed=3)


def test_another_seed_draws_another_sample() -> None:
    assert draw_sample(range(1000), 50, seed=1) != draw_sample(range(1000), 50, seed=2)


def test_a_larger_sample_extends_a_smaller_one_with_the_same_seed() -> None:
    small = draw_sample(range(300), 20, seed=11)
    large = draw_sample(range(300), 60, seed=11)
    assert large[:20] == small


def test_the_whole_population_is_a_permutation_and_zero_is_empty() -> None:
    assert sorted(draw_sample([5, 3, 9], 3, seed=0)) == [3, 5, 9]
    assert draw_sample([5, 3, 9], 0, seed=0) == []


def test_a_sample_larger_than_the_population_is_refused() -> None:
    with pytest.raises(SamplingError, match="cannot draw 4 items from a population of 3"):
        draw_sample([1, 2, 3], 4, seed=0)


def test_a_negative_size_is_refused() -> None:
    with pytest.raises(SamplingError, match="sample size must be 0 or more, got -1"):
        draw_sample([1, 2, 3], -1, seed=0)


def test_repeated_ids_are_refused_by_name() -> None:
    with pytest.raises(SamplingError, match=r"item ids appear more than once: \[2, 5\]"):
        draw_sample([1, 2, 2, 5, 5, 5], 2, seed=0)


def test_every_item_is_equally_likely_to_be_drawn() -> None:
    # 4,000 samples of 3 out of 10: each item is drawn Binomial(4000, 0.3) times, mean 1,200, sd ≈ 29;
    # ±5 sd is a bound a correct sampler exceeds with probability below 1e-5 per item.
    counts = Counter(i for seed in range(4000) for i in draw_sample(range(10), 3, seed=seed))
    assert set(counts) == set(range(10))
    assert all(abs(count - 1200) < 145 for count in counts.values())


@given(st.sets(st.integers(0, 10_000), max_size=60), st.data())
def test_a_sample_is_drawn_without_replacement_from_the_population(
    ids: set[int], data: st.DataObject
) -> None:
    size = data.draw(st.integers(0, len(ids)))
    sample = draw_sample(list(ids), size, seed=data.draw(st.integers()))
    assert len(sample) == size
    assert len(set(sample)) == size
    assert set(sample) <= ids


# --- Stratified samples --------------------------------------------------------------------------------


def test_largest_remainder_allocation_matches_the_textbook_example() -> None:
    # The Hamilton / Hare-quota example of Wikipedia's "Largest remainder method": 10 seats.
    votes = {
        "Yellows": 47_000,
        "Whites": 16_000,
        "Reds": 15_800,
        "Greens": 12_000,
        "Blues": 6_100,
        "Pinks": 3_100,
    }
    assert allocate_proportional(votes, 10) == {
        "Yellows": 5,
        "Whites": 2,
        "Reds": 1,
        "Greens": 1,
        "Blues": 1,
        "Pinks": 0,
    }


def test_a_tosem_round_is_split_between_github_and_stack_overflow_in_proportion() -> None:
    # 1,928 GitHub and 755 Stack Overflow candidates, a round of 108: 77.6 and 30.4 → 78 and 30.
    assert allocate_proportional({"GitHub": 1928, "Stack Overflow": 755}, 108) == {
        "GitHub": 78,
        "Stack Overflow": 30,
    }


def test_equal_remainders_go_to_the_larger_stratum_then_by_label() -> None:
    # Exact shares 0.5, 0.5 and 1: the one seat left goes to 'a' or 'b' (same remainder, same size): 'a'.
    assert allocate_proportional({"a": 1, "b": 1, "c": 2}, 2) == {"a": 1, "b": 0, "c": 1}
    assert allocate_proportional({"small": 1, "large": 3}, 2) == {"small": 0, "large": 2}
    assert allocate_proportional({"b": 1, "a": 1}, 1) == {"a": 1, "b": 0}


@given(st.dictionaries(st.text(max_size=3), st.integers(0, 200), max_size=8), st.data())
def test_allocation_adds_up_and_stays_within_one_of_the_exact_share(
    sizes: dict[str, int], data: st.DataObject
) -> None:
    total = sum(sizes.values())
    size = data.draw(st.integers(0, total))
    shares = allocate_proportional(sizes, size)
    assert sum(shares.values()) == size
    for label, count in sizes.items():
        assert 0 <= shares[label] <= count
        if total:
            assert abs(shares[label] - size * count / total) < 1


def test_a_stratified_sample_takes_each_strata_share_from_that_stratum() -> None:
    strata = {i: "GitHub" if i < 1928 else "Stack Overflow" for i in range(2683)}
    sample = draw_sample(list(strata), 108, seed=5, strata=strata)
    assert len(set(sample)) == 108
    assert Counter(strata[i] for i in sample) == {"GitHub": 78, "Stack Overflow": 30}
    assert draw_sample(list(reversed(strata)), 108, seed=5, strata=strata) == sample


def test_a_stratum_draw_does_not_depend_on_the_other_strata() -> None:
    base = {i: "so" for i in range(50)} | {i: "gh" for i in range(100, 150)}
    grown = base | {i: "gh" for i in range(150, 155)}  # GitHub grows; its share stays 5 of 20 → 5 of ~21
    first = draw_sample(list(base), 20, seed=9, strata=base)
    second = draw_sample(list(grown), 20, seed=9, strata=grown)
    assert allocate_proportional(Counter(base.values()), 20)["so"] == 10
    assert allocate_proportional(Counter(grown.values()), 20)["so"] == 10
    assert {i for i in first if base[i] == "so"} == {i for i in second if grown[i] == "so"}


def test_an_item_without_a_stratum_is_refused() -> None:
    with pytest.raises(SamplingError, match=r"2 items have no stratum: \[3, 4\]"):
        draw_sample([1, 2, 3, 4], 2, seed=0, strata={1: "a", 2: "b", 99: "c"})


def test_a_stratum_that_is_not_a_string_is_refused() -> None:
    with pytest.raises(SamplingError, match="item 2: stratum must be a string, got 7"):
        draw_sample([1, 2], 1, seed=0, strata={1: "a", 2: 7})  # type: ignore[dict-item]


# --- assign_balanced -----------------------------------------------------------------------------------


def test_each_item_goes_to_two_distinct_annotators_by_default_overlap() -> None:
    assignment = assign_balanced(range(30), CAST, overlap=2)
    assert list(assignment) == list(range(30))
    assert all(len(set(names)) == 2 for names in assignment.values())
    assert Counter(name for names in assignment.values() for name in names) == {
        "alice": 20,
        "bob": 20,
        "charlie": 20,
    }


def test_every_pair_of_annotators_shares_as_many_items() -> None:
    assignment = assign_balanced(range(30), CAST, overlap=2, seed=4)
    assert Counter(tuple(names) for names in assignment.values()) == {
        ("alice", "bob"): 10,
        ("alice", "charlie"): 10,
        ("bob", "charlie"): 10,
    }


def test_assignment_is_deterministic_and_ignores_input_order() -> None:
    first = assign_balanced(range(40), ["alice", "bob", "charlie", "dana"], 2, seed=1)
    again = assign_balanced(list(reversed(range(40))), ["dana", "charlie", "bob", "alice"], 2, seed=1)
    assert first == again


def test_existing_work_is_topped_up_before_anyone_gets_more() -> None:
    # Alice has 4, Bob 1, Charlie 0 open: five more items bring everyone to 4, 3, 3.
    assignment = assign_balanced(range(5), CAST, overlap=1, existing_load={"alice": 4, "bob": 1})
    assert Counter(names[0] for names in assignment.values()) == {"charlie": 3, "bob": 2}


def test_an_existing_load_of_someone_not_in_the_round_is_ignored() -> None:
    assignment = assign_balanced(range(4), ["alice", "bob"], 1, existing_load={"zoe": 100})
    assert Counter(names[0] for names in assignment.values()) == {"alice": 2, "bob": 2}


def test_an_overlap_above_the_number_of_annotators_is_refused() -> None:
    with pytest.raises(SamplingError, match="overlap 3 needs at least 3 annotators, got 2"):
        assign_balanced(range(5), ["alice", "bob"], overlap=3)


def test_an_overlap_below_one_is_refused() -> None:
    with pytest.raises(SamplingError, match="overlap must be 1 or more, got 0"):
        assign_balanced(range(5), CAST, overlap=0)


def test_an_annotator_listed_twice_is_refused() -> None:
    with pytest.raises(SamplingError, match=r"annotators listed more than once: \['bob'\]"):
        assign_balanced(range(5), ["alice", "bob", "bob"], overlap=2)


def test_a_negative_existing_load_is_refused() -> None:
    with pytest.raises(SamplingError, match="annotator 'bob' has a negative existing load -2"):
        assign_balanced(range(5), CAST, overlap=1, existing_load={"bob": -2})


def test_no_items_give_no_assignments() -> None:
    assert assign_balanced([], CAST, overlap=2) == {}


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n_items=st.integers(0, 120),
    n_annotators=st.integers(1, 9),
    data=st.data(),
)
def test_loads_differ_by_at_most_one_for_any_sizes(
    n_items: int, n_annotators: int, data: st.DataObject
) -> None:
    names = [f"annotator{i}" for i in range(n_annotators)]
    overlap = data.draw(st.integers(1, n_annotators))
    assignment = assign_balanced(range(n_items), names, overlap, seed=data.draw(st.integers(0, 2**32)))
    assert all(len(set(chosen)) == overlap == len(chosen) for chosen in assignment.values())
    loads = Counter(name for chosen in assignment.values() for name in chosen)
    counts = [loads[name] for name in names]
    assert max(counts) - min(counts) <= 1


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 40), st.lists(st.integers(0, 30), min_size=1, max_size=7), st.data())
def test_new_work_fills_the_least_loaded_first(
    n_items: int, existing: list[int], data: st.DataObject
) -> None:
    names = [f"a{i}" for i in range(len(existing))]
    before = dict(zip(names, existing, strict=True))
    overlap = data.draw(st.integers(1, len(names)))
    assignment = assign_balanced(range(n_items), names, overlap, existing_load=before)
    new = Counter(name for chosen in assignment.values() for name in chosen)
    total = {name: before[name] + new[name] for name in names}
    # Whoever got new work ends at most one above anyone who could still have taken an item.
    for x in names:
        for y in names:
            if new[x] and new[y] < n_items:
                assert total[x] <= total[y] + 1
    if max(existing) - min(existing) <= 1:
        assert max(total.values()) - min(total.values()) <= 1


# --- rebalance_open ------------------------------------------------------------------------------------


def apply_moves(open_pairs: set[tuple[int, str]], moves: list[Move]) -> set[tuple[int, str]]:
    state = set(open_pairs)
    for move in moves:
        state.remove((move.item_id, move.from_annotator))
        assert (move.item_id, move.to_annotator) not in state
        state.add((move.item_id, move.to_annotator))
    return state


def test_a_new_annotator_takes_a_fair_share_of_open_work() -> None:
    open_pairs = {(item, name) for item in range(20) for name in ("alice", "bob")}
    moves = rebalance_open(open_pairs, CAST)
    after = apply_moves(open_pairs, moves)
    loads = Counter(name for _, name in after)
    assert loads["charlie"] == 13
    assert sorted(loads.values()) == [13, 13, 14]
    assert len(moves) == 13
    assert all(move.to_annotator == "charlie" for move in moves)
    assert Counter(item for item, _ in after) == dict.fromkeys(range(20), 2)


def test_the_seed_decides_which_items_move() -> None:
    open_pairs = {(item, "alice") for item in range(40)}
    first = rebalance_open(open_pairs, ["alice", "bob"], seed=1)
    assert first == rebalance_open(open_pairs, ["alice", "bob"], seed=1)
    assert first != rebalance_open(open_pairs, ["alice", "bob"], seed=2)
    assert {move.item_id for move in first} != set(range(20))  # not simply the lowest ids


def test_submitted_work_never_moves_and_nobody_gets_an_item_twice() -> None:
    # Bob submitted items 0-5, so of Alice's ten open items he can take only 6-9: loads 6 and 4.
    open_pairs = {(item, "alice") for item in range(10)}
    closed = [(item, "bob") for item in range(6)]
    moves = rebalance_open(open_pairs, ["alice", "bob"], closed_assignments=closed)
    assert sorted(moves) == [Move(item, "alice", "bob") for item in (6, 7, 8, 9)]


def test_when_submitted_work_blocks_a_balance_the_spread_is_the_least_possible() -> None:
    # Bob already submitted items 0-7, so only 8 and 9 can move to him: 8 open for alice, 2 for bob.
    open_pairs = {(item, "alice") for item in range(10)}
    closed = [(item, "bob") for item in range(8)]
    moves = rebalance_open(open_pairs, ["alice", "bob"], closed_assignments=closed)
    assert sorted(moves) == [Move(8, "alice", "bob"), Move(9, "alice", "bob")]


def test_a_chain_of_moves_is_found_when_no_direct_move_helps() -> None:
    # Alice cannot give charlie anything (he holds all of her items), but she can give bob one
    # while bob gives charlie one of his: loads 3, 1, 0 become 2, 1, 1.
    open_pairs = {(1, "alice"), (2, "alice"), (3, "alice"), (4, "bob")}
    closed = [(1, "charlie"), (2, "charlie"), (3, "charlie")]
    moves = rebalance_open(open_pairs, CAST, closed_assignments=closed)
    after = apply_moves(open_pairs, moves)
    assert sorted(Counter(name for _, name in after).values()) == [1, 1, 2]
    assert (4, "charlie") in after


def test_a_leaving_annotator_hands_over_all_open_work() -> None:
    open_pairs = {(item, name) for item in range(9) for name in ("alice", "bob")}
    moves = rebalance_open(open_pairs, ["alice", "charlie"])
    after = apply_moves(open_pairs, moves)
    assert not any(name == "bob" for _, name in after)
    assert Counter(item for item, _ in after) == dict.fromkeys(range(9), 2)
    assert Counter(name for _, name in after) == {"alice": 9, "charlie": 9}


def test_a_leaving_annotators_item_that_everyone_has_cannot_move() -> None:
    open_pairs = {(1, "alice"), (1, "bob")}
    with pytest.raises(SamplingError, match="item 1: every annotator already has it, so 'bob'"):
        rebalance_open(open_pairs, ["alice"])
    with pytest.raises(SamplingError, match="item 1: every annotator already has it, so 'bob'"):
        rebalance_open(open_pairs, ["alice", "charlie"], closed_assignments=[(1, "charlie")])


def test_balanced_open_work_needs_no_moves() -> None:
    assert rebalance_open({(1, "alice"), (2, "bob"), (3, "charlie")}, CAST) == []


def test_an_assignment_both_open_and_closed_is_refused() -> None:
    with pytest.raises(SamplingError, match="item 1 for 'alice' is listed both open and closed"):
        rebalance_open([(1, "alice")], CAST, closed_assignments=[(1, "alice")])


def test_an_open_assignment_listed_twice_is_refused() -> None:
    with pytest.raises(SamplingError, match="open assignment of item 1 to 'alice' is listed twice"):
        rebalance_open([(1, "alice"), (1, "alice")], CAST)


def test_rebalancing_needs_an_annotator() -> None:
    with pytest.raises(SamplingError, match="at least one annotator is needed"):
        rebalance_open([(1, "alice")], [])


@st.composite
def rounds(draw: st.DrawFn) -> tuple[set[tuple[int, str]], list[tuple[int, str]], list[str]]:
    """A round assigned with overlap, part of it submitted, and a new list of annotators."""
    names = [f"a{i}" for i in range(draw(st.integers(1, 5)))]
    overlap = draw(st.integers(1, len(names)))
    assignment = assign_balanced(
        range(draw(st.integers(0, 25))), names, overlap, seed=draw(st.integers(0, 99))
    )
    pairs = [(item, name) for item, chosen in assignment.items() for name in chosen]
    closed = [pair for pair in pairs if draw(st.booleans()) and draw(st.booleans())]
    open_pairs = set(pairs) - set(closed)
    newcomers = [f"n{i}" for i in range(draw(st.integers(0, 3)))]
    leaving = draw(st.integers(0, len(names) - 1)) if draw(st.booleans()) else 0
    return open_pairs, closed, names[leaving:] + newcomers


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rounds(), st.integers(0, 10))
def test_rebalancing_moves_only_open_work_and_never_duplicates(
    case: tuple[set[tuple[int, str]], list[tuple[int, str]], list[str]], seed: int
) -> None:
    open_pairs, closed, annotators = case
    try:
        moves = rebalance_open(open_pairs, annotators, closed_assignments=closed, seed=seed)
    except SamplingError as error:
        assert "every annotator already has it" in str(error)
        return
    after = apply_moves(open_pairs, moves)
    assert not after & set(closed)
    assert Counter(item for item, _ in after) == Counter(item for item, _ in open_pairs)
    assert {name for _, name in after} <= set(annotators)
    assert len({(m.item_id, m.from_annotator) for m in moves}) == len(moves)
    assert rebalance_open(open_pairs, annotators, closed_assignments=closed, seed=seed) == moves


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rounds(), st.integers(0, 10))
def test_without_submitted_work_open_loads_end_within_one(
    case: tuple[set[tuple[int, str]], list[tuple[int, str]], list[str]], seed: int
) -> None:
    open_pairs, _submitted, annotators = case
    holders = Counter(item for item, _ in open_pairs)
    assume(all(count <= len(annotators) for count in holders.values()))
    moves = rebalance_open(open_pairs, annotators, seed=seed)
    loads = Counter(name for _, name in apply_moves(open_pairs, moves))
    counts = [loads[name] for name in annotators]
    assert max(counts) - min(counts) <= 1


def best_spread(
    open_pairs: set[tuple[int, str]], closed: list[tuple[int, str]], annotators: list[str]
) -> int | None:
    """The least max - min of open loads over every way to hand out the open work (brute force), or None
    when there is no way at all."""
    items = sorted({item for item, _ in open_pairs})
    need = Counter(item for item, _ in open_pairs)
    barred = set(closed)
    options = [
        [
            group
            for group in combinations(annotators, need[item])
            if not any((item, a) in barred for a in group)
        ]
        for item in items
    ]
    best = None
    stack: list[tuple[int, Counter[str]]] = [(0, Counter())]
    while stack:
        index, loads = stack.pop()
        if index == len(items):
            spread = max(loads[a] for a in annotators) - min(loads[a] for a in annotators)
            best = spread if best is None else min(best, spread)
            continue
        for group in options[index]:
            stack.append((index + 1, loads + Counter(group)))
    return best


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much]
)
@given(rounds())
def test_rebalancing_reaches_the_least_possible_spread(
    case: tuple[set[tuple[int, str]], list[tuple[int, str]], list[str]],
) -> None:
    open_pairs, closed, annotators = case
    assume(len({item for item, _ in open_pairs}) <= 6 and len(annotators) <= 4)
    try:
        moves = rebalance_open(open_pairs, annotators, closed_assignments=closed)
    except SamplingError:
        assert best_spread(open_pairs, closed, annotators) is None
        return
    loads = Counter(name for _, name in apply_moves(open_pairs, moves))
    spread = max(loads[a] for a in annotators) - min(loads[a] for a in annotators)
    assert spread == best_spread(open_pairs, closed, annotators)
