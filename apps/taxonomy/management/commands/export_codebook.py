"""``export_codebook STUDY --format json|yaml|md [--output PATH]``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import CommandError, CommandParser

from apps.accounts.commands import get_study
from apps.core.cli import BaseCommand
from apps.taxonomy.loading import EXPORT_FORMATS, export_codebook


class Command(BaseCommand):
    help = (
        "Write a study's active codebook as JSON or YAML (the load_codebook format) or Markdown "
        "(definitions, examples and gold-label counts), to standard output or --output PATH."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("study", help="The study's slug.")
        parser.add_argument("--format", required=True, choices=EXPORT_FORMATS)
        parser.add_argument("--output", help="File to write (default: standard output).")

    def handle(self, *args: Any, **opts: Any) -> None:
        study = get_study(opts["study"])
        text = export_codebook(study, opts["format"])
        if not opts["output"]:
            self.stdout.write(text, ending="")
            return
        path = Path(opts["output"])
        if not path.parent.is_dir():
            raise CommandError(f"--output {path}: the folder {path.parent} does not exist.")
        try:
            path.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise CommandError(f"--output {path}: cannot write: {exc.strerror}") from exc
        self.stderr.write(f"Wrote the codebook of {study.slug!r} ({opts['format']}) to {path}.")
