from __future__ import annotations

import json
from typing import Any

from django.core.management.base import CommandParser

from apps.accounts.commands import get_study
from apps.adjudication.status import study_status
from apps.core.cli import BaseCommand


class Command(BaseCommand):
    help = "Print a study's counts: study_status STUDY --format json|text"

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug")
        parser.add_argument("--format", choices=["json", "text"], default="text")

    def handle(self, *args: Any, **opts: Any) -> None:
        status = study_status(get_study(opts["slug"], reads_only=True))
        if opts["format"] == "json":
            self.stdout.write(json.dumps(status, sort_keys=False))
            return
        self.stdout.write(f"items                {status['items']}")
        self.stdout.write(f"rounds               {status['rounds']}")
        a = status["assignments"]
        self.stdout.write(f"assignments          {a['open']} open, {a['submitted']} submitted")
        d = status["decisions"]
        self.stdout.write("decisions            " + ", ".join(f"{k} {v}" for k, v in d.items()))
        self.stdout.write(f"disagreements open   {status['disagreements_open']}")
        self.stdout.write(f"codebook version     {status['codebook_version']}")
