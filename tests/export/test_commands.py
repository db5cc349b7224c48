"""``export_dataset`` and ``import_study`` on the command line: output, refusals, nothing partial."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import socket
import stat
import zipfile
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from apps.accounts.models import Study
from apps.core.models import JobStatus
from apps.export import services
from apps.export.models import ExportJob
from tests.factories import StudyFactory

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
        (
            ["--format", "xml"],
            "--format: invalid choice: 'xml' (choose from 'csv', 'json', 'jsonl', 'xlsx', 'zip', 'paper')",
        ),
        (
            ["--format", "csv", "--provenance", "x"],
            "valid provenances: unanimous, majority, discussed, adjudicated",
        ),
        (["--format", "csv", "--source", "bugzilla"], "valid sources: github, stackoverflow"),
        (["--format", "csv", "--round", "7"], "unknown round 7; valid rounds: 1, 2"),
        (["--format", "csv", "--round", "two"], "--round: must be a positive whole number, got 'two'"),
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


@pytest.mark.parametrize(
    ("slug", "message"),
    [
        ("DDP-Copy", "Invalid study slug 'DDP-Copy'"),
        ("ddp-", "Invalid study slug 'ddp-'"),
        ("ddp copy", "Invalid study slug 'ddp copy'"),
        ("d" * 65, "at most 64 characters"),
        ("legacy", "differs only in case from the existing study 'Legacy'"),
    ],
)
def test_import_study_refuses_a_slug_create_study_would_refuse_or_one_differing_only_in_case(
    labelled: Study, tmp_path: Path, slug: str, message: str
) -> None:
    StudyFactory(slug="Legacy")  # made before the rule (import_study accepted capitals)
    package = tmp_path / "ddp.zip"
    run("export_dataset", "ddp", "--format", "zip", "--output", str(package))
    with pytest.raises(CommandError) as refused:
        run("create_study", slug, "--name", "Copy")
    assert message in str(refused.value)
    with pytest.raises(CommandError) as error:
        run("import_study", slug, str(package))
    assert message in str(error.value)
    assert sorted(Study.objects.values_list("slug", flat=True)) == ["Legacy", "ddp"]


def _special(kind: str, path: Path, tmp_path: Path) -> str:
    """Make `path` a file that is not a regular file; return how the refusal names it."""
    if kind == "fifo":
        os.mkfifo(path)
        return "is a FIFO"
    if kind == "symlink":
        target = tmp_path / "elsewhere.csv"
        target.write_text("someone else's file")
        path.symlink_to(target)
        return "is a symbolic link"
    if kind == "symlink to /dev/full":
        path.symlink_to("/dev/full")
        return "is a symbolic link"
    try:  # a device node like /dev/full (needs root, as the report had it), else a socket
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 7))
        return "is a character device"
    except PermissionError:
        with socket.socket(socket.AF_UNIX) as listener:
            listener.bind(str(path))
        return "is a socket"


@pytest.mark.parametrize("kind", ["fifo", "symlink", "symlink to /dev/full", "device"])
def test_an_output_that_is_not_a_regular_file_is_refused_and_left_alone(
    labelled: Study, tmp_path: Path, kind: str
) -> None:
    output = tmp_path / "dataset.csv"
    named = _special(kind, output, tmp_path)
    before = os.lstat(output)
    with pytest.raises(CommandError) as error:
        run("export_dataset", "ddp", "--format", "csv", "--output", str(output))
    assert str(error.value) == f"--output {output} {named}; give the path of a regular file or a new one"
    after = os.lstat(output)
    assert (after.st_mode, after.st_ino) == (before.st_mode, before.st_ino)
    if kind == "symlink":
        assert (tmp_path / "elsewhere.csv").read_text() == "someone else's file"
    assert not list(tmp_path.glob(".*.part"))
    assert not ExportJob.objects.exists()


def test_a_full_disk_fails_the_job_in_one_line_and_leaves_the_old_file_and_no_partial_one(
    labelled: Study, tmp_path: Path, export_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    output = tmp_path / "dataset.csv"
    output.write_text("yesterday's export")

    def disk_full(source: Any, target: Any, *args: Any) -> None:
        target.write(source.read(100))
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(shutil, "copyfileobj", disk_full)
    with pytest.raises(CommandError) as error:
        run("export_dataset", "ddp", "--format", "csv", "--output", str(output))
    job = ExportJob.objects.get()
    assert (
        str(error.value)
        == f"Export #{job.pk} failed: --output {output}: cannot write: No space left on device"
    )
    assert job.status == JobStatus.FAILED and "No space left on device" in job.error
    assert not services.is_downloadable(job)
    assert output.read_text() == "yesterday's export"
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != export_root.name) == ["dataset.csv"]
    assert not [p for p in export_root.rglob("*") if p.is_file()]


@pytest.mark.parametrize("refused", ["creating the file", "renaming it into place"])
def test_a_directory_nobody_may_write_fails_the_job_in_one_line_and_leaves_no_partial_file(
    labelled: Study, tmp_path: Path, export_root: Path, monkeypatch: pytest.MonkeyPatch, refused: str
) -> None:
    """The operating system says "Permission denied" (EACCES) for the output's directory: a stand-in, since
    root may write anywhere and no path refuses everyone on every machine (/sys is read-only in a
    container, and missing on macOS)."""
    locked = tmp_path / "locked"
    locked.mkdir()
    output = locked / "dataset.csv"
    denied = PermissionError(errno.EACCES, os.strerror(errno.EACCES))
    if refused == "creating the file":
        real_open = Path.open

        def open_(path: Path, *args: Any, **kwargs: Any) -> Any:
            if path.parent == locked:
                raise denied
            return real_open(path, *args, **kwargs)

        monkeypatch.setattr(Path, "open", open_)
    else:
        real_replace = os.replace

        def replace(source: Any, target: Any) -> None:
            if Path(target).parent == locked:
                raise denied
            real_replace(source, target)

        monkeypatch.setattr(os, "replace", replace)

    with pytest.raises(CommandError) as error:
        run("export_dataset", "ddp", "--format", "csv", "--output", str(output))

    job = ExportJob.objects.get()
    assert str(error.value) == f"Export #{job.pk} failed: --output {output}: cannot write: Permission denied"
    assert job.status == JobStatus.FAILED and job.error.startswith(f"--output {output}: cannot write:")
    assert not services.is_downloadable(job)
    assert not list(locked.iterdir())  # neither the file nor a partial one
    assert not [p for p in export_root.rglob("*") if p.is_file()]


def test_a_full_disk_under_the_export_root_is_one_line_and_a_failed_job(
    labelled: Study, tmp_path: Path, export_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def disk_full(path: Path) -> str:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(services, "sha256_of", disk_full)
    output = tmp_path / "dataset.csv"
    with pytest.raises(CommandError) as error:
        run("export_dataset", "ddp", "--format", "csv", "--output", str(output))
    assert str(error.value) == "Export failed: cannot write the export file: No space left on device"
    assert ExportJob.objects.get().status == JobStatus.FAILED
    assert not output.exists()
    assert not [p for p in export_root.rglob("*") if p.is_file()]


def test_import_study_refuses_a_directory_with_status_2(tmp_path: Path) -> None:
    with pytest.raises(CommandError) as failure:
        run("import_study", "restored", str(tmp_path))

    assert failure.value.returncode == 2 and "is a directory, not a file" in str(failure.value)
    assert not Study.objects.filter(slug="restored").exists()
