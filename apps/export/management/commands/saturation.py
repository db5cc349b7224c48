"""``saturation STUDY --dimension KEY [--base 50] [--run 25] [--threshold 0.05] --format json|text``
(docs/cli.md, docs/paper.md)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from django.core.management.base import CommandError, CommandParser

from apps.accounts.commands import get_study
from apps.core.cli import BaseCommand, positive_int
from apps.export.paper import data
from apps.export.paper import saturation as sat


def share(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"must be a share between 0 and 1 such as 0.05, got {text!r}"
        ) from None
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"must be a share between 0 and 1 such as 0.05, got {text!r}")
    return value


class Command(BaseCommand):
    help = (
        "Thematic saturation of one dimension (Guest, Namey and Chen 2020): new categories per item in the "
        "order of first submission, and the item at which saturation is reached."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("study", metavar="STUDY")
        parser.add_argument("--dimension", required=True, metavar="KEY")
        parser.add_argument("--base", type=positive_int, default=sat.DEFAULT_BASE, metavar="B")
        parser.add_argument("--run", type=positive_int, default=sat.DEFAULT_RUN, metavar="R")
        parser.add_argument("--threshold", type=share, default=sat.DEFAULT_THRESHOLD, metavar="T")
        parser.add_argument("--format", required=True, choices=("json", "text"))

    def handle(self, *args: Any, **opts: Any) -> None:
        study = get_study(opts["study"], reads_only=True)
        try:
            result = data.saturation(
                study, opts["dimension"], base=opts["base"], run=opts["run"], threshold=opts["threshold"]
            )
        except data.PaperError as exc:
            raise CommandError(str(exc)) from None
        if opts["format"] == "json":
            self.stdout.write(json.dumps(result.overall.as_json(result.dimension)))
        else:
            self.stdout.write(
                sat.text_report(result.dimension, result.overall, result.per_annotator), ending=""
            )
