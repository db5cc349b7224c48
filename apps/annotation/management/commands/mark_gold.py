"""``mark_gold STUDY (--items ID,... | --file FILE) [--unmark]`` (docs/design.md §4, docs/quality.md): mark
decided items as gold checks, or unmark them.

Items are named by id or URL (`--items` comma-separated, `--file` one a line; blank lines and lines starting
with ``#`` skipped). All or nothing: an unknown item or one without a decision is refused, naming it (exit
status 1, nothing written).
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandError, CommandParser

from apps.accounts.commands import get_study
from apps.annotation.services.gold import GoldError, items_by_reference, mark_gold, unmark_gold
from apps.core.cli import BaseCommand
from apps.core.commands import input_file


class Command(BaseCommand):
    help = "Mark decided items as gold checks (their decision is the answer), or unmark them with --unmark."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("study", metavar="STUDY")
        which = parser.add_mutually_exclusive_group(required=True)
        which.add_argument("--items", metavar="ID,...", help="item ids or URLs, comma-separated")
        which.add_argument("--file", metavar="FILE", help="a file of item ids or URLs, one a line")
        parser.add_argument("--unmark", action="store_true", help="unmark the items instead")

    def handle(self, *args: Any, **opts: Any) -> None:
        study = get_study(opts["study"])
        if opts["file"]:
            lines = input_file(opts["file"]).read_text(encoding="utf-8-sig").splitlines()
            refs = [line for line in lines if line.strip() and not line.lstrip().startswith("#")]
        else:
            refs = opts["items"].split(",")
        try:
            ids = items_by_reference(study, refs)
            if not ids:
                raise GoldError("no item given")
            if opts["unmark"]:
                self.stdout.write(f"{study.slug}: unmarked {unmark_gold(study, ids)} gold item(s).")
                return
            result = mark_gold(study, ids)
        except GoldError as exc:
            raise CommandError(f"{study.slug}: {exc}") from exc
        self.stdout.write(
            f"{study.slug}: marked {result.marked} gold item(s); {result.already} already were gold items."
        )
