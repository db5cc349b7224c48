"""Helpers shared by management commands: one way to look up a study, to check a file and to fail clearly."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import CommandError

from apps.core.files import FileReadError, check_utf8, regular_file

# The exit status of a command given a file it cannot read (a directory, another encoding): the user's
# input is wrong before any row is looked at (docs/cli.md).
BAD_FILE = 2


def file_error(exc: FileReadError) -> CommandError:
    """The one-line failure, exit status 2, for a file a command cannot read."""
    return CommandError(str(exc), returncode=BAD_FILE)


def input_file(path: str, *, text: bool = True, check_bytes: int | None = None) -> Path:
    """The file a command was given, checked before anything reads it: it must be a regular file and,
    when `text`, UTF-8 (all of it, or its first `check_bytes` bytes; a byte-order mark is fine).
    Otherwise a CommandError with exit status 2 and one line naming the file and the problem (the
    encoding found and the byte offset for text that is not UTF-8)."""
    try:
        return check_utf8(path, limit=check_bytes) if text else regular_file(path)
    except FileReadError as exc:
        raise file_error(exc) from None


def get_study(slug: str):  # type: ignore[no-untyped-def]
    from apps.accounts.models import Study  # core imports no app at module level

    study = Study.objects.filter(slug=slug).first()
    if study is None:
        known = ", ".join(Study.objects.order_by("slug").values_list("slug", flat=True)[:20]) or "none"
        raise CommandError(f"No study with the slug {slug!r} (known: {known}).")
    return study
