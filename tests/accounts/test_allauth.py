"""Accounts through django-allauth: sign in by username or e-mail at the old login address (rate limit
kept), password reset by e-mail, password change, sign-up closed unless OPEN_SIGNUP, the mail settings."""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from django.core import mail
from django.test import Client, override_settings
from django.urls import reverse

from apps.accounts import ratelimit
from apps.accounts.models import User

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
PASSWORD = "correct-horse-battery"


@pytest.fixture
def rita() -> User:
    return User.objects.create_user("rita", email="rita@example.org", password=PASSWORD)


def test_the_login_page_signs_in_by_username_or_by_email(rita: User) -> None:
    url = reverse("accounts:login")
    assert url == "/login/"
    for login in ("rita", "rita@example.org", "RITA@example.org"):
        client = Client()
        response = client.post(url, {"login": login, "password": PASSWORD})
        assert response.status_code == 302, login
        assert client.session["_auth_user_id"] == str(rita.pk)


def test_the_old_username_field_still_signs_in(rita: User) -> None:
    response = Client().post("/login/", {"username": "rita", "password": PASSWORD})
    assert response.status_code == 302


def test_allauths_own_login_address_is_rate_limited_too(rita: User) -> None:
    # A fresh address each run: the counters live in the shared cache (Redis in CI) for 15 minutes, and a
    # fixed one failed a second run within them (its first attempt already refused with 429).
    client = Client(REMOTE_ADDR=f"203.0.113.{secrets.randbelow(250) + 1}-{secrets.token_hex(4)}")
    assert reverse("account_login") == "/accounts/login/"
    for _ in range(ratelimit.LOGIN_FAILURE_LIMIT):
        assert client.post("/accounts/login/", {"login": "rita", "password": "wrong"}).status_code == 200
    refused = client.post("/login/", {"login": "rita", "password": PASSWORD})
    assert refused.status_code == 429 and "Too many failed logins" in refused.content.decode()


def test_a_password_is_reset_through_the_emailed_link(rita: User) -> None:
    client = Client()
    response = client.post(reverse("account_reset_password"), {"email": "rita@example.org"})
    assert response.status_code == 302
    [message] = mail.outbox
    assert message.subject.startswith("[Taxonomist]")
    link = re.search(r"https?://\S+/accounts/password/reset/key/\S+/", message.body)
    assert link is not None, message.body
    form = client.get(link.group(0), follow=True)
    assert form.status_code == 200
    action = form.redirect_chain[-1][0] if form.redirect_chain else link.group(0)
    done = client.post(action, {"password1": "a-brand-new-passphrase", "password2": "a-brand-new-passphrase"})
    assert done.status_code == 302
    rita.refresh_from_db()
    assert rita.check_password("a-brand-new-passphrase")


def test_an_unknown_address_gets_no_reset_link_and_the_page_says_nothing_different() -> None:
    response = Client().post(reverse("account_reset_password"), {"email": "nobody@example.org"})
    assert response.status_code == 302
    assert all("/password/reset/key/" not in m.body for m in mail.outbox)


def test_a_signed_in_user_changes_their_password(rita: User) -> None:
    client = Client()
    client.force_login(rita)
    response = client.post(
        reverse("account_change_password"),
        {
            "oldpassword": PASSWORD,
            "password1": "another-long-passphrase",
            "password2": "another-long-passphrase",
        },
    )
    assert response.status_code == 302
    rita.refresh_from_db()
    assert rita.check_password("another-long-passphrase")


def test_the_account_pages_wear_the_products_frame(rita: User) -> None:
    client = Client()
    client.force_login(rita)
    page = client.get(reverse("account_change_password")).content.decode()
    assert 'class="topbar"' in page and "account-page" in page and 'class="button primary"' in page


def test_open_sign_up_is_off_by_default() -> None:
    page = Client().get(reverse("account_signup")).content.decode()
    assert "Accounts come by invitation" in page
    Client().post(
        reverse("account_signup"),
        {"username": "eve", "email": "eve@example.org", "password1": PASSWORD, "password2": PASSWORD},
    )
    assert not User.objects.filter(username="eve").exists()


@override_settings(OPEN_SIGNUP=True)
def test_open_sign_up_when_enabled_verifies_the_address() -> None:
    response = Client().post(
        reverse("account_signup"),
        {"username": "eve", "email": "eve@example.org", "password1": PASSWORD, "password2": PASSWORD},
    )
    assert response.status_code == 302
    assert User.objects.filter(username="eve").exists()
    assert any("/accounts/confirm-email/" in m.body for m in mail.outbox)


def _settings_with(**env: str) -> str:
    environ = {k: v for k, v in os.environ.items() if k not in {"EMAIL_URL", "DJANGO_ENV", "SECRET_KEY"}}
    environ.update(env)
    code = "from django.conf import settings as s; print(s.MAILERS['default'])"
    result = subprocess.run(
        [sys.executable, "manage.py", "shell", "--no-imports", "-c", code],
        cwd=ROOT,
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip().splitlines()[-1]


def test_email_url_configures_smtp_with_starttls_and_the_default_prints_mail() -> None:
    smtp = _settings_with(EMAIL_URL="smtp://user:pass@mail.example.org:587?tls=1")
    assert "smtp.EmailBackend" in smtp and "'use_tls': True" in smtp and "'port': 587" in smtp
    assert "'username': 'user'" in smtp
    assert "console.EmailBackend" in _settings_with()
