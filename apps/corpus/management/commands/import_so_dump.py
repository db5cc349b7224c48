from __future__ import annotations

from typing import Any

from django.core.management.base import CommandParser

from apps.corpus.params import SoDumpParams

from ._importing import ImportCommand, add_screening_arguments, existing_file


class Command(ImportCommand):
    help = (
        "Import questions and answers from a Stack Exchange data dump, streamed: "
        "import_so_dump STUDY Posts.xml [--tag T]... [--keyword K]... [--accepted-only]. "
        "The whole file is read before anything is written."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("study", metavar="STUDY")
        parser.add_argument("posts", metavar="Posts.xml")
        add_screening_arguments(parser, tags=True)
        parser.add_argument(
            "--accepted-only", action="store_true", help="Only questions with an accepted answer."
        )
        parser.add_argument(
            "--site-host",
            default="stackoverflow.com",
            help="The site the dump comes from (default stackoverflow.com).",
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        study = self.study(opts["study"])
        # A dump runs to gigabytes: check its first MiB here; the XML parser places a bad byte further on.
        path = existing_file(opts["posts"], check_bytes=1 << 20)
        params = SoDumpParams(
            tags=tuple(opts["tag"]),
            keywords=tuple(opts["keyword"]),
            preset=opts["preset"],
            accepted_only=opts["accepted_only"],
            site_host=opts["site_host"],
            filename=path.name,
        )
        self.run(study, params, upload=path)
