"""Build the demo study `tosem23` from fixtures/tosem23 (the TOSEM 2023 replication data).

Each step writes only what is not stored yet and never rewrites what is: the study and its members, the
codebook, each items file, each round's labels, the practice round. So the first run builds the demo, a
run after an interrupted one finishes it, and every later run (each `make run`) leaves the study exactly
as the team left it: codebook edits, proposals, labels and decisions are kept. `reset_demo` starts the
demo afresh.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import CommandError
from django.db import transaction

from apps.accounts.models import Role, Study, User
from apps.accounts.services import add_member
from apps.annotation.label_file import LabelFileError, parse_labels_csv
from apps.annotation.models import Round
from apps.annotation.services import add_items_to_round, assign_round, import_annotations
from apps.core.cli import BaseCommand
from apps.corpus.models import Item
from apps.corpus.params import FileParams
from apps.corpus.parsing import detect_format, iter_records
from apps.corpus.records import canonical_url
from apps.corpus.services import import_in_foreground
from apps.taxonomy.loading import load_codebook_file
from apps.taxonomy.models import Dimension

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
        existing = Study.objects.filter(slug=SLUG).first()
        if existing is not None and not existing.is_demo:
            raise CommandError(
                f"A study '{SLUG}' exists and is not the demo: load_demo leaves it alone "
                "(the demo needs that slug; use another database for the demo)."
            )
        lead = self._study_and_users()
        study = Study.objects.get(slug=SLUG)

        if Dimension.objects.filter(codebook__study=study).exists():
            self.stderr.write("codebook: already loaded, kept as it is")
        else:
            result = load_codebook_file(study, FIXTURES / "codebook.json", actor=lead)
            self.stderr.write(f"codebook: v{result.version}, {len(result.changes)} change(s)")

        for name in ("items.csv", "examples.jsonl"):
            self._import_items(study, lead, FIXTURES / name)

        for number in (1, 2):
            self._import_labels(study, lead, number)

        self._practice_round(study, lead)
        if existing is not None:
            self.stdout.write(
                f"Demo study '{SLUG}' kept as it is (python manage.py reset_demo starts it afresh): "
                f"log in as lead, annotator1 or annotator2 (password {PASSWORD} unless changed)."
            )
        else:
            self.stdout.write(
                f"Demo study '{SLUG}' ready: log in as lead, annotator1 or annotator2 (password {PASSWORD})."
            )

    def _study_and_users(self) -> User:
        """The study, its three users and their memberships: members are added with the study only, so
        a member the team removed later stays removed (the transaction makes the two go together)."""
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
                if created:
                    add_member(study, user, role)
            if created:
                self.stderr.write(f"created study {SLUG!r}")
        return users["lead"]

    def _import_labels(self, study: Study, lead: User, number: int) -> None:
        """A round's real labels, once: the import creates the round in the same transaction, so a round
        that exists holds them (and whatever the team did since, which is not rewritten)."""
        path = FIXTURES / f"labels_round{number}.csv"
        if Round.objects.filter(study=study, number=number).exists():
            self.stderr.write(f"labels round {number}: already loaded, kept as they are")
            return
        try:
            rows = parse_labels_csv(path.read_text(encoding="utf-8"), decisions=False)
        except LabelFileError as exc:
            raise CommandError(f"{path.name}: {exc}") from exc
        # the TOSEM 2023 annotators' real labels, blank cells included (complete=False)
        outcome = import_annotations(study, rows, actor=lead, complete=False)
        self.stderr.write(f"labels round {number}: {outcome}")

    def _practice_round(self, study: Study, lead: User) -> None:
        """Round 3: the example items (with text), open for both annotators to try the workbench."""
        if Round.objects.filter(study=study, number=PRACTICE_ROUND).exists():
            return
        examples = Item.objects.filter(study=study, url__startswith=EXAMPLE_PREFIX).order_by("id")
        with transaction.atomic():  # the round exists only with its assignments
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
        """Import the file unless its items are stored (a file is imported whole or not at all), so an
        item the team changed since is not rewritten."""
        wanted = {canonical_url(r.url) for r in iter_records(path, detect_format(path))}
        stored = set(Item.objects.filter(study=study, url__in=wanted).values_list("url", flat=True))
        if wanted <= stored:
            self.stderr.write(f"{path.name}: {len(wanted)} items already loaded, kept as they are")
            return
        job = import_in_foreground(study, FileParams(filename=path.name), upload=path, user=lead)
        if job.status != "succeeded":
            raise CommandError(f"{path.name}: import failed: {job.error or job.message}")
        self.stderr.write(f"{path.name}: {job.created} created, {job.updated} updated")
