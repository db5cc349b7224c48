from __future__ import annotations

from typing import Any

from django.core.management.base import CommandError, CommandParser
from django.db import transaction

from apps.accounts.models import Role, User
from apps.accounts.services import StudyError, add_member, create_user
from apps.core.cli import BaseCommand
from apps.core.commands import get_study


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
        try:
            with transaction.atomic():
                user = User.objects.filter(username=username).first()
                if user is None:
                    if not opts["create"]:
                        raise StudyError(
                            f"No user named {username!r}; add --create --password P to create one."
                        )
                    if not opts["password"]:
                        raise StudyError("--create needs --password.")
                    user = create_user(username, opts["password"])
                _, created = add_member(study, user, opts["role"])
        except StudyError as exc:
            raise CommandError(str(exc)) from exc
        verb = "Added" if created else "Updated"
        self.stdout.write(f"{verb} {username} as {opts['role']} of {study.slug}.")
