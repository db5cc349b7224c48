"""``export_dataset STUDY --format csv|json|jsonl|xlsx|zip --output PATH [--raw] [filters]`` (docs/cli.md)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from django.core.management.base import CommandError, CommandParser

from apps.accounts.commands import get_study
from apps.core.cli import BaseCommand, positive_int
from apps.core.models import JobStatus
from apps.core.output import OutputError, check_output_path
from apps.export import services


class Command(BaseCommand):
    help = (
        "Export a study's consolidated dataset (items with a current decision) as CSV, JSON, JSONL or XLSX, "
        "or the whole study as a replication package (zip). Runs as an export job in the foreground and "
        "copies the finished file to --output (a new or regular file; never a link, FIFO or device)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("study", metavar="STUDY")
        parser.add_argument("--format", required=True, choices=services.FORMATS)
        parser.add_argument("--output", required=True, metavar="PATH", help="Where to write the file.")
        parser.add_argument(
            "--raw", action="store_true", help="Add every annotator's labels (and undecided items)."
        )
        parser.add_argument("--round", type=positive_int, metavar="N", help="Only round N.")
        parser.add_argument("--provenance", metavar="P", help="Only decisions of this provenance.")
        parser.add_argument("--source", metavar="S", help="Only items from this source.")
        parser.add_argument(
            "--level",
            type=positive_int,
            metavar="DEPTH",
            help="Cut category paths at this level of the tree (1 = top); default: the full path.",
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        study = get_study(opts["study"])
        output = Path(opts["output"])
        try:
            check_output_path(output)  # refused before any work; checked again before the rename
        except OutputError as exc:
            raise CommandError(str(exc)) from None
        try:
            options = services.parse_options(
                study,
                format=opts["format"],
                raw=opts["raw"],
                round=opts["round"],
                provenance=opts["provenance"],
                source=opts["source"],
                level=opts["level"],
            )
        except services.ExportOptionError as exc:
            raise CommandError(str(exc)) from exc
        try:
            job = services.export_in_foreground(
                study, options, echo=lambda line: print(line, file=sys.stderr), output=output
            )
        except OSError as exc:  # writing under EXPORT_ROOT failed; run_job recorded the job as failed
            raise CommandError(
                f"Export failed: cannot write the export file: {exc.strerror or exc}"
            ) from None
        job.refresh_from_db()
        if job.status != JobStatus.SUCCEEDED:
            raise CommandError(f"Export #{job.pk} failed: {job.error or job.message}")
        self.stdout.write(f"{job.message} Written to {output} (sha256 {job.sha256}).")
