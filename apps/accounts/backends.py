"""Authentication: Django's ModelBackend, loading the session's user with one hand-written statement.

`get_user` runs on every authenticated request; through the ORM it costs about a millisecond of Python
on the machines Taxonomist is measured on (apps/core/sql.py). The row, the `is_active` rule and the
session-hash check that follows (`django.contrib.auth.get_user`) are the same as Django's.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.backends import ModelBackend

from apps.core.sql import Statement, columns, instance

from .models import User

_SELECT_USER = Statement(
    "taxonomist_user",
    f'SELECT {columns(User, "u")} FROM "{User._meta.db_table}" u WHERE u.id = %(id)s',
    {"id": "bigint"},
)


class UserBackend(ModelBackend):
    def get_user(self, user_id: Any) -> User | None:
        try:
            pk = int(user_id)
        except (TypeError, ValueError):
            return None
        row = _SELECT_USER.one({"id": pk})
        if row is None:
            return None
        user = instance(User, row)
        return user if self.user_can_authenticate(user) else None
