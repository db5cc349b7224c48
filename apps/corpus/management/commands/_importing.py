"""What the import commands share: run the job in the foreground, print progress, fail clearly."""

from __future__ import annotations

import sys
from pathlib import Path

from django.core.management.base import CommandError, CommandParser

from apps.accounts.commands import get_study
from apps.accounts.models import Study
from apps.core.cli import BaseCommand
from apps.core.commands import input_file
from apps.core.models import JobStatus
from apps.corpus.models import ImportJob
from apps.corpus.params import ImportParams
from apps.corpus.screening import PRESETS
from apps.corpus.services import import_in_foreground, screening_rules, summarize


def add_screening_arguments(parser: CommandParser, *, tags: bool = False) -> None:
    parser.add_argument(
        "--keyword",
        action="append",
        default=[],
        metavar="K",
        help="Keep only items whose title or body holds one of these words or phrases (repeatable).",
    )
    if tags:
        parser.add_argument(
            "--tag",
            action="append",
            default=[],
            metavar="T",
            help="Keep only questions with one of these tags.",
        )
    parser.add_argument(
        "--preset",
        default="",
        choices=sorted(PRESETS),
        help="A named screening rule set instead of --keyword (for example the TOSEM 2023 selection).",
    )


def existing_file(text: str, *, check_bytes: int | None = None) -> Path:
    """The text file an import reads, checked first (`core.commands.input_file`: a directory, another
    encoding or bytes that are not UTF-8 exit with status 2 and one line); `check_bytes` limits the
    encoding check to the file's beginning (a dump of many gigabytes)."""
    return input_file(text, check_bytes=check_bytes).resolve()


class ImportCommand(BaseCommand):
    """Base of the import commands: subclasses build (params, upload) from the options."""

    def study(self, slug: str) -> Study:
        study: Study = get_study(slug)
        return study

    def run(self, study: Study, params: ImportParams, upload: Path | str = "") -> ImportJob:
        try:
            screening_rules(params.screening)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        interactive = sys.stderr.isatty()

        def echo(line: str) -> None:
            self.stderr.write(line, ending="\r" if interactive else "\n")

        job = import_in_foreground(study, params, upload=upload, echo=echo)
        if interactive:
            self.stderr.write("")
        if job.status != JobStatus.SUCCEEDED:
            details = [
                f"  {e['where']}: {e.get('field') or ''} {e['message']}".rstrip() for e in job.errors[:10]
            ]
            raise CommandError("\n".join([f"Import #{job.pk} failed: {job.error}", *details]))
        for error in job.errors[:10]:
            self.stderr.write(f"  could not import {error['where']}: {error['message']}")
        seconds = job.duration_seconds or 0.0
        self.stdout.write(f"Import #{job.pk} into {study.slug!r}: {summarize(job)} ({seconds:.1f} s)")
        return job
