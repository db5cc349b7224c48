from __future__ import annotations

import os
from typing import Any

from django.core.management.base import CommandError, CommandParser

from apps.core.cli import http_url, positive_int
from apps.corpus.params import JiraParams

from ._importing import ImportCommand, add_screening_arguments, existing_file


class Command(ImportCommand):
    help = (
        'Import Jira issues with their comments: import_jira STUDY (--jql "QUERY" --api-url URL | '
        "--file EXPORT.xml|EXPORT.json) [--keyword K]... [--no-links] [--limit N]. A query also reads each "
        "issue's development panel and remote links (fix evidence). Credentials from JIRA_TOKEN (and "
        "JIRA_USER, the account's e-mail, for Jira Cloud)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("study", metavar="STUDY")
        source = parser.add_mutually_exclusive_group(required=True)
        source.add_argument("--jql", metavar="QUERY", help='A JQL search, e.g. "project = MESOS".')
        source.add_argument("--file", metavar="EXPORT", help="A Jira XML (RSS) or JSON export of issues.")
        parser.add_argument(
            "--api-url",
            type=http_url,
            default=None,
            metavar="URL",
            help="The Jira site, e.g. https://issues.apache.org/jira",
        )
        add_screening_arguments(parser)
        parser.add_argument(
            "--no-links", action="store_true", help="No development panel or remote links (fix evidence)."
        )
        parser.add_argument("--limit", type=positive_int, default=None, metavar="N", help="At most N issues.")

    def handle(self, *args: Any, **opts: Any) -> None:
        study = self.study(opts["study"])
        if opts["jql"] and not opts["api_url"]:
            raise CommandError(
                "--jql needs --api-url, the Jira site to search (e.g. https://issues.apache.org/jira)"
            )
        upload = existing_file(opts["file"]) if opts["file"] else ""
        params = JiraParams(
            jql=opts["jql"] or "",
            api_url=opts["api_url"] or "",
            filename=os.path.basename(opts["file"]) if opts["file"] else "",
            limit=opts["limit"],
            preset=opts["preset"],
            keywords=tuple(opts["keyword"]),
            no_links=opts["no_links"],
        )
        if opts["jql"] and not os.environ.get("JIRA_TOKEN"):
            self.stderr.write("JIRA_TOKEN is not set: only public issues can be read.")
        self.run(study, params, upload=upload)
