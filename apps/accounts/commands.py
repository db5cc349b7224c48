"""What management commands need from accounts: the one way to look up the study a command names."""

from __future__ import annotations

from django.core.management.base import CommandError

from apps.core.generations import command_writes

from .models import Study
from .permissions import archived_message


def get_study(slug: str, *, reads_only: bool = False) -> Study:
    """The study with `slug`, or a CommandError (exit status 1) naming the slug and up to 20 known ones.

    An archived study is read-only: unless the command only reads (`reads_only`: reports and exports),
    it is refused with the archived message, before anything is written."""
    study = Study.objects.filter(slug=slug).first()
    if study is None:
        known = ", ".join(Study.objects.order_by("slug").values_list("slug", flat=True)[:20]) or "none"
        raise CommandError(f"No study with the slug {slug!r} (known: {known}).")
    if not reads_only:
        if study.archived_at is not None:
            raise CommandError(archived_message(study))
        command_writes(study.pk)  # the study's pages must count what the command writes
    return study
