from __future__ import annotations

from typing import Any

from django.core.management.base import CommandError, CommandParser

from apps.accounts.services import StudyError, create_study
from apps.core.cli import BaseCommand, positive_int


class Command(BaseCommand):
    help = "Create a study: create_study STUDY --name '...' [--overlap 2]"

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug")
        parser.add_argument("--name", required=True)
        parser.add_argument(
            "--overlap", type=positive_int, default=2, help="Annotators per item (k), default 2."
        )
        parser.add_argument("--description", default="")

    def handle(self, *args: Any, **opts: Any) -> None:
        try:
            study = create_study(
                slug=opts["slug"], name=opts["name"], overlap=opts["overlap"], description=opts["description"]
            )
        except StudyError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"Created study {study.slug!r} ({study.name}), overlap {study.overlap}.")
