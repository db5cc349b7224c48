"""``export_codebook --output PATH`` under the shared output contract (`apps.core.output`)."""

from __future__ import annotations

import errno
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from apps.accounts.models import Study
from apps.taxonomy.models import Codebook


@pytest.fixture
def no_hang() -> Iterator[None]:
    """Fail, never hang, if the command opens a FIFO nobody reads (the open blocks until a reader comes)."""

    def hung(signum: int, frame: FrameType | None) -> None:
        raise AssertionError("the command blocked on the output path")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(10)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def export(study: Study, output: Path) -> None:
    call_command("export_codebook", study.slug, "--format", "json", "--output", str(output))


def test_a_fifo_as_output_is_refused_before_it_is_opened(
    study: Study, codebook: Codebook, tmp_path: Path, no_hang: None
) -> None:
    output = tmp_path / "codebook.json"
    os.mkfifo(output)

    with pytest.raises(CommandError) as error:
        export(study, output)

    assert str(error.value) == f"--output {output} is a FIFO; give the path of a regular file or a new one"
    assert error.value.returncode != 0


def test_a_symbolic_link_as_output_is_refused_and_what_it_points_to_is_left_alone(
    study: Study, codebook: Codebook, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere.txt"
    elsewhere.write_text("someone else's file")
    output = tmp_path / "codebook.json"
    output.symlink_to(elsewhere)

    with pytest.raises(CommandError, match="is a symbolic link; give the path of a regular file"):
        export(study, output)

    assert output.is_symlink() and elsewhere.read_text() == "someone else's file"


def test_a_full_disk_is_one_line_and_leaves_the_old_file_and_no_partial_one(
    study: Study, codebook: Codebook, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    output = tmp_path / "codebook.json"
    output.write_text("yesterday's codebook")

    def disk_full(fd: int) -> None:  # the data reached the page cache; the disk refuses it on the flush
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", disk_full)
    with pytest.raises(CommandError) as error:
        export(study, output)

    assert str(error.value) == f"--output {output}: cannot write: No space left on device"
    assert output.read_text() == "yesterday's codebook"
    assert [p.name for p in tmp_path.iterdir()] == ["codebook.json"]


def test_an_existing_regular_file_is_replaced_whole(study: Study, codebook: Codebook, tmp_path: Path) -> None:
    output = tmp_path / "codebook.json"
    output.write_text("x" * 100_000)

    export(study, output)

    assert output.read_text(encoding="utf-8").startswith("{") and "x" * 10 not in output.read_text()
    assert [p.name for p in tmp_path.iterdir()] == ["codebook.json"]
