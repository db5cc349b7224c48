"""``import_labels STUDY FILE.csv [--decisions]`` (DESIGN.md §4, labels format §5).

Plain mode stores annotators' labels (`annotation.services.import_annotations`); each changed annotation
is consolidated as if submitted in the browser. With ``--decisions`` the rows are gold decisions
(`adjudication.services.import_decisions`, provenance ``imported``). Either way the file is checked whole
first: any problem is reported by row, field and value, the command exits non-zero and nothing is written.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from django.core.management.base import CommandError, CommandParser

from apps.adjudication.services import import_decisions
from apps.annotation.label_file import LabelFileError, parse_labels_csv
from apps.annotation.services import ImportLabelsError, import_annotations
from apps.core.cli import BaseCommand
from apps.core.commands import get_study


class Command(BaseCommand):
    help = (
        "Import a labels CSV (item,annotator,dimension,label[,finding][,round][,memo]) into a study: "
        "annotators' labels, or with --decisions gold decisions (provenance 'imported'). All or nothing."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("study", help="The study's slug.")
        parser.add_argument("file", help="The labels CSV file (UTF-8).")
        parser.add_argument(
            "--decisions",
            action="store_true",
            help="The rows are gold decisions; the annotator column may be empty.",
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        study = get_study(opts["study"])
        path = Path(opts["file"])
        try:
            text = path.read_text(encoding="utf-8-sig")
        except FileNotFoundError:
            raise CommandError(f"{path}: no such file.") from None
        except IsADirectoryError:
            raise CommandError(f"{path}: is a directory, not a labels CSV file.") from None
        except UnicodeDecodeError as exc:
            raise CommandError(f"{path}: not UTF-8 text (byte {exc.start}); save the CSV as UTF-8.") from None
        except OSError as exc:
            raise CommandError(f"{path}: cannot read it ({exc.strerror}).") from None
        decisions = bool(opts["decisions"])
        what = "decisions" if decisions else "labels"
        print(f"Reading {path} ...", file=sys.stderr)
        try:
            rows = parse_labels_csv(text, decisions=decisions)
            print(f"Checking and importing {len(rows)} finding(s) as {what} ...", file=sys.stderr)
            if decisions:
                done = import_decisions(study, rows, actor=None)
                summary = (
                    f"{done.items} item(s): {done.created} decision(s) created "
                    f"({done.replaced} replacing a different one), {done.unchanged} unchanged."
                )
            else:
                summary = import_annotations(study, rows, actor=None).summary()
        except (LabelFileError, ImportLabelsError) as exc:
            raise CommandError(f"{path}: {what} refused, nothing written.\n{exc}") from exc
        self.stdout.write(f"Imported {what} into {study.slug!r}: {summary}")
