"""The side-by-side sheet and the decision-composing actions, without the database."""

from __future__ import annotations

from apps.adjudication.consolidation import PENDING, Findings
from apps.adjudication.sheet import DimensionInfo, Sheet, apply_action

DIMENSIONS = [DimensionInfo("type", "Issue type", False), DimensionInfo("symptom", "Symptom", False)]
KEYS = {1: "fault", 2: "howto", 10: "crash", 11: "hang"}
LABELS = {1: "Fault", 2: "How-to", 10: "Crash", 11: "Hang"}

ALICE: Findings = [{"type": frozenset({1}), "symptom": frozenset({10})}, {"type": frozenset({2})}]
BOB: Findings = [{"type": frozenset({1}), "symptom": PENDING}]


def sheet() -> Sheet:
    return Sheet([ALICE, BOB], DIMENSIONS, KEYS, LABELS)


def test_rows_align_findings_and_mark_what_differs() -> None:
    s = sheet()
    assert s.n_rows == 2
    assert s.cell(0, 0, "symptom").labels == ("Crash",)
    assert s.cell(1, 0, "symptom").pending
    assert not s.cell(1, 1, "type").has_finding
    assert not s.differs(0, "type")
    assert s.differs(0, "symptom") and s.differs(1, "type")


def test_the_starting_decision_keeps_only_what_everyone_agreed_on() -> None:
    assert sheet().agreed() == [{"type": ["fault"]}, {}]


def test_the_categories_in_conflict_are_those_chosen_where_annotators_differ() -> None:
    assert sheet().conflicting_ids() == [10, 2]


def test_taking_all_of_an_annotator_copies_their_findings_without_pending() -> None:
    s = sheet()
    assert apply_action(s, [{}], "take:0", 2) == [
        {"type": ["fault"], "symptom": ["crash"]},
        {"type": ["howto"]},
    ]
    assert apply_action(s, [{}], "take:1", 2) == [{"type": ["fault"]}]


def test_taking_one_value_replaces_only_that_dimension_of_that_finding() -> None:
    s = sheet()
    decision = [{"type": ["fault"], "symptom": ["hang"]}]
    assert apply_action(s, decision, "take:0:0:symptom", 2) == [{"type": ["fault"], "symptom": ["crash"]}]
    assert apply_action(s, decision, "take:0:1:type", 2) == [*decision, {"type": ["howto"]}]
    assert apply_action(s, decision, "take:1:0:symptom", 2) == [{"type": ["fault"]}]  # pending: left blank


def test_findings_are_added_and_removed_and_never_all_removed() -> None:
    s = sheet()
    assert apply_action(s, [{"type": ["fault"]}], "add", 2) == [{"type": ["fault"]}, {}]
    assert apply_action(s, [{"type": ["fault"]}, {}], "remove:0", 2) == [{}]
    assert apply_action(s, [{"type": ["fault"]}], "remove:0", 2) == [{}]


def test_a_malformed_action_leaves_the_decision_unchanged() -> None:
    s = sheet()
    decision = [{"type": ["fault"]}]
    for action in ("take:9", "take:x", "take:0:7:type", "take:0:0:mood", "remove:x", "explode", ""):
        assert apply_action(s, decision, action, 2) == decision


def test_blocks_cover_the_longer_of_the_annotations_and_the_decision() -> None:
    blocks = sheet().blocks([{"type": ["fault"]}, {}, {"type": ["howto"]}])
    assert [b.in_decision for b in blocks] == [True, True, True]
    assert blocks[2].rows[0].cells[0].has_finding is False
    assert blocks[0].rows[0].chosen == ("fault",)
    assert sheet().blocks([])[0].rows[0].chosen is None
