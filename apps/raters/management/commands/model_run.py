"""``model_run STUDY --rater NAME (--round N | --sample K --seed S | --unlabelled) [--limit N]``
(docs/design.md): a model rater's run in the foreground, recorded like one started in the browser
(`raters.runs`), its progress on stderr. Run again after an interruption, it asks only for what it lacks.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandError, CommandParser

from apps.accounts.commands import get_study
from apps.core.cli import BaseCommand, positive_int, whole_number
from apps.core.models import JobStatus
from apps.raters.models import ModelRater
from apps.raters.runs import create_model_run, execute_model_run
from apps.raters.services import RaterError

BAD_INPUT = 2


class Command(BaseCommand):
    help = (
        "Run a model rater over a round (--round N), a seeded sample (--sample K --seed S) or the items "
        "nobody labelled yet (--unlabelled), at most --limit N items."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("study", help="The study's slug.")
        parser.add_argument("--rater", required=True, metavar="NAME", help="The model rater's name.")
        scope = parser.add_mutually_exclusive_group(required=True)
        scope.add_argument("--round", type=positive_int, metavar="N", help="The items of round N.")
        scope.add_argument("--sample", type=positive_int, metavar="K", help="A random sample of K items.")
        scope.add_argument("--unlabelled", action="store_true", help="The items nobody labelled yet.")
        parser.add_argument("--seed", type=whole_number(minimum=0), metavar="S", help="The sample's seed.")
        parser.add_argument("--limit", type=positive_int, metavar="N", help="At most N items.")

    def handle(self, *args: Any, **opts: Any) -> None:
        study = get_study(opts["study"])
        if opts["seed"] is not None and opts["sample"] is None:
            raise CommandError("--seed applies to --sample K", returncode=BAD_INPUT)
        rater = ModelRater.objects.filter(study=study, name=opts["rater"]).first()
        if rater is None:
            known = ", ".join(ModelRater.objects.of_study(study).values_list("name", flat=True)) or "none"
            message = f"{study.slug}: no model rater named {opts['rater']!r} (raters: {known})"
            raise CommandError(message, returncode=BAD_INPUT)
        try:
            run = create_model_run(
                study,
                rater,
                round_number=opts["round"],
                sample_size=opts["sample"],
                seed=opts["seed"],
                unlabelled=opts["unlabelled"],
                limit=opts["limit"],
                actor=None,
            )
        except RaterError as exc:
            raise CommandError(f"{study.slug}: {exc}", returncode=BAD_INPUT) from None
        run = execute_model_run(run, echo=lambda line: self.stderr.write(line))
        if run.status == JobStatus.FAILED:
            raise CommandError(f"{study.slug}: run #{run.pk} failed: {run.error or run.message}")
        tokens = f"{run.input_tokens} input and {run.output_tokens} output tokens"
        cost = f", cost {run.cost:.4f}" if run.cost is not None else ""
        self.stdout.write(f"Run #{run.pk} {run.status}: {run.message}; {tokens}{cost}.")
