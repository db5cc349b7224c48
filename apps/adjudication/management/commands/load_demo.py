"""Build the demo study `tosem23` from fixtures/tosem23 (the TOSEM 2023 replication data).

Idempotent: every step compares with what is stored and writes only differences, so running the
command twice changes nothing (no new job, version, annotation or decision).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from apps.accounts.models import Membership, Role, Study, User
from apps.accounts.services import add_member
from apps.annotation.label_file import LabelFileError, parse_labels_csv
from apps.annotation.models import Round
from apps.annotation.services import add_items_to_round, assign_round, import_annotations
from apps.corpus.models import ImportKind, Item
from apps.corpus.parsing import detect_format, iter_records
from apps.corpus.records import canonical_url
from apps.corpus.services import import_in_foreground
from apps.taxonomy.loading import load_codebook_file

FIXTURES = Path(settings.BASE_DIR) / "fixtures" / "tosem23"
SLUG = "tosem23"
PASSWORD = "taxonomist-demo"
PRACTICE_ROUND = 3
EXAMPLE_PREFIX = "https://example.org/taxonomist-demo/"
USERS = (("lead", Role.LEAD), ("annotator1", Role.ANNOTATOR), ("annotator2", Role.ANNOTATOR))
DESCRIPTION = (
    "Faults and how-to questions in distributed deep-learning training, from the replication data of "
    "Liu et al., “Rise of Distributed Deep Learning Training in the Big Model Era: From a Software "
    "Engineering Perspective”, ACM TOSEM 32(6), 2023 (Apache-2.0): the real codebook, the posts of "
    "reliability rounds 1 and 2, and both annotators' real labels."
)


class Command(BaseCommand):
    help = "Load the demo study 'tosem23' (TOSEM 2023 codebook, round 1-2 posts and real labels)."

    def handle(self, *args: Any, **opts: Any) -> None:
        if not FIXTURES.is_dir():
            raise CommandError(f"Demo fixtures are missing: {FIXTURES}")
        lead = self._study_and_users()
        study = Study.objects.get(slug=SLUG)

        result = load_codebook_file(study, FIXTURES / "codebook.json", actor=lead)
        self.stderr.write(f"codebook: v{result.version}, {len(result.changes)} change(s)")

        for name in ("items.csv", "examples.jsonl"):
            self._import_items(study, lead, FIXTURES / name)

        for number in (1, 2):
            path = FIXTURES / f"labels_round{number}.csv"
            try:
                rows = parse_labels_csv(path.read_text(encoding="utf-8"), decisions=False)
            except LabelFileError as exc:
                raise CommandError(f"{path.name}: {exc}") from exc
            # the TOSEM 2023 annotators' real labels, blank cells included (complete=False)
            outcome = import_annotations(study, rows, actor=lead, complete=False)
            self.stderr.write(f"labels round {number}: {outcome}")

        self._practice_round(study, lead)
        self.stdout.write(
            f"Demo study '{SLUG}' ready: log in as lead, annotator1 or annotator2 (password {PASSWORD})."
        )

    def _study_and_users(self) -> User:
        with transaction.atomic():
            study, created = Study.objects.get_or_create(
                slug=SLUG,
                defaults={
                    "name": "TOSEM 2023 — distributed training faults",
                    "description": DESCRIPTION,
                    "overlap": 2,
                    "is_demo": True,
                },
            )
            users = {}
            for username, role in USERS:
                user = User.objects.filter(username=username).first()
                if user is None:
                    user = User(username=username)
                    user.set_password(PASSWORD)
                    user.save()
                users[username] = user
                if not Membership.objects.filter(study=study, user=user, role=role).exists():
                    add_member(study, user, role)
            if created:
                self.stderr.write(f"created study {SLUG!r}")
        return users["lead"]

    def _practice_round(self, study: Study, lead: User) -> None:
        """Round 3: the example items (with text), open for both annotators to try the workbench."""
        if Round.objects.filter(study=study, number=PRACTICE_ROUND).exists():
            return
        examples = Item.objects.filter(study=study, url__startswith=EXAMPLE_PREFIX).order_by("id")
        add_items_to_round(
            study,
            PRACTICE_ROUND,
            examples.values_list("id", flat=True),
            actor=lead,
            description={"demo": "example items written for the demo, to try the workbench"},
        )
        Round.objects.filter(study=study, number=PRACTICE_ROUND).update(name="Practice (demo examples)")
        assign_round(study, PRACTICE_ROUND, ["annotator1", "annotator2"], actor=lead)
        self.stderr.write(
            f"round {PRACTICE_ROUND}: {examples.count()} example items, open for both annotators"
        )

    def _import_items(self, study: Study, lead: User, path: Path) -> None:
        """Import the file unless every item in it is already stored unchanged (then nothing to do)."""
        wanted = {canonical_url(r.url) for r in iter_records(path, detect_format(path))}
        stored = set(Item.objects.filter(study=study, url__in=wanted).values_list("url", flat=True))
        if wanted <= stored:
            self.stderr.write(f"{path.name}: {len(wanted)} items already loaded")
            return
        job = import_in_foreground(
            study, ImportKind.FILE, {"format": "", "filename": path.name}, upload=path, user=lead
        )
        if job.status != "succeeded":
            raise CommandError(f"{path.name}: import failed: {job.error or job.message}")
        self.stderr.write(f"{path.name}: {job.created} created, {job.updated} updated")
