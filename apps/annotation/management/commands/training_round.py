"""``training_round STUDY --annotators a,b --size K --seed S [--pass-mark P] [--name NAME]`` (docs/design.md
§4, docs/quality.md): a new training round (the study's next number) giving each annotator K gold items;
after each submission they see the gold answer. With a pass mark (percent), the study's other rounds stay
locked for an annotator until their score reaches it. Refused, naming why (exit status 1, nothing written).
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandError, CommandParser

from apps.accounts.commands import get_study
from apps.annotation.services import AnnotationError
from apps.annotation.services.gold import create_training_round
from apps.core.cli import BaseCommand, positive_int


class Command(BaseCommand):
    help = "Create a training round of gold items, with an optional pass mark that unlocks the real rounds."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("study", metavar="STUDY")
        parser.add_argument("--annotators", required=True, metavar="a,b")
        parser.add_argument("--size", type=positive_int, required=True, metavar="K")
        parser.add_argument("--seed", type=int, required=True, metavar="S")
        parser.add_argument("--pass-mark", type=int, metavar="P", help="percent, 1 to 100")
        parser.add_argument("--name", default="")

    def handle(self, *args: Any, **opts: Any) -> None:
        study = get_study(opts["study"])
        names = [n.strip() for n in opts["annotators"].split(",") if n.strip()]
        try:
            result = create_training_round(
                study, names, opts["size"], seed=opts["seed"], pass_mark=opts["pass_mark"], name=opts["name"]
            )
        except AnnotationError as exc:
            raise CommandError(f"{study.slug}: {exc}") from exc
        mark = f"pass mark {result.round.pass_mark} %" if result.round.pass_mark else "no pass mark"
        self.stdout.write(
            f"{result.round} (round {result.round.number}) of {study.slug}: {opts['size']} gold item(s) "
            f"each for {', '.join(result.seeded)}; {mark}."
        )
