"""Exports: validate the options, record an `ExportJob`, write the file, offer it once complete.

One path for every caller. The browser and the API call `submit_export` (the job is queued and a Celery
worker runs `run_export`); ``manage.py export_dataset`` calls `export_in_foreground`, which records the
same job and runs it in the process. `run_export` goes through `core.jobs.run_job`, so status,
progress, heartbeat and errors look the same whichever way the job ran.

File contract: the file is written under a temporary name in the job's scratch folder
(``settings.EXPORT_ROOT/<study slug>/.job-<id>/``, `scratch_dir`), its SHA-256 computed, then atomically
renamed (`os.replace`) to its final name beside it; only then are `file_path` (relative to EXPORT_ROOT),
`file_size` and `sha256` stored, in the same write that marks the job *succeeded*. A job is downloadable
only when it succeeded and has a checksum (`is_downloadable`), so a half-written file is never offered.
Every temporary file of a job, openpyxl's sheet stream included, lives in that folder: a failed write
removes it; a worker killed half-way leaves it, and it is removed when the job runs again or is resent
as stalled (`discard_scratch`, the export kind's clean-up in `core.jobs`).

Memory is bounded: records are read in chunks (`rows.StudyReader`) and each chunk is written and
dropped. `stream_csv` serves a small study's CSV straight to the browser (`StreamingHttpResponse`)
without a job.

CSV and JSON are written row by row (`tables.csv_writer`, `json_text.ItemJson`); pandas and openpyxl
are imported only by the XLSX export and the preview, so that a fresh worker process does not pay
about a second importing them for a CSV.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from django.conf import settings
from django.db import transaction

from apps.accounts.models import Study, User
from apps.adjudication.models import Provenance
from apps.annotation.models import Round
from apps.core.jobs import (
    QUEUE_UNAVAILABLE,
    JobFailed,
    JobProgress,
    claim_job,
    enqueue,
    requeue_unsent,
    run_job,
)
from apps.core.models import JobStatus
from apps.core.output import OutputError, copy_to_output
from apps.corpus.models import Source
from apps.taxonomy.index import CodebookIndex

from . import tables
from .counts import CountTable
from .json_text import ItemJson
from .models import ExportFormat, ExportJob
from .rows import DEFAULT_CHUNK_SIZE, ExportOptions, StudyReader, gold_count_tables

FORMATS: tuple[str, ...] = tuple(ExportFormat.values)
EXTENSIONS = {"csv": "csv", "json": "json", "jsonl": "jsonl", "xlsx": "xlsx", "zip": "zip"}
CONTENT_TYPES = {
    "csv": "text/csv; charset=utf-8",
    "json": "application/json",
    "jsonl": "application/x-ndjson",
    "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "zip": "application/zip",
}
STREAMABLE = ("csv",)
DEFAULT_STREAM_MAX_ITEMS = 20_000
EXPORT_JOB_FIELDS = ("file_path", "file_size", "sha256", "row_count", "codebook_version")
_HASH_BLOCK = 1 << 20


class ExportOptionError(ValueError):
    """An export request refused before anything is written; the message lists the valid values."""


def source_labels() -> dict[str, str]:
    """Source key → its display name, in the order the model declares them."""
    return {str(value): str(label) for value, label in Source.choices}


def max_level(index: CodebookIndex) -> int:
    """The depth of the deepest category of the active dimensions (0 for an empty codebook)."""
    depths = [index.depth(c) for d in index.dimensions for c in index.tree(d.key, active_only=False)]
    return max(depths, default=0)


def parse_options(
    study: Study,
    *,
    format: str,
    raw: bool = False,
    round: int | None = None,
    provenance: str | None = None,
    source: str | None = None,
    level: int | None = None,
    index: CodebookIndex | None = None,
) -> ExportOptions:
    """Check an export request against the study and return its options, or raise ExportOptionError
    naming the bad value and listing the valid ones (format, round, provenance, source, level).

    The replication package (``zip``) is the whole study: the filters and ``level`` are refused for it.
    """
    if format not in FORMATS:
        raise ExportOptionError(f"unknown format {format!r}; valid formats: {', '.join(FORMATS)}")
    if format == ExportFormat.ZIP and any(v is not None for v in (round, provenance, source, level)):
        raise ExportOptionError(
            "the replication package (--format zip) holds the whole study: --round, --provenance, "
            "--source and --level do not apply to it"
        )
    if provenance is not None and provenance not in Provenance.values:
        raise ExportOptionError(
            f"unknown provenance {provenance!r}; valid provenances: {', '.join(Provenance.values)}"
        )
    if source is not None and source not in Source.values:
        raise ExportOptionError(f"unknown source {source!r}; valid sources: {', '.join(Source.values)}")
    if round is not None:
        numbers = list(Round.objects.filter(study=study).order_by("number").values_list("number", flat=True))
        if round not in numbers:
            known = ", ".join(map(str, numbers)) or "none (the study has no rounds)"
            raise ExportOptionError(f"unknown round {round}; valid rounds: {known}")
    if level is not None:
        deepest = max_level(index or CodebookIndex.for_study(study))
        if not 1 <= level <= deepest:
            valid = ", ".join(map(str, range(1, deepest + 1))) or "none (the codebook is empty)"
            raise ExportOptionError(f"level {level} is out of range; valid levels: {valid}")
    return ExportOptions(
        format=format, raw=raw, round=round, provenance=provenance, source=source, level=level
    )


def options_of(job: ExportJob) -> ExportOptions:
    return ExportOptions.from_json(job.format, dict(job.options or {}))


# --- Jobs ---------------------------------------------------------------------------------------------


def create_export(study: Study, options: ExportOptions, *, user: User | None = None) -> ExportJob:
    """Record a queued export job (options as validated by `parse_options`)."""
    return ExportJob.objects.create(
        study=study,
        created_by=user,
        format=options.format,
        options=options.as_json(),
        status=JobStatus.QUEUED,
    )


def start_export(job: ExportJob) -> None:
    """Queue the job for a Celery worker once the surrounding transaction commits. With the broker down
    the job stays queued with the message QUEUE_UNAVAILABLE (`core.jobs.enqueue`)."""
    from .tasks import export_dataset_task  # tasks import this module

    transaction.on_commit(lambda: enqueue(export_dataset_task, job))


def resend_export(job: ExportJob) -> bool:
    """Send a queued export the broker never took again (the page does so while it polls); True when it
    went. Refreshes `job`."""
    from .tasks import export_dataset_task

    if job.status != JobStatus.QUEUED or job.message != QUEUE_UNAVAILABLE:
        return False
    sent = requeue_unsent(ExportJob, export_dataset_task, pks=[job.pk]) > 0
    job.refresh_from_db()
    return sent


def submit_export(study: Study, options: ExportOptions, *, user: User | None = None) -> ExportJob:
    """The browser and API path: record the job and queue it."""
    with transaction.atomic():
        job = create_export(study, options, user=user)
        start_export(job)
    return job


def export_in_foreground(
    study: Study,
    options: ExportOptions,
    *,
    user: User | None = None,
    echo: Callable[[str], None] | None = None,
    output: Path | None = None,
) -> ExportJob:
    """The command-line path: record the job exactly as the browser would, then run it here. With
    `output`, the finished file is also copied there (`core.output.copy_to_output`) as part of the job:
    when that copy fails the job fails, with the one-line reason, and keeps no file."""
    job = create_export(study, options, user=user)
    claimed = claim_job(ExportJob, job.pk, task_id="foreground")
    if claimed is None:  # nobody else knows this fresh job's id
        raise RuntimeError(f"export job {job.pk} was claimed by someone else")
    return run_export(claimed, echo=echo, output=output)


def export_root() -> Path:
    return Path(settings.EXPORT_ROOT)


def scratch_dir(job: ExportJob) -> Path:
    """The folder holding every temporary file of job `job` while it writes (module docstring)."""
    return export_root() / job.study.slug / f".job-{job.pk}"


def discard_scratch(job: ExportJob) -> None:
    """Remove the job's temporary files (a failed or killed run's); the finished file is not among them."""
    shutil.rmtree(scratch_dir(job), ignore_errors=True)


def file_name(job: ExportJob) -> str:
    """The download name: ``<study>-export-<job>.<ext>`` (``-replication-package`` for the zip)."""
    kind = "replication-package" if job.format == ExportFormat.ZIP else "export"
    return f"{job.study.slug}-{kind}-{job.pk}.{EXTENSIONS[job.format]}"


def is_downloadable(job: ExportJob) -> bool:
    """Succeeded, checksummed, and its file still where the job says."""
    if job.status != JobStatus.SUCCEEDED or not job.sha256 or not job.file_path:
        return False
    path = stored_path(job)
    return path is not None and path.is_file()


def stored_path(job: ExportJob) -> Path | None:
    """The job's file under EXPORT_ROOT, or None when its recorded path leaves EXPORT_ROOT (it never
    comes from a user, but a tampered row must not serve another file)."""
    if not job.file_path:
        return None
    root = export_root().resolve()
    path = (root / job.file_path).resolve()
    return path if path.is_relative_to(root) else None


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(_HASH_BLOCK):
            digest.update(block)
    return digest.hexdigest()


@dataclass(frozen=True)
class Written:
    """What writing a dataset produced: data rows (CSV/XLSX rows, JSON objects) and items."""

    rows: int
    items: int


def run_export(
    job: ExportJob, *, echo: Callable[[str], None] | None = None, output: Path | None = None
) -> ExportJob:
    """Run export job `job` to its end: write the file (module docstring), record where and its checksum;
    with `output`, copy it there too (`export_in_foreground`).

    An `output` that cannot be written (permission, full disk, read-only file system) ends the job
    *failed* with a one-line reason (an expected failure), and no temporary or final file is left.

    Rerunning a job (a Celery message redelivered after its worker died) writes a fresh file and
    replaces the old one: exports only read the database, so a rerun is safe.
    """

    def work(progress: JobProgress) -> str:
        study = job.study
        options = options_of(job)
        directory = export_root() / study.slug
        final = directory / file_name(job)
        scratch = scratch_dir(job)
        discard_scratch(job)  # what an earlier run, killed, left behind
        scratch.mkdir(parents=True)
        temporary = scratch / f"{final.name}.{uuid.uuid4().hex}.part"
        index = CodebookIndex.for_study(study)
        try:
            # Checked again: a round may have been deleted or the codebook changed since the job was queued.
            parse_options(study, **{**options.as_json(), "format": options.format}, index=index)
            written = write_export(study, options, temporary, index=index, progress=progress)
            digest = sha256_of(temporary)
            size = temporary.stat().st_size
            os.replace(temporary, final)
            if output is not None:
                copy_to_output(final, output)
        except ExportOptionError as exc:
            raise JobFailed(str(exc)) from exc
        except OutputError as exc:
            final.unlink(missing_ok=True)
            raise JobFailed(str(exc)) from exc
        finally:
            discard_scratch(job)
        job.file_path = str(final.relative_to(export_root()))
        job.file_size = size
        job.sha256 = digest
        job.row_count = written.rows
        job.codebook_version = index.version
        what = "items" if options.format in ("json", "jsonl") else "rows"
        if options.format == ExportFormat.ZIP:
            return f"Replication package written: {written.items} decided items, {size:,} bytes."
        return f"{written.rows} {what} written ({size:,} bytes)."

    return run_job(job, work, fields=EXPORT_JOB_FIELDS, echo=echo)


def write_export(
    study: Study,
    options: ExportOptions,
    path: Path,
    *,
    index: CodebookIndex | None = None,
    progress: JobProgress | None = None,
    chunk_size: int | None = None,
) -> Written:
    """Write the export `options` asks for to `path` (any existing file is overwritten)."""
    index = index or CodebookIndex.for_study(study)
    if options.format == ExportFormat.ZIP:
        from .package import build_package  # package imports this module

        return build_package(study, path, index=index, progress=progress)
    reader = StudyReader(study, index, options, chunk_size=chunk_size or DEFAULT_CHUNK_SIZE)
    if progress is not None:
        progress.set_total(reader.count())
        progress.note("Writing the dataset…")
    dimensions = [d.key for d in index.all_dimensions]
    if options.format == ExportFormat.XLSX:
        return _write_xlsx(reader, dimensions, options.raw, path, progress)
    with path.open("w", encoding="utf-8", newline="") as handle:
        if options.format == ExportFormat.CSV:
            return write_csv(reader, dimensions, options.raw, handle, progress)
        return write_json(reader, options.raw, handle, progress, lines=options.format == ExportFormat.JSONL)


def write_csv(
    reader: StudyReader,
    dimensions: list[str],
    raw: bool,
    handle: IO[str],
    progress: JobProgress | None = None,
) -> Written:
    """The CSV dataset, chunk by chunk (the header first, so an empty dataset has it too)."""
    writer = tables.csv_writer(handle)
    writer.writerow(tables.dataset_columns(dimensions, raw=raw))
    cells = tables.DimensionCells(dimensions, escape=True)
    rows = items = 0
    for chunk in reader.chunks():
        lines = list(tables.dataset_rows(chunk, dimensions, raw=raw, escape=True, cells=cells))
        writer.writerows(lines)
        rows += len(lines)
        items += len(chunk)
        if progress is not None:
            progress.advance(len(chunk))
    return Written(rows, items)


def write_json(
    reader: StudyReader,
    raw: bool,
    handle: IO[str],
    progress: JobProgress | None = None,
    *,
    lines: bool = False,
) -> Written:
    """JSON (an array, one item object per line) or JSON Lines (one object per line)."""
    items = 0
    line = ItemJson(raw=raw).line
    if not lines:
        handle.write("[")
    for chunk in reader.chunks():
        for item in chunk:
            text = line(item)
            if lines:
                handle.write(text + "\n")
            else:
                handle.write(("\n" if items == 0 else ",\n") + text)
            items += 1
        if progress is not None:
            progress.advance(len(chunk))
    if not lines:
        handle.write("\n]\n" if items else "]\n")
    return Written(items, items)


def _write_xlsx(
    reader: StudyReader, dimensions: list[str], raw: bool, path: Path, progress: JobProgress | None
) -> Written:
    import openpyxl
    from openpyxl.worksheet import _writer as sheet_writer

    # write_only keeps memory flat: rows go to a temporary XML stream, not a cell tree. openpyxl puts that
    # stream in the system's temporary folder, where a killed worker would leave it for good; it goes
    # beside `path` instead, in the job's scratch folder (what WriteOnlyWorksheet._get_writer does, with
    # `out` given; openpyxl removes the stream after `save`, and from ALL_TEMP_FILES).
    book = openpyxl.Workbook(write_only=True)
    sheet = book.create_sheet("dataset")
    stream = str(path.with_name(path.name + ".sheet.xml"))
    sheet_writer.ALL_TEMP_FILES.append(stream)
    sheet._writer = sheet_writer.WorksheetWriter(sheet, out=stream)
    sheet._writer.write_top()
    try:
        sheet.append(tables.dataset_columns(dimensions, raw=raw))
        rows = items = 0
        for chunk in reader.chunks():
            frame = tables.dataset_frame(chunk, dimensions, raw=raw)
            for row in tables.xlsx_rows(frame):
                sheet.append(row)
            rows += len(frame)
            items += len(chunk)
            if progress is not None:
                progress.advance(len(chunk))
        book.save(path)
    finally:  # a failed write: the stream goes now, not when the worker process exits
        if stream in sheet_writer.ALL_TEMP_FILES:
            sheet_writer.ALL_TEMP_FILES.remove(stream)
            Path(stream).unlink(missing_ok=True)
    return Written(rows, items)


# --- Reads for the page -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Preview:
    columns: list[str]
    rows: list[list[str]]
    items: int


def preview(study: Study, options: ExportOptions, *, limit: int = 10) -> Preview:
    """The first `limit` rows of the CSV table the options describe, and how many items it holds."""
    import pandas as pd

    index = CodebookIndex.for_study(study)
    reader = StudyReader(study, index, options, chunk_size=limit)
    dimensions = [d.key for d in index.all_dimensions]
    first = next(reader.chunks(), [])
    frame = tables.dataset_frame(first, dimensions, raw=options.raw).head(limit)
    rows = [["" if pd.isna(v) else str(v) for v in row] for row in frame.itertuples(index=False, name=None)]
    return Preview(list(frame.columns), rows, reader.count())


def count_tables(study: Study) -> list[CountTable]:
    """The taxonomy count tables of the current decisions (what taxonomy_counts.md holds)."""
    return gold_count_tables(study, CodebookIndex.for_study(study), source_labels())


def stream_max_items() -> int:
    return int(getattr(settings, "EXPORT_STREAM_MAX_ITEMS", DEFAULT_STREAM_MAX_ITEMS))


def stream_csv(study: Study, options: ExportOptions, *, chunk_size: int = 500) -> Iterator[str]:
    """The CSV dataset as text pieces for a StreamingHttpResponse (one piece per chunk of items).

    Raises ExportOptionError (before anything is streamed) for a format other than CSV or a dataset of
    more than `stream_max_items()` items, which should run as a job instead.
    """
    if options.format not in STREAMABLE:
        raise ExportOptionError(f"only {', '.join(STREAMABLE)} can be streamed; start an export job instead")
    index = CodebookIndex.for_study(study)
    reader = StudyReader(study, index, options, chunk_size=chunk_size)
    total = reader.count()
    if total > stream_max_items():
        raise ExportOptionError(
            f"{total} items are too many to stream (limit {stream_max_items()}); start an export job instead"
        )
    dimensions = [d.key for d in index.all_dimensions]

    def pieces() -> Iterator[str]:
        buffer = io.StringIO()
        writer = tables.csv_writer(buffer)
        writer.writerow(tables.dataset_columns(dimensions, raw=options.raw))
        cells = tables.DimensionCells(dimensions, escape=True)
        for chunk in reader.chunks():
            writer.writerows(
                tables.dataset_rows(chunk, dimensions, raw=options.raw, escape=True, cells=cells)
            )
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
        if buffer.tell():  # an empty dataset: the header alone
            yield buffer.getvalue()

    return pieces()


def options_text(job: ExportJob) -> str:
    """The job's options for people: ``raw, round 2, level 1`` or ``—``."""
    options = options_of(job)
    parts = ["raw labels"] if options.raw else []
    for name in ("round", "provenance", "source", "level"):
        value = getattr(options, name)
        if value is not None:
            parts.append(f"{name} {value}")
    return ", ".join(parts) or "—"


__all__ = [
    "CONTENT_TYPES",
    "FORMATS",
    "ExportOptionError",
    "ExportOptions",
    "Preview",
    "Written",
    "count_tables",
    "create_export",
    "export_in_foreground",
    "file_name",
    "is_downloadable",
    "options_text",
    "parse_options",
    "preview",
    "resend_export",
    "run_export",
    "sha256_of",
    "start_export",
    "stored_path",
    "stream_csv",
    "submit_export",
    "write_export",
]
