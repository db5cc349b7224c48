"""``sample STUDY --round N --size K --seed S [--stratify FIELD]`` (docs/design.md §4)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandError, CommandParser

from apps.accounts.commands import get_study
from apps.annotation.services import RoundError, draw_round
from apps.core.cli import BaseCommand, positive_int, whole_number


class Command(BaseCommand):
    help = (
        "Draw a reproducible sample of items (in no round yet, not screened irrelevant) into a round: "
        "uniform, or stratified by source, tag (first tag) or a metadata key. Same study, same seed, same "
        "sample. The round records seed, method, size and stratify field."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("study", metavar="STUDY")
        parser.add_argument("--round", dest="number", type=positive_int, required=True, metavar="N")
        parser.add_argument("--size", type=positive_int, required=True, metavar="K")
        parser.add_argument("--seed", type=whole_number(), required=True, metavar="S")
        parser.add_argument(
            "--stratify", default="", metavar="FIELD", help="source, tag, or a metadata key (e.g. framework)."
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        study = get_study(opts["study"])
        try:
            result = draw_round(
                study,
                number=opts["number"],
                size=opts["size"],
                seed=opts["seed"],
                stratify_field=opts["stratify"],
            )
        except RoundError as exc:
            raise CommandError(str(exc)) from exc
        round_ = result.round
        how = f"stratified by {round_.stratify_field}" if round_.stratify_field else "uniformly"
        if not result.created:
            self.stdout.write(
                f"{round_} of {study.slug} was already drawn with these parameters; nothing changed."
            )
            return
        self.stdout.write(
            f"Drew {result.drawn} of {result.population} eligible items {how} into {round_} of {study.slug} "
            f"(seed {round_.seed})."
        )
        for label, counts in sorted(round_.params.get("strata", {}).items()):
            self.stdout.write(f"  {label}: {counts['drawn']} of {counts['population']}")
