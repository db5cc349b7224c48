"""DRF token authentication against hashed personal tokens (`Authorization: Token tx_...`)."""

from __future__ import annotations

from typing import Any

from django.utils import timezone
from rest_framework import exceptions
from rest_framework.authentication import TokenAuthentication

from .models import ApiToken, User, hash_token


class HashedTokenAuthentication(TokenAuthentication):
    keyword = "Token"

    def authenticate_credentials(self, key: str) -> tuple[User, Any]:
        token = ApiToken.objects.active().select_related("user").filter(key_hash=hash_token(key)).first()
        if token is None or not token.user.is_active:
            raise exceptions.AuthenticationFailed("Invalid or revoked token.")
        now = timezone.now()
        if token.last_used_at is None or (now - token.last_used_at).total_seconds() > 60:
            ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        return token.user, token
