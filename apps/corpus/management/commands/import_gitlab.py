from __future__ import annotations

import os
from typing import Any

from django.core.management.base import CommandError, CommandParser

from apps.core.cli import http_url, iso_datetime, positive_int
from apps.corpus.params import GITLAB_API, GitLabParams

from ._importing import ImportCommand, add_screening_arguments, existing_file


class Command(ImportCommand):
    help = (
        "Import GitLab issues with their notes and merge requests: import_gitlab STUDY (--project GROUP/NAME "
        "[--state opened|closed|all] [--label L]... [--since ISO-DATE] | --urls FILE) [--keyword K]... "
        "[--no-comments] [--no-links] [--limit N] [--api-url URL]. The token is read from GITLAB_TOKEN."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("study", metavar="STUDY")
        source = parser.add_mutually_exclusive_group(required=True)
        source.add_argument("--project", metavar="GROUP/NAME", help="Every issue of one project.")
        source.add_argument("--urls", metavar="FILE", help="A file of issue URLs, one per line, to fetch.")
        parser.add_argument(
            "--state", choices=["opened", "closed", "all"], default=None, help="With --project."
        )
        parser.add_argument(
            "--label", action="append", default=[], metavar="L", help="With --project: issues with all these."
        )
        parser.add_argument(
            "--since",
            type=iso_datetime,
            default=None,
            metavar="ISO-DATE",
            help="With --project: updated since.",
        )
        add_screening_arguments(parser)
        parser.add_argument("--no-comments", action="store_true", help="Do not fetch notes.")
        parser.add_argument("--no-links", action="store_true", help="No merge requests (fix evidence).")
        parser.add_argument("--limit", type=positive_int, default=None, metavar="N", help="At most N issues.")
        parser.add_argument(
            "--api-url",
            default=GITLAB_API,
            type=http_url,
            metavar="URL",
            help="API root (self-managed).",
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        study = self.study(opts["study"])
        if not opts["project"] and (opts["state"] or opts["label"] or opts["since"]):
            raise CommandError("--state, --label and --since go with --project")
        params = GitLabParams(
            project=opts["project"] or "",
            state=opts["state"] or "all",
            labels=tuple(opts["label"]),
            since=opts["since"].isoformat() if opts["since"] else "",
            no_comments=opts["no_comments"],
            no_links=opts["no_links"],
            limit=opts["limit"],
            api_url="" if opts["api_url"] == GITLAB_API else opts["api_url"],
            preset=opts["preset"],
            keywords=tuple(opts["keyword"]),
        )
        upload = existing_file(opts["urls"]) if opts["urls"] else ""
        if not os.environ.get("GITLAB_TOKEN"):
            self.stderr.write("GITLAB_TOKEN is not set: only public projects can be read.")
        self.run(study, params, upload=upload)
