"""``import_study STUDY PACKAGE.zip``: a replication package becomes a new study (docs/cli.md)."""

from __future__ import annotations

import sys
from typing import Any

from django.core.management.base import CommandError, CommandParser

from apps.core.cli import BaseCommand
from apps.core.commands import input_file
from apps.export.package import PackageError, import_study


class Command(BaseCommand):
    help = (
        "Create study STUDY from a replication package made by export_dataset --format zip: items, codebook "
        "(versions and history), rounds, annotations and decisions. The package is checked first "
        "(checksums, codebook, every row); a package with any problem is refused and nothing is written."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("study", metavar="STUDY", help="The slug of the new study.")
        parser.add_argument("package", metavar="PACKAGE.zip")

    def handle(self, *args: Any, **opts: Any) -> None:
        input_file(opts["package"], text=False)
        try:
            result = import_study(
                opts["study"], opts["package"], echo=lambda line: print(line, file=sys.stderr)
            )
        except PackageError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(result.summary())
