"""DRF token authentication against hashed personal tokens (`Authorization: Token tx_...`)."""

from __future__ import annotations

from typing import Any

from django.utils import timezone
from rest_framework import exceptions
from rest_framework.authentication import TokenAuthentication

from apps.core import sql

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


class HashedTokenAuthentication(TokenAuthentication):
    keyword = "Token"

    def authenticate_credentials(self, key: str) -> tuple[User, Any]:
        row = _READ.one({"hash": hash_token(key)})
        if row is None:
            raise exceptions.AuthenticationFailed("Invalid or revoked token.")
        width = sql.width(ApiToken)
        token = sql.instance(ApiToken, row[:width])
        token.user = sql.instance(User, row[width:])
        if not token.user.is_active:
            raise exceptions.AuthenticationFailed("Invalid or revoked token.")
        now = timezone.now()
        if token.last_used_at is None or (now - token.last_used_at).total_seconds() > 60:
            ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        return token.user, token
