"""``annotator_report STUDY [--round N] [--dimension KEY] --format json|csv|text`` (docs/cli.md,
docs/quality.md)."""

from __future__ import annotations

import csv
import json
from typing import Any

from django.core.management.base import CommandError, CommandParser

from apps.accounts.commands import get_study
from apps.core.cli import BaseCommand, positive_int
from apps.quality import report
from apps.quality.reads import ReportError, report_rows


class Command(BaseCommand):
    help = (
        "Per annotator and dimension, per round and over all rounds: accuracy on gold checks, accuracy and "
        "Cohen's kappa against the final decisions, median active seconds per item and the pending rate."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("study", metavar="STUDY")
        parser.add_argument("--round", type=positive_int, metavar="N")
        parser.add_argument("--dimension", metavar="KEY")
        parser.add_argument("--format", required=True, choices=("json", "csv", "text"))

    def handle(self, *args: Any, **opts: Any) -> None:
        study = get_study(opts["study"], reads_only=True)
        try:
            _, rows = report_rows(study, round_number=opts["round"], dimension=opts["dimension"])
        except ReportError as exc:
            raise CommandError(str(exc)) from None
        if opts["format"] == "json":
            self.stdout.write(json.dumps({"annotators": [row.as_json() for row in rows]}))
        elif opts["format"] == "csv":
            writer = csv.DictWriter(self.stdout, fieldnames=report.CSV_FIELDS, lineterminator="\n")
            writer.writeheader()
            writer.writerows(row.as_csv() for row in rows)
        else:
            self.stdout.write(report.text_report(rows) + "\n", ending="")
