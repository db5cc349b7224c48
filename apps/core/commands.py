"""Helpers shared by management commands: one way to look up a study and to fail clearly."""

from __future__ import annotations

from django.core.management.base import CommandError


def get_study(slug: str):  # type: ignore[no-untyped-def]
    from apps.accounts.models import Study  # core imports no app at module level

    study = Study.objects.filter(slug=slug).first()
    if study is None:
        known = ", ".join(Study.objects.order_by("slug").values_list("slug", flat=True)[:20]) or "none"
        raise CommandError(f"No study with the slug {slug!r} (known: {known}).")
    return study
