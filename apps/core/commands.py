"""Helpers shared by management commands: one way to check a file and to fail clearly.

The study lookup every command shares needs accounts' `Study`, so it is `apps.accounts.commands.get_study`
(core imports no app)."""

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
