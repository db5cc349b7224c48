"""``requeue_jobs [--older-than SECONDS]``: send every kind of job that needs it to the broker again.

Every registered kind of job (`apps.core.jobs.job_kinds`: imports, exports, agreement, and any kind added
later) goes through the one `requeue_stalled`: jobs the queue never took, stalled queued and running jobs,
and with --older-than every job queued for longer than that. Lives in core because it names no kind.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.core.management.base import CommandError, CommandParser

from apps.core.cli import BaseCommand, non_negative_number
from apps.core.jobs import check_registered, requeue_every_kind


class Command(BaseCommand):
    help = (
        "Send again every job (of every kind: import, export, agreement, ...) that the job queue (Redis) "
        "never took because it was down, and every stalled job: running without a heartbeat for "
        "JOB_STALE_MINUTES (its worker died), or queued for JOB_QUEUED_STALE_MINUTES (its message was "
        "lost). With --older-than, also every job queued for longer than that many seconds. Sending a "
        "job twice is harmless: one worker runs it. Every worker does the same as it starts."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--older-than", type=non_negative_number, default=None, metavar="SECONDS")

    def handle(self, *args: Any, **options: Any) -> None:
        seconds = options["older_than"]
        older_than = None if seconds is None else timedelta(seconds=seconds)
        try:
            check_registered()
        except ImproperlyConfigured as exc:
            raise CommandError(str(exc)) from None
        waiting = 0
        for kind, sent, unsent in requeue_every_kind(older_than=older_than):
            waiting += unsent
            self.stderr.write(f"{kind.name} jobs: {sent} sent, {unsent} still waiting for the queue")
        if waiting:
            raise CommandError("the job queue is still unavailable (is Redis running?); run this again later")
