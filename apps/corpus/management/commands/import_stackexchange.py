from __future__ import annotations

from typing import Any

from django.core.management.base import CommandParser

from apps.core.cli import http_url, positive_int
from apps.corpus.params import StackExchangeParams

from ._importing import ImportCommand, add_screening_arguments


class Command(ImportCommand):
    help = (
        "Import Stack Exchange questions with their answers: import_stackexchange STUDY --tagged TAG... "
        "[--keyword K]... [--accepted-only] [--site stackoverflow] [--limit N] [--api-url URL]. "
        "The application key is read from STACKEXCHANGE_KEY."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("study", metavar="STUDY")
        parser.add_argument(
            "--tagged",
            nargs="+",
            action="extend",
            required=True,
            metavar="TAG",
            help="Questions with any of these tags.",
        )
        parser.add_argument(
            "--match",
            choices=["any", "all"],
            default="any",
            help="any (default): questions with any of the tags; all: with every tag (the API's semantics).",
        )
        add_screening_arguments(parser)
        parser.add_argument(
            "--accepted-only", action="store_true", help="Only questions with an accepted answer."
        )
        parser.add_argument(
            "--site", default="stackoverflow", help="The Stack Exchange site (default stackoverflow)."
        )
        parser.add_argument(
            "--limit", type=positive_int, default=None, metavar="N", help="Import at most N questions."
        )
        parser.add_argument(
            "--api-url",
            default="https://api.stackexchange.com/2.3",
            type=http_url,
            metavar="URL",
            help="API root.",
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        study = self.study(opts["study"])
        params = StackExchangeParams(
            tagged=tuple(opts["tagged"]),
            match=opts["match"],
            keywords=tuple(opts["keyword"]),
            preset=opts["preset"],
            accepted_only=opts["accepted_only"],
            site=opts["site"],
            limit=opts["limit"],
            api_url=opts["api_url"],
        )
        self.run(study, params)
