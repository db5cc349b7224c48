"""DRF token authentication against hashed personal tokens (`Authorization: Token tx_...`)."""

from __future__ import annotations

from typing import Any

from django.utils import timezone
from rest_framework import exceptions
from rest_framework.authentication import TokenAuthentication

from apps.core import sql

from .backends import REQUEST_STUDY, STUDY_ACCESS_COLUMNS, STUDY_ACCESS_JOIN, remember_study_access
from .models import ApiToken, User, hash_token

# Every API call runs it: a prepared statement on PostgreSQL (apps/core/sql.py, decisions/0004), the
# ORM's `ApiToken.objects.active().select_related("user").filter(key_hash=...)` written by hand (its
# compile cost 0.7-1 ms of a 4 ms budget for a submission, issue 25). The same condition: the hash, not
# revoked.
_READ = sql.Statement(
    "taxonomist_api_token",
    f"SELECT {sql.columns(ApiToken, 't')}, {sql.columns(User, 'u')} FROM {ApiToken._meta.db_table} t "
    f"JOIN {User._meta.db_table} u ON u.id = t.user_id WHERE t.key_hash = %(hash)s AND t.revoked_at IS NULL",
    {"hash": "varchar"},
)
# On a study's URL (`backends.REQUEST_STUDY`), the same with the user's role in that study and the study
# (`backends.STUDY_ACCESS_JOIN`), which `access_study` then reads from the user as it does for a session's
# user, instead of a statement of its own (decision 0013).
_READ_ON_STUDY = sql.Statement(
    "taxonomist_api_token_membership",
    f"SELECT {sql.columns(ApiToken, 't')}, {sql.columns(User, 'u')}, {STUDY_ACCESS_COLUMNS} "
    f"FROM {ApiToken._meta.db_table} t JOIN {User._meta.db_table} u ON u.id = t.user_id "
    f"{STUDY_ACCESS_JOIN} WHERE t.key_hash = %(hash)s AND t.revoked_at IS NULL",
    {"hash": "varchar", "slug": "varchar"},
)


class HashedTokenAuthentication(TokenAuthentication):
    keyword = "Token"

    def authenticate_credentials(self, key: str) -> tuple[User, Any]:
        slug = REQUEST_STUDY.get()
        if slug is None:
            row = _READ.one({"hash": hash_token(key)})
        else:
            row = _READ_ON_STUDY.one({"hash": hash_token(key), "slug": slug})
        if row is None:
            raise exceptions.AuthenticationFailed("Invalid or revoked token.")
        width, user_end = sql.width(ApiToken), sql.width(ApiToken) + sql.width(User)
        token = sql.instance(ApiToken, row[:width])
        token.user = sql.instance(User, row[width:user_end])
        if slug is not None:
            remember_study_access(token.user, slug, row[user_end:])
        if not token.user.is_active:
            raise exceptions.AuthenticationFailed("Invalid or revoked token.")
        now = timezone.now()
        if token.last_used_at is None or (now - token.last_used_at).total_seconds() > 60:
            ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        return token.user, token
