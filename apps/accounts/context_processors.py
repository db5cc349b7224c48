"""What the account links of every page need to know: whether open sign-up and third-party sign-in are on."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest


def accounts(request: HttpRequest) -> dict[str, bool]:
    return {
        "signup_open": bool(settings.OPEN_SIGNUP),
        "social_signin": "allauth.socialaccount" in settings.INSTALLED_APPS,
    }
