"""What management commands need from accounts: the one way to look up the study a command names."""

from __future__ import annotations

from django.core.management.base import CommandError

from .models import Study


def get_study(slug: str) -> Study:
    """The study with `slug`, or a CommandError (exit status 1) naming the slug and up to 20 known ones."""
    study = Study.objects.filter(slug=slug).first()
    if study is None:
        known = ", ".join(Study.objects.order_by("slug").values_list("slug", flat=True)[:20]) or "none"
        raise CommandError(f"No study with the slug {slug!r} (known: {known}).")
    return study
