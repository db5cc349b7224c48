"""Logging out: a POST with CSRF; a GET of /logout/ asks to confirm instead of a blank 405."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from django.urls import reverse

from apps.accounts.models import User
from tests.conftest import login

pytestmark = pytest.mark.django_db


def test_get_logout_shows_a_confirmation_page_with_a_post_form_and_keeps_the_session(
    annotator_a: User,
) -> None:
    client = Client(enforce_csrf_checks=True)
    login(client, annotator_a)

    response = client.get(reverse("accounts:logout"))

    assert response.status_code == 200
    html = response.content.decode()
    assert 'class="topbar"' in html and "Log out of Taxonomist?" in html
    form = re.search(r'<form method="post" action="/logout/">(.*?)</form>', html, re.S)
    assert form is not None and 'name="csrfmiddlewaretoken"' in form.group(1)
    assert client.get(reverse("accounts:profile")).status_code == 200  # still logged in


def test_posting_the_confirmation_form_logs_out(annotator_a: User) -> None:
    client = Client(enforce_csrf_checks=True)
    login(client, annotator_a)
    html = client.get(reverse("accounts:logout")).content.decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html)
    assert token is not None

    response = client.post(reverse("accounts:logout"), {"csrfmiddlewaretoken": token.group(1)})

    assert response.status_code == 302 and response["Location"] == reverse("accounts:login")
    assert client.get(reverse("accounts:profile")).status_code == 302  # sent to log in


def test_get_logout_with_nobody_logged_in_goes_to_the_login_page(client: Client) -> None:
    response = client.get(reverse("accounts:logout"))

    assert response.status_code == 302 and response["Location"] == reverse("accounts:login")


def test_logout_without_its_csrf_token_is_refused(annotator_a: User) -> None:
    client = Client(enforce_csrf_checks=True)
    login(client, annotator_a)

    assert client.post(reverse("accounts:logout")).status_code == 403
    assert client.get(reverse("accounts:profile")).status_code == 200
