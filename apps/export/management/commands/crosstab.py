"""``crosstab STUDY --rows KEY [--rows-level D] --cols KEY|source|round|FIELD [--cols-level D]
[--labels gold|USERNAME] --format csv|json|md|tex`` (docs/cli.md, docs/paper.md)."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import CommandError, CommandParser

from apps.accounts.commands import get_study
from apps.core.cli import BaseCommand, positive_int
from apps.export.paper import crosstab as ct
from apps.export.paper import data


class Command(BaseCommand):
    help = (
        "Cross-tabulate the findings by a dimension (rows) and a dimension or an item field (columns), "
        "over the current decisions or one annotator's labels."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("study", metavar="STUDY")
        parser.add_argument("--rows", required=True, metavar="KEY")
        parser.add_argument("--rows-level", type=positive_int, metavar="D")
        parser.add_argument("--cols", required=True, metavar="KEY|source|round|FIELD")
        parser.add_argument("--cols-level", type=positive_int, metavar="D")
        parser.add_argument("--labels", default=data.GOLD, metavar="gold|USERNAME")
        parser.add_argument("--format", required=True, choices=("csv", "json", "md", "tex"))

    def handle(self, *args: Any, **opts: Any) -> None:
        study = get_study(opts["study"], reads_only=True)
        try:
            table = data.crosstab(
                study,
                rows=opts["rows"],
                cols=opts["cols"],
                rows_level=opts["rows_level"],
                cols_level=opts["cols_level"],
                labels=opts["labels"],
            )
        except data.PaperError as exc:
            raise CommandError(str(exc)) from None
        fmt = opts["format"]
        if fmt == "json":
            self.stdout.write(json.dumps(table.as_json()))
        elif fmt == "csv":
            self.stdout.write(ct.to_csv(table), ending="")
        elif fmt == "md":
            self.stdout.write(
                ct.to_markdown(table, title=f"{table.row_label} by {table.col_label}"), ending=""
            )
        else:
            self.stdout.write(
                ct.to_latex(table, caption=f"{table.row_label} by {table.col_label}"), ending=""
            )
