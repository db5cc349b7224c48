"""The dataset tables as pure functions: plain records in, DataFrames and JSON out (no database)."""

from __future__ import annotations

import io
import json

import pandas as pd
from hypothesis import given
from hypothesis import strategies as st

from apps.export.tables import (
    PENDING_VALUE,
    AnnotationRecord,
    DecisionRecord,
    ExportItem,
    FindingRecord,
    Value,
    annotations_frame,
    dataset_columns,
    dataset_frame,
    escape_cell,
    escape_frame,
    item_object,
    unescape_cell,
    write_csv,
    xlsx_cell,
    xlsx_rows,
)

DIMENSIONS = ["type", "symptom", "fix"]
SEGFAULT = Value("segfault", "Crash > Segfault")
CONFIG, CODE = Value("config", "Config"), Value("code", "Code")
FAULT = Value("fault", "Fault")


def decision(
    *findings: FindingRecord, rationale: str = "", provenance: str = "adjudicated"
) -> DecisionRecord:
    return DecisionRecord(
        round=1,
        provenance=provenance,
        decided_by="lena",
        decided_at="2024-03-05T12:00:00+00:00",
        rationale=rationale,
        codebook_version=3,
        findings=findings,
    )


def finding(number: int, **values: tuple[Value, ...]) -> FindingRecord:
    return FindingRecord(number, values)


ITEM = ExportItem(
    url="https://github.com/o/r/issues/1",
    title="Segfault in allreduce",
    source="github",
    decision=decision(
        finding(1, type=(FAULT,), symptom=(SEGFAULT,), fix=(CONFIG, CODE)),
        finding(2, type=(Value("howto", "How-to"),)),
        rationale="both annotators missed the config",
    ),
    annotations=(
        AnnotationRecord("alice", 1, "submitted", "-1 looks odd", "2024-03-02T12:00:00+00:00",
                         (finding(1, type=(FAULT,), symptom=(PENDING_VALUE,)),)),
        AnnotationRecord("bob", 1, "open", "", "", ()),
    ),
)  # fmt: skip


def test_formula_cells_are_prefixed_with_a_single_quote() -> None:
    for text in ["=1+1", "+33 612", "-2", "@SUM(A1)", "\tTAB", "\rCR", '=HYPERLINK("http://x")']:
        assert escape_cell(text) == "'" + text


def test_harmless_cells_are_left_alone() -> None:
    for text in ["", "Crash > Segfault", "a=b", "'quoted", "1-2", " =padded"]:
        assert escape_cell(text) == text


def test_a_quoted_formula_is_quoted_again_so_the_guard_can_be_undone() -> None:
    assert escape_cell("'=1") == "''=1"
    assert unescape_cell("''=1") == "'=1"
    assert unescape_cell("'quoted") == "'quoted"


@given(st.text())
def test_unescaping_an_escaped_cell_gives_the_original_text(text: str) -> None:
    assert unescape_cell(escape_cell(text)) == text


@given(st.text())
def test_no_escaped_cell_starts_with_a_formula_character(text: str) -> None:
    assert not escape_cell(text).startswith(("=", "+", "-", "@", "\t", "\r"))


def test_xlsx_cells_are_escaped_and_stripped_of_control_characters() -> None:
    assert xlsx_cell("=cmd|' /C calc'!A0") == "'=cmd|' /C calc'!A0"
    assert xlsx_cell("bell\x07 and\x00 nul") == "bell and nul"
    assert xlsx_cell(None) is None
    assert xlsx_cell(float("nan")) is None
    assert xlsx_cell(pd.NA) is None
    assert xlsx_cell(3) == 3


def test_columns_are_fixed_then_one_per_dimension_then_the_decision() -> None:
    assert dataset_columns(DIMENSIONS) == [
        "url", "title", "source", "round", "finding", "type", "symptom", "fix",
        "provenance", "decided_by", "rationale",
    ]  # fmt: skip
    raw = dataset_columns(DIMENSIONS, raw=True)
    assert raw[4] == "annotator" and raw[-1] == "memo"


def test_a_dimension_named_like_a_fixed_column_gets_its_own_column() -> None:
    assert dataset_columns(["source", "fix"]) == [
        "url", "title", "source", "round", "finding", "source (dimension)", "fix",
        "provenance", "decided_by", "rationale",
    ]  # fmt: skip


def test_one_row_per_finding_with_paths_joined_and_several_values_separated() -> None:
    frame = dataset_frame([ITEM], DIMENSIONS)
    assert len(frame) == 2
    first, second = frame.to_dict("records")
    assert first["symptom"] == "Crash > Segfault"
    assert first["fix"] == "Config; Code"
    assert first["finding"] == 1 and second["finding"] == 2
    assert second["type"] == "How-to" and second["symptom"] == ""
    assert first["provenance"] == "adjudicated" and first["decided_by"] == "lena"
    assert first["rationale"] == "both annotators missed the config"


def test_raw_rows_follow_the_gold_rows_with_the_annotator_and_memo() -> None:
    frame = dataset_frame([ITEM], DIMENSIONS, raw=True)
    rows = frame.to_dict("records")
    assert [r["annotator"] for r in rows] == ["", "", "alice"]  # bob's open assignment has no labels
    alice = rows[2]
    assert alice["symptom"] == "(pending)"
    assert alice["memo"] == "-1 looks odd"
    assert alice["provenance"] == "" and alice["decided_by"] == ""


def test_undecided_items_appear_only_with_raw_labels() -> None:
    undecided = ExportItem("https://x/1", "t", "github", None, ITEM.annotations)
    assert dataset_frame([undecided], DIMENSIONS).empty
    assert list(dataset_frame([undecided], DIMENSIONS, raw=True)["annotator"]) == ["alice"]


def test_a_decision_without_findings_gives_one_row_with_an_empty_finding() -> None:
    item = ExportItem("https://x/2", "t", "github", decision())
    frame = dataset_frame([item], DIMENSIONS)
    assert len(frame) == 1
    assert frame["finding"].isna().all()
    assert frame.loc[0, "type"] == ""


def test_round_and_finding_stay_whole_numbers_in_the_csv() -> None:
    handle = io.StringIO()
    write_csv(dataset_frame([ITEM], DIMENSIONS), handle, header=True)
    lines = handle.getvalue().splitlines()
    assert lines[1].startswith("https://github.com/o/r/issues/1,Segfault in allreduce,github,1,1,Fault,")
    assert ".0" not in handle.getvalue()


def test_the_csv_file_escapes_formulas_in_every_text_column() -> None:
    item = ExportItem(
        "https://x/3", "@SUM(A1)", "github", decision(finding(1, type=(FAULT,)), rationale="=1+1")
    )
    handle = io.StringIO()
    write_csv(dataset_frame([item], DIMENSIONS), handle, header=True)
    row = pd.read_csv(io.StringIO(handle.getvalue()), dtype=str, keep_default_na=False).iloc[0]
    assert row["title"] == "'@SUM(A1)"
    assert row["rationale"] == "'=1+1"


def test_xlsx_rows_hold_no_formula() -> None:
    item = ExportItem("https://x/3", "=cmd", "github", decision(finding(1, type=(FAULT,))))
    (row,) = list(xlsx_rows(dataset_frame([item], DIMENSIONS)))
    assert row[1] == "'=cmd"
    assert row[3] == 1
    assert not any(isinstance(v, str) and v.startswith("=") for v in row)


def test_the_json_object_holds_keys_paths_and_the_decision() -> None:
    obj = item_object(ITEM)
    assert obj["provenance"] == "adjudicated"
    assert obj["findings"][0] == {
        "finding": 1,
        "labels": {
            "type": [{"key": "fault", "path": "Fault"}],
            "symptom": [{"key": "segfault", "path": "Crash > Segfault"}],
            "fix": [{"key": "config", "path": "Config"}, {"key": "code", "path": "Code"}],
        },
    }
    assert "annotations" not in obj
    json.dumps(obj)


def test_the_json_object_with_raw_labels_lists_submitted_annotations_with_pending_values() -> None:
    obj = item_object(ITEM, raw=True)
    (alice,) = obj["annotations"]
    assert alice["annotator"] == "alice"
    assert alice["findings"][0]["labels"]["symptom"] == "pending"


def test_an_undecided_item_has_null_findings_not_an_empty_list() -> None:
    obj = item_object(ExportItem("https://x/4", "", "github", None, ()), raw=True)
    assert obj["findings"] is None and obj["provenance"] is None


def test_a_merged_label_keeps_the_original_key() -> None:
    item = ExportItem(
        "https://x/5", "", "github", decision(finding(1, symptom=(Value("hang", "Hang", "freeze"),)))
    )
    assert item_object(item)["findings"][0]["labels"]["symptom"] == [
        {"key": "hang", "path": "Hang", "original": "freeze"}
    ]


def test_the_raw_labels_file_has_one_row_per_label_and_one_per_open_assignment() -> None:
    frame = annotations_frame([ITEM], DIMENSIONS)
    rows = frame.to_dict("records")
    assert [(r["annotator"], r["dimension"], r["label"], r["status"]) for r in rows] == [
        ("alice", "type", "fault", "submitted"),
        ("alice", "symptom", "pending", "submitted"),
        ("bob", "", "", "open"),
    ]
    assert rows[0]["path"] == "Fault" and rows[1]["path"] == ""
    assert pd.isna(rows[2]["finding"])


def test_the_raw_labels_file_starts_with_the_labels_csv_columns() -> None:
    columns = list(annotations_frame([], DIMENSIONS).columns)
    assert columns[:7] == ["item", "annotator", "dimension", "label", "finding", "round", "memo"]


def test_escaping_while_building_equals_escaping_the_built_frame() -> None:
    item = ExportItem(
        "https://x/6",
        "=title",
        "github",
        decision(finding(1, type=(Value("minus", "-minus"),)), rationale="+r"),
        (AnnotationRecord("@bob", 1, "submitted", "=memo", "", (finding(1, type=(FAULT,)),)),),
    )
    for raw in (False, True):
        built = dataset_frame([item, ITEM], DIMENSIONS, raw=raw, escape=True)
        after = escape_frame(dataset_frame([item, ITEM], DIMENSIONS, raw=raw))
        pd.testing.assert_frame_equal(built, after)
    assert built.loc[0, "type"] == "'-minus" and built.loc[1, "annotator"] == "'@bob"
