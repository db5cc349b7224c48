"""``export_codebook STUDY --format json|yaml|md [--output PATH]``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import CommandError, CommandParser

from apps.accounts.commands import get_study
from apps.core.cli import BaseCommand
from apps.core.output import OutputError, check_output_path, write_output
from apps.taxonomy.loading import EXPORT_FORMATS, export_codebook


class Command(BaseCommand):
    help = (
        "Write a study's active codebook as JSON or YAML (the load_codebook format) or Markdown "
        "(definitions, examples and gold-label counts), to standard output or --output PATH."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("study", help="The study's slug.")
        parser.add_argument("--format", required=True, choices=EXPORT_FORMATS)
        parser.add_argument(
            "--output",
            metavar="PATH",
            help="File to write (default: standard output): a new or regular file, never a link or FIFO.",
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        study = get_study(opts["study"], reads_only=True)
        path = Path(opts["output"]) if opts["output"] else None
        if path is not None:
            try:
                check_output_path(path)  # refused before any work (a FIFO is never opened)
            except OutputError as exc:
                raise CommandError(str(exc)) from None
        text = export_codebook(study, opts["format"])
        if path is None:
            self.stdout.write(text, ending="")
            return
        try:
            write_output(text.encode("utf-8"), path)  # checked again just before the rename
        except OutputError as exc:
            raise CommandError(str(exc)) from None
        self.stderr.write(f"Wrote the codebook of {study.slug!r} ({opts['format']}) to {path}.")
