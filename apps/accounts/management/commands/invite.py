from __future__ import annotations

from typing import Any

from django.core.management.base import CommandError, CommandParser

from apps.accounts.commands import get_study
from apps.accounts.invitations import DEFAULT_EXPIRES_DAYS, MAX_EXPIRES_DAYS, create_invitation
from apps.accounts.models import Role
from apps.accounts.services import StudyError
from apps.core.cli import BaseCommand, whole_number


class Command(BaseCommand):
    help = (
        "Invite an e-mail address to a study and print the invitation link (single use): "
        "invite STUDY EMAIL --role annotator|lead|owner [--expires-days 14]"
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug")
        parser.add_argument("email")
        parser.add_argument("--role", required=True, choices=Role.values)
        parser.add_argument(
            "--expires-days",
            type=whole_number(minimum=1, maximum=MAX_EXPIRES_DAYS, unit="days"),
            default=DEFAULT_EXPIRES_DAYS,
            help=f"Days the link stays valid (default {DEFAULT_EXPIRES_DAYS}).",
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        study = get_study(opts["slug"])
        try:
            # The command line is the server's operator: any role (set_member_role's contract).
            issued = create_invitation(
                study, role=opts["role"], actor=None, email=opts["email"], expires_days=opts["expires_days"]
            )
        except StudyError as exc:
            raise CommandError(str(exc)) from exc
        if issued.mail_error:
            self.stderr.write(f"{issued.mail_error} Hand the link over yourself.")
        else:
            self.stderr.write(
                f"Invitation e-mailed to {issued.invitation.email} as {issued.invitation.role}."
            )
        self.stdout.write(issued.link)
