from __future__ import annotations

from typing import Any

from django.core.management.base import CommandError, CommandParser

from apps.accounts.commands import get_study
from apps.accounts.models import Role
from apps.accounts.services import StudyError, UnknownUser, set_member_role
from apps.core.cli import BaseCommand


class Command(BaseCommand):
    help = (
        "Give a user a role in a study: "
        "add_member STUDY USERNAME --role annotator|lead|owner [--create --password P]"
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug")
        parser.add_argument("username")
        parser.add_argument("--role", required=True, choices=Role.values)
        parser.add_argument("--create", action="store_true", help="Create the user if missing.")
        parser.add_argument("--password", help="Password for a user created with --create.")

    def handle(self, *args: Any, **opts: Any) -> None:
        study = get_study(opts["slug"])
        username = opts["username"]
        password = (opts["password"] or "") if opts["create"] else ""
        try:
            # The command line is the server's operator: no actor, any role (set_member_role's contract).
            _, created = set_member_role(study, username, opts["role"], actor=None, password=password)
        except UnknownUser as exc:
            if opts["create"]:
                raise CommandError("--create needs --password.") from exc
            raise CommandError(f"{exc} Add --create --password P to create the account.") from exc
        except StudyError as exc:
            raise CommandError(str(exc)) from exc
        verb = "Added" if created else "Updated"
        self.stdout.write(f"{verb} {username} as {opts['role']} of {study.slug}.")
