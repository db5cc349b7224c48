"""``requeue_jobs [--older-than SECONDS]``: send queued import and export jobs to the broker again.

Lives in the export app because it is the only app allowed to import both corpus and export.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.core.management.base import CommandError, CommandParser

from apps.core.cli import BaseCommand, non_negative_number
from apps.corpus.jobs import QUEUE_UNAVAILABLE, requeue_unsent
from apps.corpus.models import ImportJob
from apps.corpus.tasks import run_import_task
from apps.export.models import ExportJob
from apps.export.tasks import export_dataset_task


class Command(BaseCommand):
    help = (
        "Send again the queued import and export jobs that the job queue (Redis) never took because it "
        "was down. With --older-than, also every job queued for longer than that many seconds (messages "
        "lost when Redis restarted without persistence). Sending a job twice is harmless: one worker runs it."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--older-than", type=non_negative_number, default=None, metavar="SECONDS")

    def handle(self, *args: Any, **options: Any) -> None:
        seconds = options["older_than"]
        older_than = None if seconds is None else timedelta(seconds=seconds)
        sent = {
            "import": requeue_unsent(ImportJob, run_import_task, older_than=older_than),
            "export": requeue_unsent(ExportJob, export_dataset_task, older_than=older_than),
        }
        unsent = {
            "import": ImportJob.objects.filter(status="queued", message=QUEUE_UNAVAILABLE).count(),
            "export": ExportJob.objects.filter(status="queued", message=QUEUE_UNAVAILABLE).count(),
        }
        for kind in sent:
            self.stderr.write(f"{kind} jobs: {sent[kind]} sent, {unsent[kind]} still waiting for the queue")
        if any(unsent.values()):
            raise CommandError("the job queue is still unavailable (is Redis running?); run this again later")
