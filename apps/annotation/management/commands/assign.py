"""``assign STUDY --round N --annotators a,b,c [--overlap K]`` (docs/design.md §4)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandError, CommandParser

from apps.accounts.commands import get_study
from apps.annotation.services import RoundError, assign_round
from apps.core.cli import BaseCommand, positive_int


class Command(BaseCommand):
    help = (
        "Give each item of a round to exactly K annotators (default: the study's overlap), loads differing "
        "by at most one. Run again after adding items or annotators: only missing and open work changes; "
        "submitted work never moves. The annotators must be members of the study."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("study", metavar="STUDY")
        parser.add_argument("--round", dest="number", type=positive_int, required=True, metavar="N")
        parser.add_argument(
            "--annotators", required=True, metavar="a,b,c", help="Usernames, comma-separated."
        )
        parser.add_argument("--overlap", type=positive_int, default=None, metavar="K")

    def handle(self, *args: Any, **opts: Any) -> None:
        study = get_study(opts["study"])
        names = [name.strip() for name in opts["annotators"].split(",") if name.strip()]
        try:
            result = assign_round(study, opts["number"], names, overlap=opts["overlap"])
        except RoundError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(
            f"{result.round} of {study.slug}: {result.created} assignments created, "
            f"{result.moved} open ones moved."
        )
        for name in sorted(result.loads):
            self.stdout.write(f"  {name}: {result.loads[name]} items ({result.open_loads.get(name, 0)} open)")
