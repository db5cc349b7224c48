from __future__ import annotations

from typing import Any

from django.core.management.base import CommandError, CommandParser

from apps.core.cli import http_url, positive_int
from apps.corpus.params import HYDRATE_SOURCES, HydrateParams

from ._importing import ImportCommand


class Command(ImportCommand):
    help = (
        "Fetch the title, body and comments or answers of the study's URL-only items from their sources: "
        "hydrate STUDY [--source github|stackexchange|gitlab|jira] [--limit N] [--api-url URL]. GitHub "
        "issues by URL, Stack Overflow questions 100 ids per call, GitLab and Jira issues from the instances "
        "listed in GITLAB_API_URLS / JIRA_API_URLS (or --api-url). Labels are untouched; a rerun fetches "
        "only what is still URL-only. Tokens as for the importers (GITHUB_TOKEN, STACKEXCHANGE_KEY, "
        "GITLAB_TOKEN, JIRA_TOKEN and JIRA_USER)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("study", metavar="STUDY")
        parser.add_argument(
            "--source", choices=HYDRATE_SOURCES, default="", help="Only items of this source."
        )
        parser.add_argument(
            "--limit", type=positive_int, default=None, metavar="N", help="At most N items this run."
        )
        parser.add_argument(
            "--api-url",
            type=http_url,
            default=None,
            metavar="URL",
            help="With --source: that source's API root for every item (GitHub Enterprise, a replay server).",
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        study = self.study(opts["study"])
        if opts["api_url"] and not opts["source"]:
            raise CommandError("--api-url goes with --source: name the source whose API it is")
        params = HydrateParams(source=opts["source"], limit=opts["limit"], api_url=opts["api_url"] or "")
        self.run(study, params)
