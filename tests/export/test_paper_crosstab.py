"""Cross-tabulations: the pure counting and renderings, the command on a small study, and the done-when
check on the TOSEM 2023 final sheet against an independent pandas count of the sheet."""

from __future__ import annotations

import csv
import io
import json
from io import StringIO
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import transaction

from apps.accounts.models import Study
from apps.export.paper import crosstab as ct
from apps.export.paper import data
from tests.export.conftest import TOSEM, build_tosem_study

SHEET = Path("/work/shared/data/tosem23/normalized/final_faults_normalized.csv")


def small() -> ct.CrossTab:
    units = [
        ct.Unit(("A",), ("x", "y")),  # multi-choice column: counts once in each
        ct.Unit(("A",), ("x",)),
        ct.Unit(("B",), ("y",)),
        ct.Unit(("B",), ()),  # no column value: not counted
    ]
    return ct.crosstab(units, row_label="R", col_label="C", row_order=("B", "A", "Z"), col_order=("x", "y"))


def test_a_unit_with_several_values_counts_once_in_each_cell_and_once_in_the_totals() -> None:
    table = small()
    assert table.as_json() == {
        "rows": ["B", "A", "Z"],
        "cols": ["x", "y"],
        "counts": [[0, 1], [2, 1], [0, 0]],
        "row_totals": [1, 2, 0],
        "col_totals": [2, 2],
        "total": 3,
    }
    assert table.row_share(1, 0) == 1.0 and table.col_share(1, 1) == 0.5 and table.row_share(2, 0) is None


def test_the_renderings_hold_every_count_and_total() -> None:
    table = small()
    rows = list(csv.reader(io.StringIO(ct.to_csv(table))))
    assert rows[0] == ["R", "C", "count", "row_share_percent", "col_share_percent"]
    assert ["A", "x", "2", "100.0", "100.0"] in rows and ["Total", "Total", "3", "", ""] in rows
    markdown = ct.to_markdown(table)
    assert "| A | 2 (100.0 %, 100.0 %) | 1 (50.0 %, 50.0 %) | 2 |" in markdown
    assert "| **Total** | 2 | 2 | 3 |" in markdown and "| B | 0 | 1 (100.0 %, 50.0 %) | 1 |" in markdown
    latex = ct.to_latex(table, caption="R by C & more")
    assert r"\toprule" in latex and r"\bottomrule" in latex and r"R by C \& more" in latex
    assert r"A & 2 (100.0\%, 100.0\%) & 1 (50.0\%, 50.0\%) & 2 \\" in latex
    assert "share of the row's total, share of the column's total" in latex


# --- On a study ----------------------------------------------------------------------------------------


def run(*args: str) -> str:
    out = StringIO()
    call_command("crosstab", *args, stdout=out)
    return out.getvalue()


@pytest.mark.django_db
def test_gold_symptoms_by_source_at_the_top_level(labelled: Study) -> None:
    result = json.loads(
        run(labelled.slug, "--rows", "symptom", "--rows-level", "1", "--cols", "source", "--format", "json")
    )
    # Gold: item 1 segfault (github), item 2 hang (stackoverflow), item 3 oom (github).
    assert result["rows"] == ["Crash", "Hang"]
    assert result["cols"] == ["github", "stackoverflow"]
    assert result["counts"] == [[2, 0], [0, 1]]
    assert result["total"] == 3


@pytest.mark.django_db
def test_one_annotators_labels_by_round_and_by_a_multi_choice_dimension(labelled: Study) -> None:
    by_round = json.loads(
        run(labelled.slug, "--rows", "type", "--cols", "round", "--labels", "alice", "--format", "json")
    )
    assert by_round["rows"] == ["Fault", "How-to"] and by_round["cols"] == ["1", "2"]
    assert by_round["counts"] == [[2, 1], [0, 0]]
    by_fix = json.loads(
        run(labelled.slug, "--rows", "symptom", "--cols", "fix", "--labels", "alice", "--format", "json")
    )
    # alice: segfault with config + code, oom with code.
    rows = dict(zip(by_fix["rows"], by_fix["counts"], strict=True))
    assert by_fix["cols"] == ["Config", "Code", "Upgrade"]
    assert rows["Crash > Segfault"] == [1, 1, 0] and rows["Crash > Out of memory"] == [0, 1, 0]
    assert by_fix["row_totals"][by_fix["rows"].index("Crash > Segfault")] == 1


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--rows", "nope", "--cols", "source"], "no dimension 'nope'"),
        (["--rows", "symptom", "--cols", "source", "--labels", "mallory"], "'mallory' is neither"),
        (["--rows", "symptom", "--cols", "colour"], "no item of the study has a field 'colour'"),
        (["--rows", "symptom", "--cols", "source", "--cols-level", "2"], "item field, not a dimension"),
    ],
)
def test_bad_requests_are_refused_naming_the_problem(labelled: Study, args: list[str], message: str) -> None:
    with pytest.raises(CommandError, match=message):
        run(labelled.slug, *args, "--format", "json")


@pytest.mark.django_db
@pytest.mark.parametrize("fmt", ["csv", "md", "tex"])
def test_every_format_writes_the_table(labelled: Study, fmt: str) -> None:
    text = run(labelled.slug, "--rows", "symptom", "--rows-level", "1", "--cols", "source", "--format", fmt)
    assert "Crash" in text and "stackoverflow" in text


# --- Done when: the TOSEM 2023 final sheet ---------------------------------------------------------------


@pytest.fixture(scope="module")
def tosem_crosstab(django_db_setup: None, django_db_blocker: Any) -> dict[str, Any]:
    with django_db_blocker.unblock(), transaction.atomic():
        study = build_tosem_study(Study.objects.create(slug="tosem23-ct", name="TOSEM 2023"))
        table = data.crosstab(study, rows="symptom", rows_level=1, cols="fix_pattern").as_json()
        transaction.set_rollback(True)
    return table


def independent_count() -> pd.DataFrame:
    """Stage by fix pattern counted with pandas over the sheet as the fixtures hold it, names from the
    codebook file: nothing of Taxonomist's reading or counting code is used."""
    codebook = json.loads((TOSEM / "codebook.json").read_text(encoding="utf-8"))
    dims = {d["key"]: d for d in codebook["dimensions"]}
    stage_of: dict[str, str] = {}

    def walk(nodes: list[dict[str, Any]], stage: str | None) -> None:
        for node in nodes:
            top = stage or node["name"]
            stage_of[node["key"]] = top
            walk(node.get("children", []), top)

    walk(dims["symptom"]["categories"], None)
    pattern_name = {c["key"]: c["name"] for c in dims["fix_pattern"]["categories"]}
    labels = pd.read_csv(TOSEM / "final_decisions.csv", keep_default_na=False, dtype=str)
    symptoms = labels[labels.dimension == "symptom"].assign(stage=lambda f: f.label.map(stage_of))
    fixes = labels[labels.dimension == "fix_pattern"].assign(pattern=lambda f: f.label.map(pattern_name))
    pairs = symptoms[["item", "finding", "stage"]].merge(
        fixes[["item", "finding", "pattern"]], on=["item", "finding"]
    )
    pairs = pairs.drop_duplicates()
    return pd.crosstab(pairs.stage, pairs.pattern)


@pytest.mark.django_db  # the module fixture needs the test database set up (run alone too)
def test_the_tosem_stage_by_fix_pattern_crosstab_equals_an_independent_count_of_the_sheet(
    tosem_crosstab: dict[str, Any],
) -> None:
    expected = independent_count()
    got = pd.DataFrame(tosem_crosstab["counts"], index=tosem_crosstab["rows"], columns=tosem_crosstab["cols"])
    assert set(expected.index) == set(got.index)
    assert set(expected.columns) <= set(got.columns)
    for stage in expected.index:
        for pattern in got.columns:
            want = int(expected.loc[stage, pattern]) if pattern in expected.columns else 0
            assert got.loc[stage, pattern] == want, (stage, pattern)
    assert sum(map(sum, tosem_crosstab["counts"])) == int(expected.to_numpy().sum())


@pytest.mark.django_db  # the module fixture needs the test database set up (run alone too)
def test_the_tosem_row_totals_are_the_published_fault_counts_per_stage(
    tosem_crosstab: dict[str, Any],
) -> None:
    sheet = pd.read_csv(SHEET, dtype=str, keep_default_na=False)
    faults = sheet[sheet.stage != "stage"].stage.str.casefold().value_counts()  # one header row pasted in
    totals = dict(
        zip((r.casefold() for r in tosem_crosstab["rows"]), tosem_crosstab["row_totals"], strict=True)
    )
    assert totals == faults.to_dict() == {
        "training & evaluation": 365, "communication setup": 133, "package build & import": 82,
        "data and model preparation": 57,
    }  # fmt: skip
    assert tosem_crosstab["total"] == 637
