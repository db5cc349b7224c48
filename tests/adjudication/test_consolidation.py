"""The consolidation rules, without the database."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from apps.adjudication.consolidation import (
    PENDING,
    Findings,
    Outcome,
    align,
    align_rows,
    canonical_findings,
    change,
    consolidate,
    disagreeing_dimensions,
    ordered,
    overrides_everyone,
    same_labels,
)

# Category ids: type 1 fault, 2 how-to; symptom 10 crash, 11 hang, 12 wrong output; fix 20, 21, 22.
FAULT_CRASH: Findings = [{"type": frozenset({1}), "symptom": frozenset({10}), "fix": frozenset({20, 21})}]
FAULT_HANG: Findings = [{"type": frozenset({1}), "symptom": frozenset({11}), "fix": frozenset({20, 21})}]
HOWTO: Findings = [{"type": frozenset({2})}]


def test_identical_labels_are_unanimous_and_become_the_gold_findings() -> None:
    result = consolidate([FAULT_CRASH, [dict(FAULT_CRASH[0])]])
    assert result.outcome is Outcome.UNANIMOUS
    assert result.findings == (
        {"type": frozenset({1}), "symptom": frozenset({10}), "fix": frozenset({20, 21})},
    )
    assert result.disagreeing_dimensions == ()


def test_order_of_findings_dimensions_and_choices_does_not_matter() -> None:
    a: Findings = [{"type": frozenset({2})}, {"fix": frozenset({21, 20}), "type": frozenset({1})}]
    b: Findings = [{"type": frozenset({1}), "fix": frozenset({20, 21})}, {"type": frozenset({2})}]
    assert same_labels(a, b)
    assert consolidate([a, b]).outcome is Outcome.UNANIMOUS


def test_a_different_value_is_a_disagreement_on_that_dimension_only() -> None:
    result = consolidate([FAULT_CRASH, FAULT_HANG])
    assert result.outcome is Outcome.DISAGREEMENT
    assert result.findings == ()
    assert result.disagreeing_dimensions == ("symptom",)


def test_pending_is_a_value_and_blocks_consolidation_even_when_everyone_is_pending() -> None:
    pending: Findings = [{"type": frozenset({1}), "symptom": PENDING}]
    result = consolidate([pending, [dict(pending[0])]])
    assert result.outcome is Outcome.DISAGREEMENT
    assert result.disagreeing_dimensions == ("symptom",)
    decided: Findings = [{"type": frozenset({1}), "symptom": frozenset({10})}]
    assert consolidate([pending, decided]).disagreeing_dimensions == ("symptom",)


def test_an_unanswered_dimension_differs_from_an_answered_one() -> None:
    result = consolidate([[{"type": frozenset({1})}], [{"type": frozenset({1}), "symptom": frozenset({10})}]])
    assert result.outcome is Outcome.DISAGREEMENT
    assert result.disagreeing_dimensions == ("symptom",)


def test_an_empty_choice_counts_as_unanswered() -> None:
    assert same_labels([{"type": frozenset({1}), "fix": frozenset()}], [{"type": frozenset({1})}])


def test_reporting_a_finding_twice_differs_from_reporting_it_once() -> None:
    result = consolidate([HOWTO, [*HOWTO, *HOWTO]])
    assert result.outcome is Outcome.DISAGREEMENT
    assert result.disagreeing_dimensions == ("type",)


def test_findings_that_pair_values_differently_flag_every_dimension() -> None:
    a: Findings = [
        {"type": frozenset({1}), "symptom": frozenset({10})},
        {"type": frozenset({2}), "symptom": frozenset({11})},
    ]
    b: Findings = [
        {"type": frozenset({1}), "symptom": frozenset({11})},
        {"type": frozenset({2}), "symptom": frozenset({10})},
    ]
    assert disagreeing_dimensions([a, b]) == ("symptom", "type")


def test_two_of_three_is_a_majority_only_under_the_majority_rule() -> None:
    annotations = [FAULT_CRASH, FAULT_CRASH, FAULT_HANG]
    assert consolidate(annotations, rule="unanimous").outcome is Outcome.DISAGREEMENT
    result = consolidate(annotations, rule="majority")
    assert result.outcome is Outcome.MAJORITY
    assert result.findings == canonical_gold(FAULT_CRASH)
    assert result.disagreeing_dimensions == ("symptom",)


def test_majority_is_decided_per_dimension() -> None:
    a: Findings = [{"type": frozenset({1}), "symptom": frozenset({10}), "fix": frozenset({20})}]
    b: Findings = [{"type": frozenset({1}), "symptom": frozenset({11}), "fix": frozenset({21})}]
    c: Findings = [{"type": frozenset({1}), "symptom": frozenset({10}), "fix": frozenset({21})}]
    result = consolidate([a, b, c], rule="majority")
    assert result.outcome is Outcome.MAJORITY
    assert result.findings == ({"type": frozenset({1}), "symptom": frozenset({10}), "fix": frozenset({21})},)


def test_two_annotators_never_make_a_majority() -> None:
    assert consolidate([FAULT_CRASH, FAULT_HANG], rule="majority").outcome is Outcome.DISAGREEMENT


def test_a_tie_among_four_is_not_a_strict_majority() -> None:
    result = consolidate([FAULT_CRASH, FAULT_CRASH, FAULT_HANG, FAULT_HANG], rule="majority")
    assert result.outcome is Outcome.DISAGREEMENT


def test_three_different_values_among_three_have_no_majority() -> None:
    wrong: Findings = [{"type": frozenset({1}), "symptom": frozenset({12}), "fix": frozenset({20, 21})}]
    assert consolidate([FAULT_CRASH, FAULT_HANG, wrong], rule="majority").outcome is Outcome.DISAGREEMENT


def test_any_pending_blocks_a_majority() -> None:
    pending: Findings = [{"type": frozenset({1}), "symptom": PENDING, "fix": frozenset({20, 21})}]
    assert consolidate([FAULT_CRASH, FAULT_CRASH, pending], rule="majority").outcome is Outcome.DISAGREEMENT


def test_an_annotator_with_a_minority_count_of_findings_votes_against_every_value() -> None:
    two: Findings = [*FAULT_CRASH, *HOWTO]
    result = consolidate([FAULT_CRASH, FAULT_CRASH, two], rule="majority")
    assert result.outcome is Outcome.MAJORITY
    assert result.findings == canonical_gold(FAULT_CRASH)
    assert consolidate([FAULT_CRASH, two, [*HOWTO, *HOWTO]], rule="majority").outcome is Outcome.DISAGREEMENT


def test_majority_aligns_findings_whatever_order_annotators_listed_them() -> None:
    a: Findings = [*FAULT_CRASH, *HOWTO]
    b: Findings = [*HOWTO, *FAULT_HANG]
    c: Findings = [*HOWTO, *FAULT_CRASH]
    result = consolidate([a, b, c], rule="majority")
    assert result.outcome is Outcome.MAJORITY
    assert canonical_findings(list(result.findings)) == canonical_findings([*FAULT_CRASH, *HOWTO])


def test_no_annotation_is_a_disagreement_without_dimensions() -> None:
    result = consolidate([])
    assert (result.outcome, result.disagreeing_dimensions) == (Outcome.DISAGREEMENT, ())


def test_an_unknown_rule_is_refused() -> None:
    with pytest.raises(ValueError, match="plurality"):
        consolidate([HOWTO, HOWTO], rule="plurality")


def test_a_malformed_value_names_itself() -> None:
    with pytest.raises(TypeError, match="'crash'"):
        canonical_findings([{"symptom": "crash"}])  # type: ignore[dict-item]


def test_align_pairs_the_findings_that_answer_most_dimensions_alike() -> None:
    reference: Findings = [*FAULT_CRASH, *HOWTO]
    other: Findings = [*HOWTO, *FAULT_HANG]
    # canonical order puts the fault (type 1) first in both
    assert align(reference, other) == [0, 1]
    assert align(reference, HOWTO) == [None, 0]


def test_align_rows_puts_each_annotators_findings_side_by_side() -> None:
    rows = align_rows([HOWTO, [*FAULT_HANG, *HOWTO]])
    assert rows == [[None, 0], [0, 1]]
    assert ordered([*HOWTO, *FAULT_HANG])[0]["type"] == frozenset({1})


def test_change_lists_what_the_decision_changed_for_an_annotator() -> None:
    diff = change(FAULT_HANG, FAULT_CRASH)
    assert not diff.identical
    assert diff.dimensions == {"symptom": ((11,), (10,))}
    assert (diff.findings_from, diff.findings_to) == (1, 1)
    assert change(FAULT_CRASH, FAULT_CRASH).identical
    pending = change([{"type": frozenset({1}), "symptom": PENDING}], [{"type": frozenset({1})}])
    assert pending.dimensions == {"symptom": ((PENDING,), ())}


def test_picking_each_dimension_from_a_different_annotator_is_not_an_override() -> None:
    a: Findings = [{"type": frozenset({1}), "symptom": frozenset({10}), "fix": frozenset({20})}]
    b: Findings = [{"type": frozenset({1}), "symptom": frozenset({11}), "fix": frozenset({21})}]
    mixed: Findings = [{"type": frozenset({1}), "symptom": frozenset({10}), "fix": frozenset({21})}]
    assert not overrides_everyone(mixed, [a, b])
    assert not overrides_everyone(a, [a, b])


def test_a_value_nobody_chose_or_a_new_finding_count_is_an_override() -> None:
    wrong: Findings = [{"type": frozenset({1}), "symptom": frozenset({12}), "fix": frozenset({20, 21})}]
    assert overrides_everyone(wrong, [FAULT_CRASH, FAULT_HANG])
    assert overrides_everyone([*FAULT_CRASH, *HOWTO], [FAULT_CRASH, FAULT_HANG])
    assert overrides_everyone(FAULT_CRASH, [])


def canonical_gold(findings: Findings) -> tuple[dict[str, frozenset[int]], ...]:
    return tuple({d: frozenset(v) for d, v in f} for f in canonical_findings(findings))


# --- Properties ----------------------------------------------------------------------------------------

values = st.one_of(st.just(PENDING), st.frozensets(st.integers(1, 4), min_size=1, max_size=2))
finding = st.dictionaries(st.sampled_from(["type", "symptom", "fix"]), values, min_size=1)
annotation = st.lists(finding, min_size=1, max_size=3)
panel = st.lists(annotation, min_size=2, max_size=4)


@given(
    panel.flatmap(lambda p: st.tuples(st.just(p), st.permutations(p))),
    st.sampled_from(["unanimous", "majority"]),
)
def test_swapping_annotators_changes_nothing(pair: tuple[list[Findings], list[Findings]], rule: str) -> None:
    annotations, shuffled = pair
    a, b = consolidate(annotations, rule=rule), consolidate(shuffled, rule=rule)
    assert a.outcome == b.outcome
    assert canonical_findings(list(a.findings)) == canonical_findings(list(b.findings))
    assert a.disagreeing_dimensions == b.disagreeing_dimensions


@given(panel, st.sampled_from(["unanimous", "majority"]))
def test_renaming_categories_changes_nothing_but_the_names(annotations: list[Findings], rule: str) -> None:
    rename = {1: 104, 2: 103, 3: 102, 4: 101}  # reverses the sort order of the ids, too

    def renamed(findings: Findings) -> Findings:
        return [
            {d: v if v == PENDING else frozenset(rename[c] for c in v) for d, v in f.items()}
            for f in findings
        ]

    a = consolidate(annotations, rule=rule)
    b = consolidate([renamed(x) for x in annotations], rule=rule)
    assert a.outcome == b.outcome
    assert a.disagreeing_dimensions == b.disagreeing_dimensions
    assert canonical_findings(renamed(list(a.findings))) == canonical_findings(list(b.findings))


@given(panel, st.sampled_from(["unanimous", "majority"]))
def test_a_decided_item_agrees_with_a_strict_majority_and_holds_no_pending(
    annotations: list[Findings], rule: str
) -> None:
    result = consolidate(annotations, rule=rule)
    if result.decided:
        gold = list(result.findings)
        assert not any(v == PENDING for f in gold for v in f.values())
        if result.outcome is Outcome.UNANIMOUS:
            assert all(same_labels(gold, a) for a in annotations)
        else:
            assert len(annotations) >= 3
            assert 2 * sum(len(a) == len(gold) for a in annotations) > len(annotations)
    else:
        assert result.findings == ()
