"""``seed_gold STUDY --round N --per-annotator K --seed S [--annotators a,b]`` (docs/design.md §4,
docs/quality.md): give each annotator of round N gold checks until they hold K there, placed at random among
their items, indistinguishable from them. Run again, it only tops up. Refused, naming why (exit status 1,
nothing written): an unknown round, a revealed round, too few gold items for someone.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandError, CommandParser

from apps.accounts.commands import get_study
from apps.annotation.services import AnnotationError
from apps.annotation.services.gold import seed_gold
from apps.core.cli import BaseCommand, positive_int


class Command(BaseCommand):
    help = "Seed N gold checks per annotator into a round (decided items marked gold; never in agreement)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("study", metavar="STUDY")
        parser.add_argument("--round", dest="number", type=positive_int, required=True, metavar="N")
        parser.add_argument("--per-annotator", type=int, required=True, metavar="K")
        parser.add_argument("--seed", type=int, required=True, metavar="S")
        parser.add_argument("--annotators", metavar="a,b", help="default: the round's annotators")

    def handle(self, *args: Any, **opts: Any) -> None:
        study = get_study(opts["study"])
        names = (
            [n.strip() for n in opts["annotators"].split(",") if n.strip()] if opts["annotators"] else None
        )
        try:
            result = seed_gold(
                study, opts["number"], opts["per_annotator"], seed=opts["seed"], annotators=names
            )
        except AnnotationError as exc:
            raise CommandError(f"{study.slug}: {exc}") from exc
        added = ", ".join(f"{name} +{n}" for name, n in result.seeded.items())
        self.stdout.write(f"{result.round} of {study.slug}: gold checks seeded ({added}).")
