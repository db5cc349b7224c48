"""Start the demo afresh: delete the demo study `tosem23` and everything in it, then load it again.

The three demo users are kept (they may belong to other studies) and get the demo password back. A study
named `tosem23` that is not the demo is refused, never deleted.
"""

from __future__ import annotations

from typing import Any

from django.core.management import call_command
from django.core.management.base import CommandError

from apps.accounts.models import Study, User
from apps.core.cli import BaseCommand
from apps.export.deletion import delete_study

from .load_demo import PASSWORD, SLUG, USERS


class Command(BaseCommand):
    help = "Delete the demo study 'tosem23' (every change made in it) and load it afresh."

    def handle(self, *args: Any, **opts: Any) -> None:
        study = Study.objects.filter(slug=SLUG).first()
        if study is not None:
            if not study.is_demo:
                raise CommandError(f"The study '{SLUG}' is not the demo: reset_demo does not delete it.")
            delete_study(study)
            self.stderr.write(f"deleted the demo study {SLUG!r} and everything in it")
        for user in User.objects.filter(username__in=[username for username, _ in USERS]):
            user.set_password(PASSWORD)
            user.save(update_fields=["password"])
        call_command("load_demo", stdout=self.stdout, stderr=self.stderr)
