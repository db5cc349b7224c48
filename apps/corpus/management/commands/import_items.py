from __future__ import annotations

from typing import Any

from django.core.management.base import CommandParser

from apps.corpus.params import FileParams

from ._importing import ImportCommand, existing_file


class Command(ImportCommand):
    help = (
        "Import items from a CSV, JSON, JSONL or URL-list file: import_items STUDY FILE "
        "[--format csv|json|jsonl|urls]. Every row is checked first; one bad row fails the whole file "
        "and nothing is written. Re-importing updates items and never duplicates them."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("study", metavar="STUDY")
        parser.add_argument("file", metavar="FILE")
        parser.add_argument(
            "--format",
            choices=["csv", "tsv", "json", "jsonl", "urls"],
            default=None,
            help="The file's format; by default taken from its extension (.txt is a URL list).",
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        study = self.study(opts["study"])
        path = existing_file(opts["file"])
        self.run(study, FileParams(format=opts["format"] or "", filename=path.name), upload=path)
