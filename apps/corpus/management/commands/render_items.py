from __future__ import annotations

import sys
from typing import Any

from django.core.management.base import CommandParser

from apps.corpus.models import Item
from apps.corpus.services import render_pending

from ._importing import ImportCommand


class Command(ImportCommand):
    help = (
        "Render the study's items not rendered yet (bodies and comments to sanitized HTML): "
        "render_items STUDY [--all]. "
        "Imports do this themselves; use it after an interrupted import or a renderer upgrade."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("study", metavar="STUDY")
        parser.add_argument(
            "--all", action="store_true", help="Render every item again, not only pending ones."
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        study = self.study(opts["study"])
        if opts["all"]:
            Item.objects.in_study(study).update(rendered_at=None)
        interactive = sys.stderr.isatty()
        count = render_pending(
            study, echo=lambda line: self.stderr.write(line, ending="\r" if interactive else "\n")
        )
        if interactive:
            self.stderr.write("")
        self.stdout.write(f"Rendered {count} item(s) of {study.slug!r}.")
