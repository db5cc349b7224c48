"""The database session store, reading a session with one hand-written statement.

Django's `db.SessionStore` reads the session through the ORM on every request, which costs more than the
rest of a cheap request (apps/core/sql.py). This store reads the same row with the same condition (the
key, not expired) and is otherwise Django's: sessions stay server-side, so logging out or deleting a
session ends it at once. Setting: ``SESSION_ENGINE = "apps.accounts.sessions"``.
"""

from __future__ import annotations

from typing import Any

from django.contrib.sessions.backends.db import SessionStore as DatabaseSessionStore
from django.contrib.sessions.models import Session
from django.db import connection
from django.utils import timezone

from apps.core import sql

_TABLE = Session._meta.db_table
# A prepared statement on PostgreSQL (apps/core/sql.py): every request runs it.
_READ = sql.Statement(
    "taxonomist_session",
    f'SELECT session_data FROM "{_TABLE}" WHERE session_key = %(key)s AND expire_date > %(now)s',
    {"key": "varchar", "now": "timestamptz"},
)


class SessionStore(DatabaseSessionStore):
    def _get_session_from_db(self) -> Any:
        key = self.session_key
        if not key:
            self._session_key = None
            return None
        now = connection.ops.adapt_datetimefield_value(timezone.now())
        row = _READ.one({"key": key, "now": now})
        if row is None:
            self._session_key = None
            return None
        return Session(session_key=key, session_data=row[0])
