"""Authentication: allauth's backend (a username or an e-mail address with the password, on Django's
ModelBackend), loading the session's user with one hand-written statement.

`get_user` runs on every authenticated request; through the ORM it costs about a millisecond of Python
on the machines Taxonomist is measured on (apps/core/sql.py). The row, the `is_active` rule and the
session-hash check that follows (`django.contrib.auth.get_user`) are the same as Django's.

On a study's URL (`middleware.RequestStudyMiddleware` names its slug in `REQUEST_STUDY`), the same
statement also reads the user's membership of that study, which `permissions.access_study` then takes
instead of reading it again: one round trip less on every study page and API call.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

from allauth.account.auth_backends import AuthenticationBackend

from apps.core.sql import Statement, columns, instance, width

from .models import Membership, Study, User

REQUEST_STUDY: ContextVar[str | None] = ContextVar("taxonomist_request_study", default=None)
"""The slug of the study whose URL is being served, or None (set per request by the middleware)."""

REQUEST_WRITES: ContextVar[bool] = ContextVar("taxonomist_request_writes", default=False)
"""Whether the request being served may write (its method is not GET, HEAD or OPTIONS); set per request by
the middleware, read by `permissions.access_study` to refuse writes to an archived study."""

REQUEST_WROTE: ContextVar[int | None] = ContextVar("taxonomist_request_wrote", default=None)
"""The id of the study a writing request opened through `permissions.access_study`, or None: once the view
has returned, the middleware forgets that study's cached figures (`apps.core.generations.study_written`)."""

STUDY_ACCESS = "_taxonomist_study_access"
"""Attribute of a user loaded on a study's URL: (slug, role or None, study or None), for `access_study`."""

_SELECT_USER = Statement(
    "taxonomist_user",
    f'SELECT {columns(User, "u")} FROM "{User._meta.db_table}" u WHERE u.id = %(id)s',
    {"id": "bigint"},
)
# The user's (`u`) role in the study named %(slug)s and the study's columns, selected after the user's:
# membership is unique per (user, study), so one row, NULL for a non-member (`remember_study_access`).
STUDY_ACCESS_COLUMNS = f"m.role, {columns(Study, 's')}"
STUDY_ACCESS_JOIN = (
    f'LEFT JOIN ("{Membership._meta.db_table}" m JOIN "{Study._meta.db_table}" s '
    f"ON s.id = m.study_id AND s.slug = %(slug)s) ON m.user_id = u.id"
)
_SELECT_USER_AND_MEMBERSHIP = Statement(
    "taxonomist_user_membership",
    f'SELECT {columns(User, "u")}, {STUDY_ACCESS_COLUMNS} FROM "{User._meta.db_table}" u '
    f"{STUDY_ACCESS_JOIN} WHERE u.id = %(id)s",
    {"id": "bigint", "slug": "varchar"},
)
_U = width(User)


def remember_study_access(user: User, slug: str, row: tuple[Any, ...]) -> None:
    """Keep on `user`, for `access_study`, the role and study read with `STUDY_ACCESS_COLUMNS` (`row`)."""
    role = row[0]
    study = instance(Study, row[1:]) if role is not None else None
    setattr(user, STUDY_ACCESS, (slug, role, study))


class UserBackend(AuthenticationBackend):
    def get_user(self, user_id: Any) -> User | None:
        try:
            pk = int(user_id)
        except (TypeError, ValueError):
            return None
        slug = REQUEST_STUDY.get()
        if slug is None:
            row = _SELECT_USER.one({"id": pk})
        else:
            row = _SELECT_USER_AND_MEMBERSHIP.one({"id": pk, "slug": slug})
        if row is None:
            return None
        user = instance(User, row[:_U])
        if slug is not None:
            remember_study_access(user, slug, row[_U:])
        return user if self.user_can_authenticate(user) else None
