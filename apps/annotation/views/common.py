"""What the annotation pages share."""

from __future__ import annotations

from apps.accounts.models import User
from apps.core.http import HtmxHttpRequest


def request_user(request: HtmxHttpRequest) -> User:
    assert isinstance(request.user, User)  # @login_required ran first
    return request.user
