"""Each export format, the filters and the refusals, on the small labelled study."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import openpyxl
import pytest

from apps.accounts.models import Study
from apps.export.rows import ExportOptions, StudyReader
from apps.export.services import ExportOptionError, parse_options, preview, stream_csv, write_export
from apps.taxonomy.index import CodebookIndex

pytestmark = pytest.mark.django_db


def export(study: Study, tmp_path: Path, format: str, **options: object) -> Path:
    path = tmp_path / f"out.{format}"
    write_export(study, parse_options(study, format=format, **options), path)  # type: ignore[arg-type]
    return path


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def test_csv_holds_one_row_per_finding_of_decided_items_only(labelled: Study, tmp_path: Path) -> None:
    rows = read_csv(export(labelled, tmp_path, "csv"))
    assert [(r["url"].rsplit("/", 1)[1], r["finding"]) for r in rows] == [
        ("1", "1"),
        ("2", "1"),
        ("3", "1"),
        ("3", "2"),
    ]
    first = rows[0]
    assert first["symptom"] == "Crash > Segfault"
    assert first["fix"] == "Config; Code"
    assert first["provenance"] == "unanimous" and first["round"] == "1"
    assert rows[1]["decided_by"] == "lena"
    assert rows[2]["decided_by"] == "olivia" and rows[2]["provenance"] == "imported"


def test_csv_cells_that_read_as_formulas_are_quoted(labelled: Study, tmp_path: Path) -> None:
    rows = read_csv(export(labelled, tmp_path, "csv"))
    assert rows[1]["title"] == "'@SUM(A1)"
    assert rows[1]["rationale"] == "'=1+1 is how it reads, but it hangs"


def test_csv_with_raw_labels_adds_annotator_rows_and_undecided_items(labelled: Study, tmp_path: Path) -> None:
    rows = read_csv(export(labelled, tmp_path, "csv", raw=True))
    assert [(r["url"][-1], r["annotator"]) for r in rows] == [
        ("1", ""), ("1", "alice"), ("1", "bob"),
        ("2", ""), ("2", "alice"), ("2", "bob"),
        ("3", ""), ("3", ""),
        ("4", "alice"),
    ]  # fmt: skip
    bob = rows[5]
    assert bob["type"] == "How-to" and bob["memo"] == '\'=HYPERLINK("x")'
    assert rows[8]["symptom"] == "(pending)" and rows[8]["memo"] == "'-1 looks odd"


def test_json_is_one_object_per_decided_item(labelled: Study, tmp_path: Path) -> None:
    data = json.loads(export(labelled, tmp_path, "json").read_text(encoding="utf-8"))
    assert [obj["url"][-1] for obj in data] == ["1", "2", "3"]
    second = data[1]
    assert second["provenance"] == "adjudicated"
    assert second["rationale"] == "=1+1 is how it reads, but it hangs"
    assert second["findings"][0]["labels"]["symptom"] == [{"key": "hang", "path": "Hang"}]
    assert "annotations" not in second


def test_jsonl_with_raw_labels_holds_every_annotators_labels(labelled: Study, tmp_path: Path) -> None:
    lines = export(labelled, tmp_path, "jsonl", raw=True).read_text(encoding="utf-8").splitlines()
    objects = [json.loads(line) for line in lines]
    assert len(objects) == 4
    assert [a["annotator"] for a in objects[1]["annotations"]] == ["alice", "bob"]
    undecided = objects[3]
    assert undecided["provenance"] is None and undecided["findings"] is None
    assert undecided["annotations"][0]["findings"][0]["labels"]["symptom"] == "pending"


def test_xlsx_has_the_csv_columns_and_no_formula(labelled: Study, tmp_path: Path) -> None:
    book = openpyxl.load_workbook(export(labelled, tmp_path, "xlsx"))
    sheet = book["dataset"]
    rows = list(sheet.iter_rows(values_only=True))
    assert rows[0][:5] == ("url", "title", "source", "round", "finding")
    assert len(rows) == 5
    assert rows[2][1] == "'@SUM(A1)"
    assert all(cell.data_type != "f" for row in sheet.iter_rows() for cell in row)


def test_empty_exports_still_have_their_header(study: Study, tmp_path: Path) -> None:
    assert export(study, tmp_path, "csv").read_text().splitlines() == [
        "url,title,source,round,finding,provenance,decided_by,rationale"
    ]
    assert json.loads(export(study, tmp_path, "json").read_text()) == []
    assert export(study, tmp_path, "jsonl").read_text() == ""


def test_the_round_filter_keeps_decisions_of_that_round(labelled: Study, tmp_path: Path) -> None:
    rows = read_csv(export(labelled, tmp_path, "csv", round=2))
    assert {r["url"][-1] for r in rows} == {"3"}
    raw = read_csv(export(labelled, tmp_path, "csv", round=2, raw=True))
    assert [(r["url"][-1], r["annotator"]) for r in raw] == [("3", ""), ("3", ""), ("4", "alice")]


def test_the_provenance_filter(labelled: Study, tmp_path: Path) -> None:
    rows = read_csv(export(labelled, tmp_path, "csv", provenance="adjudicated"))
    assert [r["url"][-1] for r in rows] == ["2"]
    raw = read_csv(export(labelled, tmp_path, "csv", provenance="adjudicated", raw=True))
    assert [(r["url"][-1], r["annotator"]) for r in raw] == [("2", ""), ("2", "alice"), ("2", "bob")]


def test_the_source_filter(labelled: Study, tmp_path: Path) -> None:
    rows = read_csv(export(labelled, tmp_path, "csv", source="stackoverflow"))
    assert [r["url"][-1] for r in rows] == ["2"]


def test_level_one_cuts_paths_at_the_top_of_the_tree(labelled: Study, tmp_path: Path) -> None:
    rows = read_csv(export(labelled, tmp_path, "csv", level=1))
    assert rows[0]["symptom"] == "Crash"
    data = json.loads(export(labelled, tmp_path, "json", level=1).read_text())
    assert data[0]["findings"][0]["labels"]["symptom"] == [{"key": "crash", "path": "Crash"}]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"format": "xml"}, "unknown format 'xml'; valid formats: csv, json, jsonl, xlsx, zip"),
        (
            {"format": "csv", "provenance": "gut"},
            "unknown provenance 'gut'; valid provenances: unanimous, majority, discussed, adjudicated, "
            "imported",
        ),
        (
            {"format": "csv", "source": "bugzilla"},
            "unknown source 'bugzilla'; valid sources: github, stackoverflow, stackexchange, gitlab, jira, "
            "file, other",
        ),
        ({"format": "csv", "round": 9}, "unknown round 9; valid rounds: 1, 2"),
        ({"format": "csv", "level": 3}, "level 3 is out of range; valid levels: 1, 2"),
        ({"format": "csv", "level": 0}, "level 0 is out of range; valid levels: 1, 2"),
        ({"format": "zip", "round": 1}, "the replication package (--format zip) holds the whole study"),
    ],
)
def test_bad_options_are_refused_with_the_valid_ones(
    labelled: Study, options: dict[str, object], message: str
) -> None:
    with pytest.raises(ExportOptionError) as error:
        parse_options(labelled, **options)  # type: ignore[arg-type]
    assert message in str(error.value)


def test_a_study_without_rounds_says_so(study: Study) -> None:
    with pytest.raises(ExportOptionError, match=r"valid rounds: none \(the study has no rounds\)"):
        parse_options(study, format="csv", round=1)


def test_reading_costs_a_constant_number_of_queries_per_chunk(
    labelled: Study, django_assert_num_queries: object
) -> None:
    index = CodebookIndex.for_study(labelled)
    # Items 1-2 and 3-4 (each chunk: items, decisions, decision findings, assignments, annotations,
    # annotation findings), item 5 (no label: items, decisions, assignments), then the empty page.
    reader = StudyReader(labelled, index, ExportOptions(format="csv", raw=True), chunk_size=2)
    with django_assert_num_queries(6 + 6 + 3 + 1):  # type: ignore[operator]
        items = list(reader)
    assert [item.url[-1] for item in items] == ["1", "2", "3", "4"]
    # Gold only: decisions with their items, and their findings, per chunk.
    reader = StudyReader(labelled, index, ExportOptions(format="csv"), chunk_size=2)
    with django_assert_num_queries(2 + 2 + 1):  # type: ignore[operator]
        items = list(reader)
    assert [item.url[-1] for item in items] == ["1", "2", "3"]


def test_the_preview_shows_the_first_rows_and_counts_the_items(labelled: Study) -> None:
    shown = preview(labelled, ExportOptions(format="csv"), limit=2)
    assert shown.items == 3
    assert shown.columns[:3] == ["url", "title", "source"]
    assert len(shown.rows) == 2


def test_streaming_gives_the_same_text_as_the_file(labelled: Study, tmp_path: Path) -> None:
    options = parse_options(labelled, format="csv", raw=True)
    streamed = "".join(stream_csv(labelled, options, chunk_size=1))
    assert streamed == export(labelled, tmp_path, "csv", raw=True).read_text(encoding="utf-8")
    assert next(csv.reader(io.StringIO(streamed)))[4] == "annotator"


def test_streaming_refuses_large_studies(labelled: Study, settings: object) -> None:
    settings.EXPORT_STREAM_MAX_ITEMS = 2  # type: ignore[attr-defined]
    with pytest.raises(ExportOptionError, match="3 items are too many to stream"):
        stream_csv(labelled, ExportOptions(format="csv"))
