"""ISO 8601 dates and times as aware UTC datetimes, the one reading every command option and every
imported record uses (`core/cli.py` `iso_datetime`, `corpus/records.py` `parse_timestamp`). Pure: no
Django."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime

_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def iso_utc(text: str) -> datetime:
    """``2021-06-01`` (its midnight), ``2021-06-01T12:00:00Z`` or ``2008-07-31T21:42:52.667`` (naive is
    UTC) as an aware UTC datetime. Raises ValueError when it is neither."""
    value = text.strip()
    if _DATE.fullmatch(value):
        day = date.fromisoformat(value)
        return datetime(day.year, day.month, day.day, tzinfo=UTC)
    moment = datetime.fromisoformat(value)
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
