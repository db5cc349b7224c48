"""``load_codebook STUDY FILE.json|FILE.yaml [--dry-run]`` (docs/design.md §4)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandError, CommandParser

from apps.accounts.commands import get_study
from apps.core.cli import BaseCommand
from apps.core.commands import input_file
from apps.taxonomy.codebook_spec import CodebookError, format_of
from apps.taxonomy.loading import load_codebook_file
from apps.taxonomy.services import CodebookEditError


class Command(BaseCommand):
    help = (
        "Load a codebook file (JSON or YAML, docs/design.md §5) into a study, creating its codebook if "
        "needed. An edited file is applied as recorded changes (version + 1); the same file twice changes "
        "nothing."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("study", help="The study's slug.")
        parser.add_argument("file", help="A .json, .yaml or .yml codebook file.")
        parser.add_argument("--dry-run", action="store_true", help="Print the changes; write nothing.")

    def handle(self, *args: Any, **opts: Any) -> None:
        study = get_study(opts["study"])
        try:
            format_of(opts["file"])
            input_file(opts["file"])  # a directory or another encoding: one line, exit status 2
            result = load_codebook_file(study, opts["file"], dry_run=opts["dry_run"])
        except CodebookError as exc:
            raise CommandError(f"{opts['file']}: codebook refused, nothing written. {exc}") from exc
        except CodebookEditError as exc:
            raise CommandError(f"{opts['file']}: cannot apply, nothing written. {exc}") from exc
        for line in result.lines():
            self.stdout.write(f"  {line}")
        n = len(result.lines())
        if result.dry_run:
            target = "a new codebook" if result.created else f"version {result.version}"
            if n:
                self.stdout.write(f"Dry run: {n} change(s) would be applied to {target}; nothing written.")
            else:
                self.stdout.write(f"Dry run: no changes to {target}; nothing written.")
        elif result.changed:
            self.stdout.write(f"Codebook of {study.slug!r} now at version {result.version} ({n} change(s)).")
        else:
            state = "created empty" if result.created else "unchanged"
            self.stdout.write(f"Codebook of {study.slug!r} {state}, version {result.version}.")
