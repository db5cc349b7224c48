"""``import_tosem_workbook STUDY FILE.xlsx --round N [--annotators A,B] [--skip-unresolved]``

Reads a TOSEM 2023 ``reliability_analysis_roundN.xlsx`` workbook (`annotation.tosem_workbook`, rules in
docs/tosem23-import.md) and stores the annotators' sheets ``label1`` and ``label2`` as the labels of
the two users named by ``--annotators`` (default ``annotator1,annotator2``), through
`annotation.services.import_annotations`: all or nothing, idempotent, consolidated like browser labels.
The ``Final`` sheet holds gold decisions, which ``import_labels --decisions`` imports (e.g. from
``fixtures/tosem23/decisions_roundN.csv``).
"""

from __future__ import annotations

import sys
from typing import Any

from django.core.management.base import CommandError, CommandParser

from apps.accounts.commands import get_study
from apps.annotation.label_file import LabelFileError, group_labels, report
from apps.annotation.services import ImportLabelsError, RoundError, import_annotations, study_members
from apps.annotation.tosem_workbook import (
    TosemLayoutError,
    Vocabulary,
    read_reliability_workbook,
    tosem_synonyms,
)
from apps.core.cli import BaseCommand, positive_int
from apps.core.commands import input_file
from apps.taxonomy.index import CodebookIndex


class Command(BaseCommand):
    help = (
        "Import the annotators' labels of a TOSEM 2023 reliability workbook into round N "
        "(sheets label1 and label2 → --annotators). All or nothing; see docs/tosem23-import.md."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("study", metavar="STUDY")
        parser.add_argument("file", metavar="FILE.xlsx")
        parser.add_argument("--round", dest="number", type=positive_int, required=True, metavar="N")
        parser.add_argument(
            "--annotators",
            default="annotator1,annotator2",
            metavar="A,B",
            help="Usernames for the sheets label1 and label2 (default annotator1,annotator2).",
        )
        parser.add_argument(
            "--skip-unresolved",
            action="store_true",
            help="Import although some cells name no category (they are left out and listed).",
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        study = get_study(opts["study"])
        path = input_file(opts["file"], text=False)
        names = [n.strip() for n in opts["annotators"].split(",")]
        if len(names) != 2 or not all(names):
            raise CommandError(
                f"--annotators needs two usernames, for label1 and label2 (got {opts['annotators']!r})."
            )
        try:
            study_members(study, names)
        except RoundError as exc:
            raise CommandError(f"--annotators: {exc}") from exc
        index = CodebookIndex.for_study(study)
        if not index.dimensions:
            raise CommandError(f"Study {study.slug} has no codebook: load it first (load_codebook).")
        try:
            vocabulary = Vocabulary.from_codebook(index.snapshot(), tosem_synonyms())
            result = read_reliability_workbook(
                path, opts["number"], vocabulary, sheets={"label1": names[0], "label2": names[1]}
            )
        except (TosemLayoutError, ValueError) as exc:
            raise CommandError(f"{path}: {exc}") from exc
        for note in result.notes:
            print(f"note: {note}", file=sys.stderr)
        if result.errors:
            listing = report(result.errors, what="cell")
            if not opts["skip_unresolved"]:
                raise CommandError(
                    f"{path}: some cells name no category; nothing written (add --skip-unresolved to import "
                    f"the rest).\n{listing}"
                )
            print(f"left out:\n{listing}", file=sys.stderr)
        try:
            rows = group_labels(result.rows)
            # The published workbooks leave some cells blank: they are kept as recorded (complete=False),
            # so that the study's agreement is the paper's.
            summary = import_annotations(study, rows, actor=None, complete=False).summary()
        except (LabelFileError, ImportLabelsError) as exc:
            raise CommandError(f"{path}: labels refused, nothing written.\n{exc}") from exc
        self.stdout.write(f"Imported round {opts['number']} of {path.name} into {study.slug!r}: {summary}")
