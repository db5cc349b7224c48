"""``import_labels STUDY FILE.csv [--decisions] [--round N] [--allow-extra] [--phase discussed]``
(docs/design.md §4, labels §5).

Plain mode stores annotators' labels (`annotation.services.import_annotations`); each changed annotation
is consolidated as if submitted in the browser. ``--round N`` is the round of rows without a ``round``
column (a label for an item in no round is refused without it); ``--allow-extra`` accepts labels by more
annotators than the round's overlap (refused otherwise) and counts them. With ``--decisions`` the rows
are gold decisions (`adjudication.services.import_decisions`, provenance ``imported``). With ``--phase
discussed`` the rows revise labels already submitted, during a revealed round's discussion (refused by
row before the reveal, after the discussion, on a decided item or an assignment the annotator does not
hold). Either way the file is checked whole first: any problem is reported by row, field and value, the
command exits non-zero and nothing is written.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from django.core.management.base import CommandError, CommandParser

from apps.accounts.commands import get_study
from apps.adjudication.services import import_decisions
from apps.annotation.label_file import LabelFileError, parse_labels_csv
from apps.annotation.services import ImportLabelsError, import_annotations
from apps.core.cli import BaseCommand, positive_int
from apps.core.commands import file_error
from apps.core.files import FileReadError, read_text


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
        parser.add_argument(
            "--round",
            dest="round_number",
            type=positive_int,
            default=None,
            metavar="N",
            help="The round of the rows that have no 'round' column (created if missing).",
        )
        parser.add_argument(
            "--phase",
            choices=["blind", "discussed"],
            default="blind",
            help="discussed: the rows revise labels already submitted, in a revealed round's discussion.",
        )
        parser.add_argument(
            "--allow-extra",
            action="store_true",
            help="Accept labels by more annotators than the round's overlap (counted in the summary).",
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        study = get_study(opts["study"])
        path = Path(opts["file"])
        try:
            text = read_text(path)
        except FileReadError as exc:
            raise file_error(exc) from None
        decisions = bool(opts["decisions"])
        round_number: int | None = opts["round_number"]
        if decisions and (round_number is not None or opts["allow_extra"]):
            flag = "--round" if round_number is not None else "--allow-extra"
            raise CommandError(
                f"{flag} applies to annotators' labels, not to --decisions (use a 'round' column)."
            )
        discussed = opts["phase"] == "discussed"
        if decisions and discussed:
            raise CommandError("--phase discussed applies to annotators' labels, not to --decisions.")
        what = "decisions" if decisions else "revisions" if discussed else "labels"
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
                summary = import_annotations(
                    study, rows, actor=None, round_number=round_number, allow_extra=opts["allow_extra"],
                    revisions=discussed,
                ).summary()  # fmt: skip
        except (LabelFileError, ImportLabelsError) as exc:
            raise CommandError(f"{path}: {what} refused, nothing written.\n{exc}") from exc
        self.stdout.write(f"Imported {what} into {study.slug!r}: {summary}")
