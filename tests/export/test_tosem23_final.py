"""Done when (issue 8): the TOSEM 2023 final sheet exports a package whose taxonomy counts are the paper's,
and export → import_study → export gives byte-identical dataset files.

The study: items from fixtures/tosem23/final_items.csv, the codebook fixtures/tosem23/codebook.json, and the
1,131 findings of fixtures/tosem23/final_decisions.csv imported as decisions through
`adjudication.services.import_decisions`. Published counts (Liu et al., TOSEM 2023, 637 fault rows; see
../shared/data/tosem23/README.md): Package Build & Import 82, Communication Setup 133, Data and Model
Preparation 57, Training & Evaluation 365 (Program Failure 215, Unexpected Performance 150).
"""

from __future__ import annotations

import csv
import io
import json
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from django.db import transaction

from apps.accounts.models import Study
from apps.export.counts import INDENT_MARKDOWN
from apps.export.package import DATASET_FILES, build_package, import_study
from tests.export.conftest import build_tosem_study


def files(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def markdown_rows(text: str, dimension: str) -> dict[str, list[str]]:
    """The rows of one dimension's table in taxonomy_counts.md: name (indentation kept) → cells."""
    section = text.split(f"(`{dimension}`)", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        if line.startswith("| ") and not line.startswith("| Category"):
            cells = [cell.strip(" ") for cell in line.strip("|").split(" | ")]
            rows[cells[0]] = cells[1:]
    return rows


def total(cells: list[str]) -> int:
    return int(cells[-2])  # the "Total n" column


@dataclass(frozen=True)
class Packages:
    original: dict[str, bytes]
    """The package of the study built from the final sheet."""
    again: dict[str, bytes]
    """The package of the study `import_study` made from `original`."""


@pytest.fixture(scope="module")
def packages(
    django_db_setup: None, django_db_blocker: Any, tmp_path_factory: pytest.TempPathFactory
) -> Packages:
    """Build the study, export it, import the package and export again, once for the module; every
    database write is rolled back at the end (the tests only read the two packages)."""
    directory = tmp_path_factory.mktemp("tosem23")
    with django_db_blocker.unblock(), transaction.atomic():
        study = build_tosem_study(Study.objects.create(slug="tosem23", name="TOSEM 2023 final taxonomy"))
        build_package(study, directory / "original.zip")
        copy = import_study("tosem23-copy", directory / "original.zip").study
        build_package(copy, directory / "again.zip")
        transaction.set_rollback(True)
    return Packages(files(directory / "original.zip"), files(directory / "again.zip"))


@pytest.mark.django_db  # the module fixture needs the test database set up (run alone too)
def test_the_package_reproduces_the_published_fault_counts(packages: Packages) -> None:
    text = packages.original["taxonomy_counts.md"].decode("utf-8")
    symptoms = markdown_rows(text, "symptom")
    assert total(symptoms["**All findings**"]) == 637
    assert total(symptoms["Package Build & Import"]) == 82
    assert total(symptoms["Communication Setup"]) == 133
    assert total(symptoms["Data and Model Preparation"]) == 57
    assert total(symptoms["Training & Evaluation"]) == 365
    assert total(symptoms[INDENT_MARKDOWN + "Program Failure"]) == 215
    assert total(symptoms[INDENT_MARKDOWN + "Unexpected Performance"]) == 150
    assert total(symptoms[INDENT_MARKDOWN + "installation & build failure"]) == 51
    assert total(symptoms[INDENT_MARKDOWN + "import error"]) == 31
    assert total(symptoms[INDENT_MARKDOWN + "setup failure"]) == 85
    assert total(symptoms[INDENT_MARKDOWN * 2 + "communication error"]) == 38
    kinds = markdown_rows(text, "issue_type")
    assert total(kinds["fault"]) == 637 and total(kinds["how-to question"]) == 494
    assert total(kinds["**All findings**"]) == 1131


@pytest.mark.django_db  # the module fixture needs the test database set up (run alone too)
def test_counts_per_source_add_up_to_the_total(packages: Packages) -> None:
    text = packages.original["taxonomy_counts.md"].decode("utf-8")
    for name, cells in markdown_rows(text, "symptom").items():
        github, stackoverflow, both = int(cells[0]), int(cells[2]), int(cells[4])
        assert github + stackoverflow == both, name


@pytest.mark.django_db  # the module fixture needs the test database set up (run alone too)
def test_the_latex_table_holds_the_same_counts(packages: Packages) -> None:
    tex = packages.original["taxonomy_counts.tex"].decode("utf-8")
    symptom = tex.split(r"\label{tab:taxonomy-symptom}", 1)[1].split(r"\end{table}", 1)[0]
    assert r"Package Build \& Import & " in symptom
    rows = {
        line.strip().split(" & ")[0]: line.strip().split(" & ")
        for line in symptom.splitlines()
        if " & " in line
    }
    assert rows[r"Package Build \& Import"][5] == "82"
    assert rows[r"Training \& Evaluation"][5] == "365"
    assert rows["All findings"][5] == "637"


@pytest.mark.django_db  # the module fixture needs the test database set up (run alone too)
def test_the_dataset_holds_every_finding_of_the_final_sheet(packages: Packages) -> None:
    package = packages.original
    lines = list(csv.reader(io.StringIO(package["dataset.csv"].decode("utf-8"))))
    assert len(lines) == 1 + 1131
    assert ",".join(lines[0]) == (
        "url,title,source,round,finding,issue_type,distributed_specific,symptom,fix_pattern,howto_topic,"
        "provenance,decided_by,rationale"
    )
    objects = json.loads(package["dataset.json"])
    assert len(objects) == 1070
    assert {obj["provenance"] for obj in objects} == {"imported"}
    manifest = json.loads(package["manifest.json"])
    assert manifest["counts"] == {"items": 1070, "decided_items": 1070, "findings": 1131, "annotations": 0}


@pytest.mark.django_db  # the module fixture needs the test database set up (run alone too)
def test_export_import_export_is_byte_identical_on_the_dataset_files(packages: Packages) -> None:
    first, second = packages.original, packages.again
    for name in DATASET_FILES:
        assert first[name] == second[name], name
    assert "dataset.csv" in DATASET_FILES and "dataset.json" in DATASET_FILES
