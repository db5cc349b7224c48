"""``reveal_round STUDY --round N [--force] [--discussion | --no-discussion]`` (docs/design.md §4): end a
round's blind phase.

Freezes the round's blind record and moves it to discussion (or adjudication, when it does not discuss:
``--discussion`` / ``--no-discussion`` choose for this round, else the round's or the study's setting).
Idempotent: a revealed round is left as it is. A round with open assignments needs ``--force``; the
refusal says how many are open (exit status 1, nothing written).
"""

from __future__ import annotations

import argparse
from typing import Any

from django.core.management.base import CommandError, CommandParser

from apps.accounts.commands import get_study
from apps.annotation.services import RoundError, reveal_round
from apps.core.cli import BaseCommand, positive_int


class Command(BaseCommand):
    help = (
        "Reveal a round: freeze its blind labels for ever as its blind record and show each annotator the "
        "others' labels and memos (discussion, or straight to adjudication). Idempotent; a round with open "
        "assignments needs --force."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("study", metavar="STUDY")
        parser.add_argument("--round", dest="number", type=positive_int, required=True, metavar="N")
        parser.add_argument(
            "--force", action="store_true", help="reveal although some assignments are still open"
        )
        parser.add_argument(
            "--discussion",
            action=argparse.BooleanOptionalAction,
            default=None,
            help="then discussion (or, with --no-discussion, straight to adjudication); default: the round's "
            "or the study's setting",
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        study = get_study(opts["study"])
        try:
            result = reveal_round(study, opts["number"], force=opts["force"], discussion=opts["discussion"])
        except RoundError as exc:
            raise CommandError(f"{study.slug}: {exc}") from exc
        round_ = result.round
        if not result.revealed:
            self.stdout.write(f"{round_} of {study.slug} was already revealed; it is in {round_.phase}.")
            return
        still_open = f"; {result.open} assignment(s) still open" if result.open else ""
        self.stdout.write(
            f"{round_} of {study.slug} revealed: {result.frozen} annotations frozen as its blind record"
            f"{still_open}; now in {round_.phase}."
        )
