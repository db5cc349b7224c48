from __future__ import annotations

import os
from typing import Any

from django.core.management.base import CommandError, CommandParser

from apps.core.cli import http_url, iso_datetime, positive_int
from apps.corpus.params import GitHubParams, GitHubQueryParams, GitHubRepoParams, GitHubUrlsParams

from ._importing import ImportCommand, add_screening_arguments, existing_file


class Command(ImportCommand):
    help = (
        "Import GitHub issues with their comments: import_github STUDY (--repo OWNER/NAME [--state ...] "
        "[--label L]... [--exclude-label L]... [--since ISO-DATE] | --query SEARCH | --urls FILE) "
        "[--keyword K]... [--no-comments] [--no-links] [--limit N] [--api-url URL]. "
        "The token is read from GITHUB_TOKEN."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("study", metavar="STUDY")
        source = parser.add_mutually_exclusive_group(required=True)
        source.add_argument("--repo", metavar="OWNER/NAME", help="Every issue of one repository.")
        source.add_argument(
            "--query", metavar="SEARCH", help="A GitHub issue search (at most 1,000 results)."
        )
        source.add_argument("--urls", metavar="FILE", help="A file of issue URLs, one per line, to fetch.")
        parser.add_argument(
            "--state", choices=["open", "closed", "all"], default=None, help="With --repo; default all."
        )
        parser.add_argument(
            "--label",
            action="append",
            default=[],
            metavar="L",
            help="With --repo: issues with all these labels.",
        )
        parser.add_argument(
            "--exclude-label",
            action="append",
            default=[],
            metavar="L",
            help="Skip issues with this label (* wildcards).",
        )
        parser.add_argument(
            "--since", type=iso_datetime, default=None, metavar="ISO-DATE", help="With --repo: updated since."
        )
        add_screening_arguments(parser)
        parser.add_argument("--no-comments", action="store_true", help="Do not fetch comments.")
        parser.add_argument(
            "--no-links",
            action="store_true",
            help="Do not read timelines: no linked pull requests or commits (fix evidence).",
        )
        parser.add_argument(
            "--limit", type=positive_int, default=None, metavar="N", help="Import at most N issues."
        )
        parser.add_argument(
            "--api-url",
            default="https://api.github.com",
            type=http_url,
            metavar="URL",
            help="API root (Enterprise, replay).",
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        study = self.study(opts["study"])
        if not opts["repo"] and (opts["state"] or opts["label"] or opts["since"]):
            raise CommandError(
                "--state, --label and --since go with --repo (write them into the --query instead)"
            )
        upload = existing_file(opts["urls"]) if opts["urls"] else ""
        common: dict[str, Any] = {
            "exclude_labels": tuple(opts["exclude_label"]),
            "keywords": tuple(opts["keyword"]),
            "preset": opts["preset"],
            "no_comments": opts["no_comments"],
            "no_links": opts["no_links"],
            "limit": opts["limit"],
            "api_url": opts["api_url"],
        }
        params: GitHubParams
        if opts["repo"]:
            params = GitHubRepoParams(
                repo=opts["repo"],
                state=opts["state"] or "all",
                labels=tuple(opts["label"]),
                since=opts["since"].isoformat() if opts["since"] else "",
                **common,
            )
        elif opts["query"]:
            params = GitHubQueryParams(query=opts["query"], **common)
        else:
            params = GitHubUrlsParams(**common)  # the URLs are the file's, read when the job runs
        if not os.environ.get("GITHUB_TOKEN"):
            self.stderr.write("GITHUB_TOKEN is not set: GitHub allows 60 unauthenticated requests an hour.")
        self.run(study, params, upload=upload)
