"""The TOSEM 2023 workbook reader, on the five real reliability rounds, the real final taxonomy and
small synthetic workbooks; and the generated demo fixtures (fixtures/tosem23/).

Known values come from reading the workbooks by hand (see docs/tosem23-import.md) and from the
published taxonomy (637 fault rows: Package Build & Import 82, Communication Setup 133, Data and Model
Preparation 57, Training & Evaluation 365 = Program Failure 215 + Unexpected Performance 150).
"""

from __future__ import annotations

import csv
import importlib.util
import json
from collections import Counter
from collections.abc import Callable, Sequence
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import openpyxl
import pytest

from apps.annotation import tosem_workbook as tw

DATA = Path(__file__).parent / "data"
REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures" / "tosem23"
LABEL_FILES = ("labels_round1.csv", "labels_round2.csv", "decisions_round1.csv", "decisions_round2.csv")
HEADER = [
    "Link",
    "Issue Type ",
    "How-to topic",
    "How-to sub-topic",
    "Distributed-specified",
    "Stage",
    "Type",
    "Leaf Category",
    "Fix Pattern",
    "Memo",
]


@cache
def codebook() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / "codebook.json").read_text(encoding="utf-8"))
    return data


@cache
def vocabulary() -> tw.Vocabulary:
    return tw.Vocabulary.from_codebook(codebook(), tw.tosem_synonyms())


@cache
def real_round(number: int) -> tw.WorkbookResult:
    return tw.read_reliability_workbook(
        DATA / f"reliability_analysis_round{number}.xlsx", number, vocabulary()
    )


@cache
def real_final() -> tw.WorkbookResult:
    return tw.read_final_workbook(DATA / "final_categories.xlsx", vocabulary())


def labels_of(result: tw.WorkbookResult, sheet: str, item: str) -> list[tuple[int, str, str]]:
    """(finding, dimension, label) of one post in one sheet, in reading order."""
    return [(r.finding, r.dimension, r.label) for r in result.sheet(sheet).rows if r.item == item]


def read_csv(name: str) -> list[dict[str, str]]:
    with (FIXTURES / name).open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def category_paths(dimension: str) -> dict[str, tuple[str, ...]]:
    paths: dict[str, tuple[str, ...]] = {}

    def visit(nodes: Sequence[dict[str, Any]], above: tuple[str, ...]) -> None:
        for node in nodes:
            paths[node["key"]] = (*above, node["name"])
            visit(node.get("children", []), paths[node["key"]])

    for raw in codebook()["dimensions"]:
        if raw["key"] == dimension:
            visit(raw["categories"], ())
    return paths


def small_codebook(**synonyms: dict[str, str]) -> tuple[dict[str, Any], dict[str, dict[str, str]]]:
    """A tiny codebook with the five TOSEM dimensions, for targeted cases."""
    fault = {"issue_type": "fault"}
    book = {
        "name": "small",
        "dimensions": [
            {
                "key": "issue_type",
                "name": "Issue type",
                "categories": [
                    {"key": "fault", "name": "fault"},
                    {"key": "howto", "name": "how-to question"},
                ],
            },
            {
                "key": "distributed_specific",
                "name": "Distributed",
                "applies_when": fault,
                "categories": [{"key": "yes", "name": "yes"}, {"key": "no", "name": "no"}],
            },
            {
                "key": "symptom",
                "name": "Symptom",
                "applies_when": fault,
                "categories": [
                    {"key": "setup", "name": "Setup", "children": [{"key": "setup-crash", "name": "crash"}]},
                    {
                        "key": "run",
                        "name": "Run",
                        "children": [
                            {
                                "key": "failure",
                                "name": "Failure",
                                "children": [{"key": "run-crash", "name": "crash"}],
                            },
                            {"key": "slow", "name": "Slow", "children": [{"key": "hang", "name": "hang"}]},
                        ],
                    },
                ],
            },
            {
                "key": "fix_pattern",
                "name": "Fix",
                "multiple": True,
                "applies_when": fault,
                "categories": [
                    {"key": "fix-version", "name": "fix version"},
                    {"key": "fix-batch", "name": "fix batch size/data partition"},
                    {"key": "fix-network", "name": "fix network setting"},
                ],
            },
            {
                "key": "howto_topic",
                "name": "Topic",
                "applies_when": {"issue_type": "howto"},
                "categories": [{"key": "api", "name": "API usage"}],
            },
        ],
    }
    return book, {key: dict(value) for key, value in synonyms.items()}


def write_workbook(path: Path, rows: Sequence[Sequence[object]], merges: Sequence[str] = ()) -> Path:
    """A reliability workbook whose three sheets hold ``rows`` under the TOSEM header."""
    workbook = openpyxl.Workbook()
    workbook.remove(workbook.active)
    for name in tw.RELIABILITY_SHEETS:
        sheet = workbook.create_sheet(name)
        sheet.append(HEADER if name != "Final" else [f"{h} Final" if h != "Link" else h for h in HEADER[:9]])
        for row in rows:
            sheet.append(list(row) if name != "Final" else list(row)[:9])
        for merge in merges:
            sheet.merge_cells(merge)
    workbook.save(path)
    return path


# --- normalise_label ---------------------------------------------------------------------------------


def test_normalise_label_folds_case_and_collapses_whitespace() -> None:
    assert tw.normalise_label("  Hang &\u00a0 Timeout ") == "hang & timeout"
    assert tw.normalise_label("Communication\tsetup") == "communication setup"


def test_normalise_label_reads_whole_numbers_as_integers() -> None:
    assert tw.normalise_label(1) == "1"
    assert tw.normalise_label(0.0) == "0"
    assert tw.normalise_label(1.5) == "1.5"


def test_normalise_label_of_an_empty_cell_is_empty() -> None:
    assert tw.normalise_label(None) == ""
    assert tw.normalise_label("   ") == ""


# --- Vocabulary --------------------------------------------------------------------------------------


def test_spelling_variants_resolve_to_the_category_they_spell() -> None:
    v = vocabulary()
    stage = v.resolve(tw.SYMPTOM, tw.normalise_label("Communication setup"))
    assert stage == "communication-setup"
    assert (
        v.resolve(tw.SYMPTOM, tw.normalise_label("Hang & Timeout"), stage)
        == "communication-setup-hang-and-timeout"
    )
    assert v.resolve_many(tw.FIX_PATTERN, "fx communication configuration") == (
        "fix-communication-configuration",
    )


def test_a_leaf_name_shared_by_two_parents_resolves_under_the_parent_given() -> None:
    v = vocabulary()
    failure = v.resolve(tw.SYMPTOM, "program failure", "training-evaluation")
    assert v.resolve(tw.SYMPTOM, "communication error", failure) == "program-failure-communication-error"
    prep = "data-and-model-preparation"
    assert (
        v.resolve(tw.SYMPTOM, "communication error", prep) == "data-and-model-preparation-communication-error"
    )
    with pytest.raises(tw.UnresolvedLabel, match="communication error"):
        v.resolve(tw.SYMPTOM, "communication error")


def test_compound_fix_patterns_split_on_ampersand_and_spaced_slash() -> None:
    v = vocabulary()
    assert v.resolve_many(tw.FIX_PATTERN, "fix model construction & fix batch size") == (
        "fix-model-construction",
        "fix-batch-size-data-partition",
    )
    assert v.resolve_many(tw.FIX_PATTERN, "fix batch size / fix device assignemnt") == (
        "fix-batch-size-data-partition",
        "fix-device-assignment",
    )


def test_a_slash_inside_a_name_does_not_split_it() -> None:
    assert vocabulary().resolve_many(tw.FIX_PATTERN, "fix batch size/data partition") == (
        "fix-batch-size-data-partition",
    )


def test_the_installatiovn_typo_names_both_dependency_patterns() -> None:
    assert vocabulary().resolve_many(tw.FIX_PATTERN, "fix dependency installatiovn/version") == (
        "fix-dependency-installation",
        "fix-dependency-version",
    )


def test_a_compound_with_one_unknown_part_resolves_to_nothing() -> None:
    with pytest.raises(tw.UnresolvedLabel, match="'reinstall framework'"):
        vocabulary().resolve_many(tw.FIX_PATTERN, "fix dependency versions & reinstall framework")


def test_rare_fix_patterns_resolve_to_other() -> None:
    assert vocabulary().resolve_many(tw.FIX_PATTERN, "use tmux") == ("other",)


def test_a_single_choice_dimension_never_splits() -> None:
    book, synonyms = small_codebook()
    v = tw.Vocabulary.from_codebook(book, synonyms)
    with pytest.raises(tw.UnresolvedLabel):
        v.resolve_many(tw.ISSUE_TYPE, "fault & how-to question")


def test_synonyms_may_chain() -> None:
    book, synonyms = small_codebook(
        fix_pattern={"fix versoin": "fix versions", "fix versions": "fix version"}
    )
    v = tw.Vocabulary.from_codebook(book, synonyms)
    assert v.resolve_many(tw.FIX_PATTERN, "fix versoin") == ("fix-version",)


@pytest.mark.parametrize(
    ("synonyms", "message"),
    [
        ({"fix_pattern": {"fix versoin": "fix nothing"}}, "names no category"),
        ({"fix_pattern": {"a": "b", "b": "a"}}, "loop"),
        ({"fix_pattern": {"fix version": "fix network setting"}}, "itself a category name"),
        ({"nope": {"a": "b"}}, "unknown dimension"),
    ],
)
def test_bad_synonyms_are_refused(synonyms: dict[str, dict[str, str]], message: str) -> None:
    book, _ = small_codebook()
    with pytest.raises(ValueError, match=message):
        tw.Vocabulary.from_codebook(book, synonyms)


def test_a_category_keyed_pending_is_refused() -> None:
    book, synonyms = small_codebook()
    book["dimensions"][3]["categories"].append({"key": "pending", "name": "waiting"})
    with pytest.raises(ValueError, match="pending marker"):
        tw.Vocabulary.from_codebook(book, synonyms)


def test_a_codebook_without_a_tosem_dimension_is_refused() -> None:
    book, synonyms = small_codebook()
    book["dimensions"] = book["dimensions"][:4]
    with pytest.raises(ValueError, match="howto_topic"):
        tw.Vocabulary.from_codebook(book, synonyms)


def test_fault_and_howto_are_read_from_applies_when() -> None:
    v = vocabulary()
    assert (v.fault_key, v.howto_key) == ("fault", "howto")


# --- The five real reliability rounds ----------------------------------------------------------------

# (round, sheet): (findings, label rows, unresolved values, notes), as read by hand: a finding is a
# labelled row; rows left empty inside a merged link, and round 2's link-only row, are no finding.
REAL_COUNTS = {
    (1, "label1"): (111, 335, 3, 0),
    (1, "label2"): (110, 340, 1, 0),
    (1, "Final"): (111, 349, 1, 0),
    (2, "label1"): (112, 341, 1, 2),
    (2, "label2"): (113, 343, 2, 1),
    (2, "Final"): (115, 352, 0, 0),
    (3, "label1"): (116, 363, 0, 0),
    (3, "label2"): (116, 368, 1, 0),
    (3, "Final"): (122, 393, 0, 0),
    (4, "label1"): (109, 342, 0, 4),
    (4, "label2"): (109, 339, 2, 23),
    (4, "Final"): (109, 342, 1, 4),
    (5, "label1"): (105, 321, 1, 0),
    (5, "label2"): (105, 322, 0, 0),
    (5, "Final"): (106, 327, 0, 0),
}


@pytest.mark.parametrize(("round_number", "sheet"), sorted(REAL_COUNTS))
def test_real_rounds_read_with_known_counts(round_number: int, sheet: str) -> None:
    result = real_round(round_number).sheet(sheet)
    found = (result.findings, len(result.rows), len(result.errors), len(result.notes))
    assert found == REAL_COUNTS[(round_number, sheet)]


def test_every_unresolved_value_of_the_five_rounds_is_reported_by_cell() -> None:
    found = {
        (number, issue.sheet, issue.row, issue.column, issue.value)
        for number in range(1, 6)
        for issue in real_round(number).errors
    }
    assert found == {
        (1, "label1", 14, "C", "timeline"),
        (1, "label1", 25, "I", "use env variable instread"),
        (1, "label1", 91, "H", "InvalidArgumentError"),
        (1, "label2", 32, "I", "fix backend communication "),
        (1, "Final", 51, "I", "fix communication resource usage"),
        (2, "label1", 74, "G", "Unexpected Parallelization & Device"),
        (2, "label2", 16, "G", "unexpected behaviour"),
        (2, "label2", 57, "I", "fix communication resource usage"),
        (3, "label2", 21, "H", "communication error"),
        (4, "label2", 11, "H", "fix dependency versions & reinstall framework"),
        (4, "label2", 43, "I", "fix communication optimization"),
        (4, "Final", 56, "H", "out of memory"),
        (5, "label1", 25, "I", "fix backend configuration"),
    }


def test_an_unresolved_value_leaves_the_rest_of_its_row() -> None:
    # Round 1 label1 row 91: the leaf "InvalidArgumentError" is no category; issue type, distributed
    # flag and the PENDING fix pattern are still read.
    assert labels_of(real_round(1), "label1", "https://stackoverflow.com/questions/43542226") == [
        (1, "issue_type", "fault"),
        (1, "distributed_specific", "yes"),
        (1, "fix_pattern", "pending"),
    ]


def test_annotators_are_named_by_sheet() -> None:
    result = real_round(1)
    assert {row.annotator for row in result.sheet("label1").rows} == {"annotator1"}
    assert {row.annotator for row in result.sheet("label2").rows} == {"annotator2"}
    assert {row.annotator for row in result.sheet("Final").rows} == {""}
    assert {row.round for row in result.rows} == {1}


def test_pending_and_its_misspellings_become_the_pending_label() -> None:
    r1, r2 = real_round(1), real_round(2)
    # label1 row 5: how-to topic PENDING; row 7: Training & Evaluation > Unexpected Performance > PENDING.
    assert labels_of(r1, "label1", "https://github.com/horovod/horovod/issues/1208")[1] == (
        1,
        "howto_topic",
        "pending",
    )
    assert (1, "symptom", "pending") in labels_of(
        r1, "label1", "https://github.com/horovod/horovod/issues/134"
    )
    # label2: "PEDNING" as fix pattern (row 81), "PENING" as leaf (row 104).
    assert (1, "fix_pattern", "pending") in labels_of(
        r2, "label2", "https://github.com/tensorflow/tensorflow/issues/48817"
    )
    assert (1, "symptom", "pending") in labels_of(
        r2, "label2", "https://stackoverflow.com/questions/59102657"
    )


def test_a_merged_link_cell_numbers_the_findings_of_one_post() -> None:
    # Round 3 label1 A4:A9 is merged over four labelled rows and two empty ones.
    labels = labels_of(real_round(3), "label1", "https://github.com/horovod/horovod/issues/110")
    assert [label for _, dimension, label in labels if dimension == "symptom"] == [
        "communication-setup-hang-and-timeout",
        "setup-failure",
        "communication-setup-hang-and-timeout",
        "setup-failure",
    ]
    assert sorted({finding for finding, _, _ in labels}) == [1, 2, 3, 4]


def test_a_repeated_link_gives_a_second_finding_of_the_same_post() -> None:
    labels = labels_of(real_round(1), "label1", "https://github.com/horovod/horovod/issues/656")
    assert sorted({finding for finding, _, _ in labels}) == [1, 2]


def test_round4_label2_values_shifted_left_are_realigned_with_a_note() -> None:
    result = real_round(4)
    assert labels_of(result, "label2", "https://github.com/horovod/horovod/issues/103") == [
        (1, "issue_type", "fault"),
        (1, "distributed_specific", "yes"),
        (1, "symptom", "import-error"),
        (1, "fix_pattern", "fix-dependency-installation"),
    ]
    shifted = [note for note in result.sheet("label2").notes if "shifted" in note.message]
    assert len(shifted) == 19
    assert (shifted[0].row, shifted[0].column, shifted[0].value) == (3, "G", "import error")


def test_a_missing_issue_type_is_read_from_the_filled_fault_columns() -> None:
    result = real_round(4)
    assert labels_of(result, "label1", "https://github.com/keras-team/keras/issues/9204")[:1] == [
        (1, "issue_type", "fault")
    ]
    notes = [(n.sheet, n.row) for n in result.notes if "issue type empty" in n.message]
    assert notes == [(sheet, row) for sheet in ("label1", "label2", "Final") for row in (57, 59, 63, 67)]


def test_an_inner_category_repeating_the_leaf_is_ignored_with_a_note() -> None:
    result = real_round(2)
    assert (1, "symptom", "setup-failure") in labels_of(
        result, "label2", "https://github.com/horovod/horovod/issues/2681"
    )
    assert [(n.row, n.column) for n in result.sheet("label2").notes] == [(38, "G")]


def test_retired_leaf_names_map_to_their_final_category() -> None:
    labels = labels_of(real_round(2), "label1", "https://github.com/pytorch/pytorch/issues/56142")
    assert (1, "symptom", "unexpected-performance-others") in labels
    labels = labels_of(real_round(1), "Final", "https://github.com/horovod/horovod/issues/6")
    assert (1, "symptom", "unexpected-intermediate-result") in labels


def test_a_stage_without_leaf_is_labelled_with_the_stage() -> None:
    rows = [r for r in real_round(2).sheet("label2").rows if r.item.endswith("tensorflow/issues/32010")]
    assert [(r.dimension, r.label) for r in rows] == [
        ("issue_type", "fault"),
        ("distributed_specific", "yes"),
        ("symptom", "data-and-model-preparation"),
        ("fix_pattern", "pending"),
    ]
    assert rows[0].memo == "fix framework version"


def test_the_memo_is_kept_on_the_first_row_of_its_finding() -> None:
    rows = [r for r in real_round(1).sheet("label1").rows if r.item.endswith("horovod/issues/111")]
    assert [r.memo for r in rows] == ["update mpi version", "", "", ""]


def test_a_leaf_under_the_wrong_inner_category_is_an_error_not_a_guess() -> None:
    result = real_round(4)
    labels = labels_of(result, "Final", "https://github.com/horovod/horovod/issues/934")
    assert [dimension for _, dimension, _ in labels] == ["issue_type", "distributed_specific", "fix_pattern"]
    (issue,) = [e for e in result.errors if e.sheet == "Final"]
    assert "unexpected performance" in issue.message


def test_rows_keep_the_text_they_were_read_from() -> None:
    rows = labels_of(real_round(1), "label1", "https://github.com/horovod/horovod/issues/111")
    raw = [r.raw for r in real_round(1).sheet("label1").rows if r.item.endswith("horovod/issues/111")]
    assert len(rows) == len(raw)
    assert raw[2] == "Hang & Timeout"


def test_swapping_the_annotator_sheets_swaps_only_the_annotator_names() -> None:
    path = DATA / "reliability_analysis_round2.xlsx"
    plain = tw.read_reliability_workbook(path, 2, vocabulary(), {"label1": "a", "label2": "b"})
    swapped = tw.read_reliability_workbook(path, 2, vocabulary(), {"label1": "b", "label2": "a"})
    rename = {"a": "b", "b": "a"}
    assert sorted(
        (rename[r.annotator], r.item, r.dimension, r.label, r.finding) for r in plain.rows
    ) == sorted((r.annotator, r.item, r.dimension, r.label, r.finding) for r in swapped.rows)


# --- Synthetic workbooks -----------------------------------------------------------------------------


def small_vocabulary() -> tw.Vocabulary:
    book, synonyms = small_codebook(
        fix_pattern={"fix versoin": "fix version"}, distributed_specific={"1": "yes", "0": "no"}
    )
    return tw.Vocabulary.from_codebook(book, synonyms)


def test_a_missing_sheet_raises_a_layout_error(tmp_path: Path) -> None:
    path = write_workbook(tmp_path / "r.xlsx", [])
    with pytest.raises(tw.TosemLayoutError, match="no sheet 'label3'"):
        tw.read_reliability_workbook(path, 1, small_vocabulary(), {"label3": "x"})


def test_an_unexpected_header_raises_a_layout_error_naming_the_sheet(tmp_path: Path) -> None:
    workbook = openpyxl.Workbook()
    workbook.active.title = "label1"
    workbook.active.append(["URL", "Kind"])
    workbook.save(tmp_path / "r.xlsx")
    with pytest.raises(tw.TosemLayoutError, match="sheet 'label1' header"):
        tw.read_reliability_workbook(tmp_path / "r.xlsx", 1, small_vocabulary(), {"label1": "a"})


def test_labels_without_a_link_outside_a_merge_are_an_error(tmp_path: Path) -> None:
    path = write_workbook(
        tmp_path / "r.xlsx",
        [
            ["https://x/1", "fault", None, None, 1, "Setup", None, "crash", "fix version"],
            [None, "fault", None, None, 1, "Setup", None, "crash", "fix version"],
        ],
    )
    sheet = tw.read_reliability_workbook(path, 1, small_vocabulary()).sheet("label1")
    assert sheet.findings == 1
    assert [(e.row, e.column, e.message) for e in sheet.errors] == [
        (3, "A", "labels without a link (no merged cell above): left out")
    ]


def test_a_merged_link_gives_the_rows_below_to_the_same_post(tmp_path: Path) -> None:
    path = write_workbook(
        tmp_path / "r.xlsx",
        [
            ["https://x/1", "fault", None, None, 1, "Setup", None, "crash", "fix version"],
            [None, "how-to question", "API usage"],
        ],
        merges=["A2:A3"],
    )
    rows = tw.read_reliability_workbook(path, 7, small_vocabulary()).sheet("label2").rows
    assert [(r.item, r.finding, r.dimension, r.label) for r in rows] == [
        ("https://x/1", 1, "issue_type", "fault"),
        ("https://x/1", 1, "distributed_specific", "yes"),
        ("https://x/1", 1, "symptom", "setup-crash"),
        ("https://x/1", 1, "fix_pattern", "fix-version"),
        ("https://x/1", 2, "issue_type", "howto"),
        ("https://x/1", 2, "howto_topic", "api"),
    ]
    assert {(r.annotator, r.round) for r in rows} == {("annotator2", 7)}


def test_a_deeper_level_without_its_parent_is_an_error(tmp_path: Path) -> None:
    path = write_workbook(
        tmp_path / "r.xlsx",
        [
            ["https://x/1", "fault", None, None, 0, "Run", None, "hang", "fix versoin"],
            ["https://x/2", "fault", None, None, 1, None, "Slow", "hang", None],
        ],
    )
    sheet = tw.read_reliability_workbook(path, 1, small_vocabulary()).sheet("label1")
    assert [(r.item, r.dimension, r.label) for r in sheet.rows if r.dimension != "issue_type"] == [
        ("https://x/1", "distributed_specific", "no"),
        ("https://x/1", "fix_pattern", "fix-version"),
        ("https://x/2", "distributed_specific", "yes"),
    ]
    assert [(e.row, e.column) for e in sheet.errors] == [(2, "H"), (3, "G")]


def test_values_outside_the_layout_and_on_the_wrong_kind_of_row_are_reported(tmp_path: Path) -> None:
    path = write_workbook(
        tmp_path / "r.xlsx",
        [["https://x/1", "how-to question", "API usage", None, 1, None, None, None, None, "memo", "stray"]],
    )
    sheet = tw.read_reliability_workbook(path, 1, small_vocabulary()).sheet("label1")
    assert [(r.dimension, r.label, r.memo) for r in sheet.rows] == [
        ("issue_type", "howto", "memo"),
        ("howto_topic", "api", ""),
    ]
    assert [(e.column, e.value) for e in sheet.errors] == [("K", "stray"), ("E", "1")]


def test_a_memo_without_labels_is_reported(tmp_path: Path) -> None:
    path = write_workbook(
        tmp_path / "r.xlsx", [["https://x/1", None, None, None, None, None, None, None, None, "why?"]]
    )
    sheet = tw.read_reliability_workbook(path, 1, small_vocabulary()).sheet("label1")
    assert (sheet.findings, [(e.column, e.value) for e in sheet.errors]) == (0, [("J", "why?")])


# --- The real final taxonomy -------------------------------------------------------------------------


def test_the_final_workbook_reads_637_faults_and_494_howtos_of_1070_posts_without_error() -> None:
    final = real_final()
    assert final.sheet(tw.FINAL_FAULT_SHEET).findings == 637
    assert final.sheet(tw.FINAL_HOWTO_SHEET).findings == 494
    assert len(final.sources) == 1070
    assert final.errors == ()


def symptom_counts(labels: Sequence[str]) -> tuple[Counter[str], Counter[str]]:
    paths = category_paths(tw.SYMPTOM)
    stages = Counter(paths[label][0] for label in labels)
    inner = Counter(paths[label][1] for label in labels if len(paths[label]) == 3)
    return stages, inner


PUBLISHED_STAGES = {
    "Package Build & Import": 82,
    "Communication Setup": 133,
    "Data and Model Preparation": 57,
    "Training & Evaluation": 365,
}
PUBLISHED_INNER = {"Program Failure": 215, "Unexpected Performance": 150}


def test_the_final_workbook_reproduces_the_published_symptom_counts() -> None:
    labels = [row.label for row in real_final().rows if row.dimension == tw.SYMPTOM]
    assert len(labels) == 637
    assert symptom_counts(labels) == (Counter(PUBLISHED_STAGES), Counter(PUBLISHED_INNER))


def test_the_final_workbook_keeps_the_study_source_of_each_post() -> None:
    sources = real_final().sources
    assert sources["https://github.com/horovod/horovod/issues/100"] == "GitHub-horovod"
    assert Counter(sources.values())["SO-tensorflow & SO-keras"] == 4


# --- The generated fixtures --------------------------------------------------------------------------


def test_fixture_final_decisions_reproduce_the_published_symptom_counts() -> None:
    rows = read_csv("final_decisions.csv")
    labels = [row["label"] for row in rows if row["dimension"] == "symptom"]
    assert len(labels) == 637
    assert symptom_counts(labels) == (Counter(PUBLISHED_STAGES), Counter(PUBLISHED_INNER))


def test_fixture_final_decisions_cover_1131_findings_of_1070_posts() -> None:
    rows = read_csv("final_decisions.csv")
    findings = {(row["item"], row["finding"]) for row in rows}
    assert len(findings) == 1131
    assert Counter(row["label"] for row in rows if row["dimension"] == "issue_type") == {
        "fault": 637,
        "howto": 494,
    }
    assert {row["item"] for row in rows} == {row["url"] for row in read_csv("final_items.csv")}
    assert {row["annotator"] for row in rows} == {""}


def test_fixture_items_hold_no_text_and_name_their_source() -> None:
    for name, count in (("items.csv", 216), ("final_items.csv", 1070)):
        items = read_csv(name)
        assert len(items) == count
        assert {(item["title"], item["body"]) for item in items} == {("", "")}
        for item in items:
            expected = "github" if item["url"].startswith("https://github.com/") else "stackoverflow"
            assert item["source"] == expected
            assert item["framework"]


@pytest.mark.parametrize("name", LABEL_FILES)
def test_fixture_labels_use_codebook_keys_and_known_items(name: str) -> None:
    items = {row["url"] for row in read_csv("items.csv")}
    keys = {d["key"]: set(category_paths(d["key"])) | {tw.PENDING_LABEL} for d in codebook()["dimensions"]}
    rows = read_csv(name)
    assert rows
    for row in rows:
        assert row["item"] in items
        assert row["label"] in keys[row["dimension"]]


@pytest.mark.parametrize(
    ("name", "annotators", "count"),
    [
        ("labels_round1.csv", {"annotator1", "annotator2"}, 675),
        ("labels_round2.csv", {"annotator1", "annotator2"}, 684),
        ("decisions_round1.csv", {""}, 349),
        ("decisions_round2.csv", {""}, 352),
    ],
)
def test_fixture_label_files_hold_the_right_annotators(name: str, annotators: set[str], count: int) -> None:
    rows = read_csv(name)
    assert {row["annotator"] for row in rows} == annotators
    assert len(rows) == count


def test_fixture_codebook_gives_distinct_keys_to_names_shared_by_several_parents() -> None:
    paths = category_paths(tw.SYMPTOM)
    by_name: dict[str, list[str]] = {}
    for key, path in paths.items():
        by_name.setdefault(path[-1], []).append(key)
    assert sorted(by_name["others"]) == ["program-failure-others", "unexpected-performance-others"]
    parents = {path[:-1] for path in paths.values()}
    assert len(paths) == 45
    assert sum(1 for path in paths.values() if path not in parents) == 39
    assert len(category_paths(tw.FIX_PATTERN)) == 28
    assert len(category_paths(tw.HOWTO_TOPIC)) == 31


def test_fixture_codebook_is_accepted_by_the_codebook_reader() -> None:
    from apps.taxonomy.codebook_spec import read_codebook

    spec = read_codebook(FIXTURES / "codebook.json")
    assert [d.key for d in spec.dimensions] == list(tw.DIMENSIONS)


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "build_tosem23_fixtures", REPO / "scripts" / "build_tosem23_fixtures.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_fixture_label_files_are_what_the_script_makes_of_the_workbooks() -> None:
    script = _script()
    build_codebook: Callable[[], dict[str, Any]] = script.build_codebook
    assert build_codebook() == codebook()
    rounds, final = script.read_workbooks(DATA, DATA / "final_categories.xlsx", codebook())
    for name, text in script.label_files(rounds, final).items():
        assert (FIXTURES / name).read_text(encoding="utf-8") == text, name
