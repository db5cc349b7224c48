"""import_study reads annotations.csv row by row: every bad row is reported, and an annotation's rows may
come in any order."""

from __future__ import annotations

import csv
import io
import zipfile
from pathlib import Path

import pytest

from apps.accounts.models import Study
from apps.annotation.models import LabelValue
from apps.export.package import PackageError, build_package, import_study

from .test_package import counts, repack

pytestmark = pytest.mark.django_db

ALICE_1 = ("https://github.com/o/r/issues/1", "alice")


def annotation_rows(path: Path) -> list[list[str]]:
    with zipfile.ZipFile(path) as archive:
        return list(csv.reader(io.StringIO(archive.read("annotations.csv").decode("utf-8"))))


def with_rows(source: Path, target: Path, rows: list[list[str]]) -> Path:
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    return repack(source, target, {"annotations.csv": out.getvalue().encode("utf-8")})


def labels(study: Study) -> list[tuple[str, str, int, str, str | None]]:
    return sorted(
        LabelValue.objects.filter(finding__annotation__assignment__study=study).values_list(
            "finding__annotation__assignment__item__url",
            "finding__annotation__assignment__annotator__username",
            "finding__number",
            "dimension__key",
            "category__key",
        )
    )


def test_every_bad_row_of_annotations_csv_is_reported(labelled: Study, tmp_path: Path) -> None:
    original = tmp_path / "p.zip"
    build_package(labelled, original)
    header, *rows = annotation_rows(original)
    alice = [r for r in rows if tuple(r[:2]) == ALICE_1]
    bob = [r for r in rows if tuple(r[:2]) == (ALICE_1[0], "bob")]
    pending = [*alice[1][:2], "symptom", "pending", *alice[1][4:7], "", "", *alice[1][9:]]
    bad = [
        [*bob[0][:10], "yesterday"],  # row 2: an unreadable time...
        [*bob[1][:10], "yesterday"],  # row 3: ...reported again on the annotation's next row
        [alice[0][0], "not a name!", *alice[0][2:]],  # row 4
        [alice[0][0], "not a name!", *alice[1][2:]],  # row 5: reported again
        alice[0],  # row 6: alice's annotation
        alice[0],  # row 7: the same label twice
        [*alice[0][:6], "another memo", *alice[0][7:]],  # row 8: differs from row 6
        alice[1],  # row 9: symptom segfault...
        pending,  # row 10: ...and pending
    ]
    broken = with_rows(original, tmp_path / "broken.zip", [header, *bad])
    before = counts()
    with pytest.raises(PackageError) as error:
        import_study("ddp-copy", broken)
    problems = error.value.problems
    assert problems[:7] == [
        "annotations.csv row 2, submitted_at: not an ISO 8601 timestamp: 'yesterday'",
        "annotations.csv row 3, submitted_at: not an ISO 8601 timestamp: 'yesterday'",
        "annotations.csv row 4, annotator: not a valid username: 'not a name!'",
        "annotations.csv row 5, annotator: not a valid username: 'not a name!'",
        "annotations.csv row 7: the same label twice in one finding",
        "annotations.csv row 8: status, memo or submitted_at differ from row 6 of the same annotation",
        "annotations.csv row 10: dimension 'symptom' of finding 1 is both pending and a category",
    ]
    assert counts() == before


def test_an_annotations_rows_may_be_apart(labelled: Study, tmp_path: Path) -> None:
    """Alice's first row moved to the end: her annotation of item 1 gets all its labels all the same."""
    original = tmp_path / "p.zip"
    build_package(labelled, original)
    header, *rows = annotation_rows(original)
    first = next(r for r in rows if tuple(r[:2]) == ALICE_1)
    rows.remove(first)
    moved = with_rows(original, tmp_path / "moved.zip", [header, *rows, first])
    assert labels(import_study("moved", moved).study) == labels(import_study("kept", original).study)
