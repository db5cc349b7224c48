"""The labels CSV (docs/design.md §5) read without a database: grouping, pending, errors by row/field."""

from __future__ import annotations

import pytest

from apps.annotation.label_file import LabelFileError, parse_labels_csv

URL = "https://github.com/ex/repo/issues/1"


def test_rows_are_grouped_by_item_annotator_round_and_finding() -> None:
    text = (
        "item,annotator,dimension,label,finding,round,memo\n"
        f"{URL},alice,issue_type,fault,1,2,first\n"
        f"{URL},alice,fix_pattern,fix-config,1,2,\n"
        f"{URL},alice,fix_pattern,fix-version,1,2,\n"
        f"{URL},alice,issue_type,fault,2,2,second\n"
        f"{URL},bob,issue_type,howto,,2,\n"
    )
    rows = parse_labels_csv(text, decisions=False)
    assert [(r.annotator, r.finding, r.round) for r in rows] == [
        ("alice", 1, 2),
        ("alice", 2, 2),
        ("bob", 1, 2),
    ]
    assert rows[0].values() == {"issue_type": ["fault"], "fix_pattern": ["fix-config", "fix-version"]}
    assert rows[0].rows == [2, 3, 4]
    assert rows[0].memo == rows[1].memo == "first\n\nsecond"


def test_columns_may_come_in_any_order_and_optional_ones_may_be_absent() -> None:
    rows = parse_labels_csv(
        f"Label,Dimension,Item,Annotator\nfault,issue_type,{URL},alice\n", decisions=False
    )
    assert (rows[0].item, rows[0].annotator, rows[0].finding, rows[0].round) == (URL, "alice", 1, None)
    assert rows[0].values() == {"issue_type": ["fault"]}


def test_pending_is_case_insensitive() -> None:
    rows = parse_labels_csv(f"item,annotator,dimension,label\n{URL},alice,symptom,Pending\n", decisions=False)
    assert rows[0].values() == {"symptom": "pending"}


def test_a_repeated_row_counts_once() -> None:
    line = f"{URL},alice,issue_type,fault\n"
    rows = parse_labels_csv("item,annotator,dimension,label\n" + line + line, decisions=False)
    assert rows[0].values() == {"issue_type": ["fault"]}


def test_a_byte_order_mark_and_a_float_round_are_accepted() -> None:
    rows = parse_labels_csv(
        f"\ufeffitem,annotator,dimension,label,round\n{URL},alice,t,x,3.0\n", decisions=False
    )
    assert rows[0].round == 3


def test_decisions_may_have_no_annotator_but_no_pending() -> None:
    rows = parse_labels_csv(f"item,annotator,dimension,label\n{URL},,issue_type,fault\n", decisions=True)
    assert rows[0].annotator == ""
    with pytest.raises(LabelFileError, match="row 2, label 'pending': a gold decision cannot be pending"):
        parse_labels_csv(f"item,annotator,dimension,label\n{URL},,symptom,pending\n", decisions=True)


def test_every_bad_row_is_reported_with_row_field_and_value() -> None:
    text = (
        "item,annotator,dimension,label,finding,round\n"
        f"{URL},alice,issue_type,fault,one,1\n"
        f"{URL},,issue_type,fault,1,1\n"
        f",alice,issue_type,fault,1,1\n"
        f"{URL},alice,issue_type,fault,0,1\n"
        f"{URL},alice,issue_type,fault,1,-2\n"
        f"{URL},alice,,fault,1,1\n"
        f"{URL},alice,issue_type,,1,1\n"
        f"{URL},alice,symptom,pending,1,1\n"
        f"{URL},alice,symptom,hang,1,1\n"
    )
    with pytest.raises(LabelFileError) as caught:
        parse_labels_csv(text, decisions=False)
    problems = [(p.row, p.field, p.value) for p in caught.value.problems]
    assert problems == [
        (2, "finding", "one"),
        (3, "annotator", ""),
        (4, "item", ""),
        (5, "finding", "0"),
        (6, "round", "-2"),
        (7, "dimension", ""),
        (8, "label", ""),
    ]
    assert "row 2, finding 'one': not a whole number" in str(caught.value)


def test_pending_and_a_category_for_one_dimension_is_refused() -> None:
    text = f"item,annotator,dimension,label\n{URL},alice,symptom,pending\n{URL},alice,symptom,hang\n"
    with pytest.raises(
        LabelFileError, match=r"row 3, label 'hang': .*both pending and a category \(see row 2\)"
    ):
        parse_labels_csv(text, decisions=False)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "the file is empty"),
        ("item,annotator,label\n", "missing column(s) dimension"),
        ("item,annotator,dimension,label,findng\n", "header 'findng': unknown column"),
        ("item,annotator,dimension,label\n", "the file has a header but no labels"),
        (
            f"item,annotator,dimension,label\n{URL},alice,t,x,surplus\n",
            "row 2, row 'surplus': 5 cells but the header has 4",
        ),
    ],
)
def test_a_misshapen_file_is_refused_by_name(text: str, message: str) -> None:
    with pytest.raises(LabelFileError) as caught:
        parse_labels_csv(text, decisions=False)
    assert message in str(caught.value)


def test_the_report_lists_at_most_fifty_problems() -> None:
    text = "item,annotator,dimension,label\n" + "".join(f"{URL},alice,t,\n" for _ in range(60))
    with pytest.raises(LabelFileError) as caught:
        parse_labels_csv(text, decisions=False)
    assert len(caught.value.problems) == 60
    assert str(caught.value).startswith("60 problems:")
    assert "... and 10 more" in str(caught.value)
