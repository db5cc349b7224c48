"""What every management command shares on its command line: argument types and one-line errors.

A bad value (``--round abc``, ``--since yesterday``, ``--limit -5``, ``--api-url ftp://x``, a choice
not offered) is refused while the arguments are parsed, before any work, with one line naming the flag,
the rule and the value, and exit status 2 (the argparse convention for a usage error)::

    manage.py import_github: --limit: must be a positive whole number, got '-5'

Commands subclass :class:`BaseCommand` (instead of Django's) for the one-line form; without it argparse
prints the usage block first, and a validator raising ``CommandError`` escaped as a traceback. Through
``call_command`` the same refusal is a ``CommandError`` with ``returncode`` 2.

The validators are argparse ``type=`` callables: they raise ``argparse.ArgumentTypeError``, which
argparse prefixes with the flag. Module without models: it imports no app.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from datetime import datetime
from typing import Any, NoReturn
from urllib.parse import urlsplit

from django.core.management.base import BaseCommand as DjangoBaseCommand
from django.core.management.base import CommandError, CommandParser

from .timestamps import iso_utc

__all__ = [
    "USAGE_ERROR",
    "BaseCommand",
    "http_url",
    "iso_datetime",
    "non_negative_number",
    "positive_int",
    "whole_number",
]

USAGE_ERROR = 2


def whole_number(
    *, minimum: int | None = None, maximum: int | None = None, unit: str = ""
) -> Callable[[str], int]:
    """A ``type=`` for a whole number in ``[minimum, maximum]`` (either bound optional); `unit` words the
    upper bound ("at most 10,000 replicates")."""
    if minimum == 1:
        kind = "a positive whole number"
    elif minimum == 0:
        kind = "zero or a positive whole number"
    elif minimum is not None:
        kind = f"a whole number of at least {minimum:,}"
    else:
        kind = "a whole number"

    def parse(text: str) -> int:
        try:
            value = int(text.strip(), 10)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {kind}, got {text!r}") from None
        if minimum is not None and value < minimum:
            raise argparse.ArgumentTypeError(f"must be {kind}, got {text!r}")
        if maximum is not None and value > maximum:
            raise argparse.ArgumentTypeError(f"at most {maximum:,}{' ' + unit if unit else ''}, got {text!r}")
        return value

    parse.__name__ = "whole number"  # argparse names the type in some messages
    return parse


positive_int = whole_number(minimum=1)
"""``--round N``, ``--limit N``, ``--size K``, ``--overlap K``, ``--level DEPTH``: 1, 2, 3, ..."""


def non_negative_number(text: str) -> float:
    """A number of zero or more, such as seconds (``--older-than 90``, ``--older-than 0.5``)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number of zero or more, got {text!r}") from None
    if not value >= 0 or value == float("inf"):  # also refuses nan
        raise argparse.ArgumentTypeError(f"must be a number of zero or more, got {text!r}")
    return value


def iso_datetime(text: str) -> datetime:
    """An ISO 8601 date or date-time (``2021-06-01``, ``2021-06-01T12:00:00Z``) as an aware UTC datetime;
    a date is its midnight, a time without offset is UTC."""
    try:
        return iso_utc(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"must be an ISO date such as 2021-06-01 or 2021-06-01T12:00:00Z, got {text!r}"
        ) from None


def http_url(text: str) -> str:
    """An absolute ``http://`` or ``https://`` URL with a host (an API root such as --api-url)."""
    parts = urlsplit(text.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise argparse.ArgumentTypeError(
            f"must be an http:// or https:// URL such as https://api.github.com, got {text!r}"
        )
    return text.strip()


class BaseCommand(DjangoBaseCommand):
    """Django's command with argument errors on one line and exit status 2 (module docstring)."""

    def create_parser(self, prog_name: str, subcommand: str, **kwargs: Any) -> CommandParser:
        parser = super().create_parser(prog_name, subcommand, **kwargs)

        def error(message: str) -> NoReturn:
            text = message.removeprefix("argument ")  # "argument --limit: ..." → "--limit: ..."
            if parser.called_from_command_line:
                parser.exit(USAGE_ERROR, f"{parser.prog}: {text}\n")
            raise CommandError(f"Error: {text}", returncode=USAGE_ERROR)

        parser.error = error  # type: ignore[method-assign]
        return parser
