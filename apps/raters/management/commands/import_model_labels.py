"""``import_model_labels STUDY FILE.csv --rater NAME`` (docs/design.md): a model's labels made elsewhere
(``item,dimension,label[,finding][,sample][,round]``, `raters.label_file`). Creates an imported rater
when ``NAME`` is missing. The file is checked whole first: every problem is reported with its row, field
and value, the command exits with status 2 and nothing is written.
"""

from __future__ import annotations

import sys
from typing import Any

from django.core.management.base import CommandError, CommandParser

from apps.accounts.commands import get_study
from apps.core.cli import BaseCommand
from apps.core.commands import file_error, input_file
from apps.core.files import FileReadError, read_text
from apps.raters.label_file import LabelFileError, parse_model_labels
from apps.raters.services import RaterError, import_model_labels

BAD_INPUT = 2


class Command(BaseCommand):
    help = (
        "Import a model's labels (item,dimension,label[,finding][,sample][,round]) as the answers of a "
        "model rater, created as an imported rater if missing. All or nothing."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("study", help="The study's slug.")
        parser.add_argument("file", help="The labels CSV file (UTF-8).")
        parser.add_argument("--rater", required=True, metavar="NAME", help="The model rater's name.")

    def handle(self, *args: Any, **opts: Any) -> None:
        study = get_study(opts["study"])
        path = input_file(opts["file"])
        try:
            text = read_text(path)
        except FileReadError as exc:
            raise file_error(exc) from None
        print(f"Reading {path} ...", file=sys.stderr)
        try:
            answers = parse_model_labels(text)
            print(f"Checking and importing {len(answers)} answer(s) ...", file=sys.stderr)
            result = import_model_labels(study, answers, opts["rater"], actor=None)
        except LabelFileError as exc:
            raise CommandError(f"{path}: {exc}", returncode=BAD_INPUT) from None
        except RaterError as exc:
            raise CommandError(f"{study.slug}: {exc}", returncode=BAD_INPUT) from None
        self.stdout.write(result.summary())
