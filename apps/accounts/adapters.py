"""django-allauth's hooks: who may sign up, and where mail comes from (docs/accounts.md).

Open sign-up is off unless ``OPEN_SIGNUP`` is set: accounts come from invitations, whose page creates the
account itself (`invitations.accept_with_signup`). A person holding a pending invitation in their session
(they opened its link) may also sign up through a GitHub, GitLab or ORCID account.
"""

from __future__ import annotations

from typing import Any

from allauth.account.adapter import DefaultAccountAdapter
from django.conf import settings
from django.http import HttpRequest

from . import invitations
from .ratelimit import client_address


class AccountAdapter(DefaultAccountAdapter):
    def is_open_for_signup(self, request: HttpRequest) -> bool:
        return bool(settings.OPEN_SIGNUP) or invitations.pending_in_session(request) is not None

    def get_client_ip(self, request: HttpRequest) -> str:
        """The address allauth's limits count by: the login limit's (REMOTE_ADDR; see ratelimit.py on why
        X-Forwarded-For is not trusted)."""
        return client_address(request)


try:  # allauth.socialaccount is installed only when a provider is configured (config/settings.py)
    from allauth.socialaccount.adapter import DefaultSocialAccountAdapter
except ImportError:  # pragma: no cover - the package ships it; the import fails only if allauth changes
    DefaultSocialAccountAdapter = object


class SocialAccountAdapter(DefaultSocialAccountAdapter):
    def is_open_for_signup(self, request: HttpRequest, sociallogin: Any) -> bool:
        return bool(settings.OPEN_SIGNUP) or invitations.pending_in_session(request) is not None
