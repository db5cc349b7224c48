"""``export_dataset STUDY --format csv|json|jsonl|xlsx|zip --output PATH [--raw] [filters]``, and
``export_dataset STUDY --format paper --output DIR`` (the paper folder, docs/paper.md) (docs/cli.md)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from django.core.management.base import CommandError, CommandParser

from apps.accounts.commands import get_study
from apps.accounts.models import Study
from apps.core.cli import BaseCommand, positive_int
from apps.core.models import JobStatus
from apps.core.output import OutputError, check_output_path
from apps.export import services
from apps.export.paper.data import PaperError
from apps.export.paper.facts import write_paper

PAPER = "paper"


class Command(BaseCommand):
    help = (
        "Export a study's consolidated dataset (items with a current decision) as CSV, JSON, JSONL or XLSX, "
        "or the whole study as a replication package (zip). Runs as an export job in the foreground and "
        "copies the finished file to --output (a new or regular file; never a link, FIFO or device)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("study", metavar="STUDY")
        parser.add_argument("--format", required=True, choices=(*services.FORMATS, PAPER))
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
        study = get_study(opts["study"], reads_only=True)
        output = Path(opts["output"])
        if opts["format"] == PAPER:
            self._paper(study, output)
            return
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

    def _paper(self, study: Study, output: Path) -> None:
        """methods.md, methods.tex, references.bib, figures/ and tables/ into the folder `output` (made if
        missing; an existing folder must be empty, so that no stale figure stays beside new ones)."""
        if output.exists() and (not output.is_dir() or output.is_symlink()):
            raise CommandError(f"--output: {output} exists and is not a folder; give a new or empty folder")
        if output.is_dir() and any(output.iterdir()):
            raise CommandError(f"--output: the folder {output} is not empty; give a new or empty folder")
        try:
            names = write_paper(study, output)
        except PaperError as exc:
            raise CommandError(str(exc)) from None
        except OSError as exc:
            raise CommandError(f"cannot write the paper folder {output}: {exc.strerror or exc}") from None
        self.stdout.write(f"Wrote {len(names)} files to {output}: methods.md, methods.tex, references.bib, "
                          f"{sum(n.startswith('figures/') for n in names)} figure files, "
                          f"{sum(n.startswith('tables/') for n in names)} table files.")  # fmt: skip
