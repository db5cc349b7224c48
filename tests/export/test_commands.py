"""``export_dataset`` and ``import_study`` on the command line: output, refusals, nothing partial."""

from __future__ import annotations

import hashlib
import json
import zipfile
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from apps.accounts.models import Study
from apps.core.models import JobStatus
from apps.export import services
from apps.export.models import ExportJob

pytestmark = pytest.mark.django_db


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO())
    return out.getvalue()


@pytest.mark.parametrize("format", ["csv", "json", "jsonl", "xlsx", "zip"])
def test_each_format_is_written_to_the_output_and_recorded_as_a_job(
    labelled: Study, tmp_path: Path, format: str
) -> None:
    output = tmp_path / f"dataset.{format}"
    message = run("export_dataset", "ddp", "--format", format, "--output", str(output))
    job = ExportJob.objects.get(study=labelled)
    assert job.status == JobStatus.SUCCEEDED and job.format == format
    stored = services.stored_path(job)
    assert stored is not None and output.read_bytes() == stored.read_bytes()
    assert hashlib.sha256(output.read_bytes()).hexdigest() == job.sha256
    assert job.sha256 in message
    assert not list(tmp_path.glob(".*.part"))


def test_filters_and_raw_labels_reach_the_file(labelled: Study, tmp_path: Path) -> None:
    output = tmp_path / "round2.jsonl"
    run("export_dataset", "ddp", "--format", "jsonl", "--output", str(output), "--raw", "--round", "2")
    urls = [json.loads(line)["url"] for line in output.read_text().splitlines()]
    assert urls == ["https://github.com/o/r/issues/3", "https://github.com/o/r/issues/4"]
    job = ExportJob.objects.get(study=labelled)
    assert job.options["round"] == 2 and job.options["raw"] is True


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--format", "xml"], "unknown format 'xml'; valid formats: csv, json, jsonl, xlsx, zip"),
        (["--format", "csv", "--provenance", "x"], "valid provenances: unanimous, majority, adjudicated"),
        (["--format", "csv", "--source", "gitlab"], "valid sources: github, stackoverflow"),
        (["--format", "csv", "--round", "7"], "unknown round 7; valid rounds: 1, 2"),
        (["--format", "csv", "--round", "two"], "--round must be a whole number, got 'two'"),
        (["--format", "csv", "--level", "9"], "level 9 is out of range; valid levels: 1, 2"),
        (["--format", "zip", "--source", "github"], "holds the whole study"),
    ],
)
def test_bad_input_is_refused_with_the_valid_values_and_writes_nothing(
    labelled: Study, tmp_path: Path, args: list[str], message: str
) -> None:
    output = tmp_path / "out"
    with pytest.raises(CommandError) as error:
        run("export_dataset", "ddp", *args, "--output", str(output))
    assert message in str(error.value)
    assert not output.exists()
    assert not ExportJob.objects.exists()


def test_an_unknown_study_or_output_directory_is_refused(labelled: Study, tmp_path: Path) -> None:
    with pytest.raises(CommandError, match="No study with the slug 'nope'"):
        run("export_dataset", "nope", "--format", "csv", "--output", str(tmp_path / "x.csv"))
    with pytest.raises(CommandError, match="does not exist"):
        run("export_dataset", "ddp", "--format", "csv", "--output", str(tmp_path / "missing" / "x.csv"))


def test_import_study_makes_a_new_study_from_a_package(labelled: Study, tmp_path: Path) -> None:
    package = tmp_path / "ddp.zip"
    run("export_dataset", "ddp", "--format", "zip", "--output", str(package))
    message = run("import_study", "ddp-copy", str(package))
    assert "Study 'ddp-copy' created: 5 items, 2 rounds, 5 submitted annotations, 3 decisions" in message
    assert Study.objects.filter(slug="ddp-copy").exists()


def test_import_study_refuses_a_tampered_package_and_writes_nothing(labelled: Study, tmp_path: Path) -> None:
    package = tmp_path / "ddp.zip"
    run("export_dataset", "ddp", "--format", "zip", "--output", str(package))
    tampered = tmp_path / "tampered.zip"
    with zipfile.ZipFile(package) as source, zipfile.ZipFile(tampered, "w") as target:
        for name in source.namelist():
            data = source.read(name)
            target.writestr(name, data.replace(b"Segfault", b"Hang") if name == "dataset.json" else data)
    studies = Study.objects.count()
    with pytest.raises(CommandError) as error:
        run("import_study", "ddp-copy", str(tampered))
    assert "dataset.json: checksum mismatch" in str(error.value)
    assert "nothing was written" in str(error.value)
    assert Study.objects.count() == studies


def test_import_study_refuses_a_directory_with_status_2(tmp_path: Path) -> None:
    with pytest.raises(CommandError) as failure:
        run("import_study", "restored", str(tmp_path))

    assert failure.value.returncode == 2 and "is a directory, not a file" in str(failure.value)
    assert not Study.objects.filter(slug="restored").exists()
