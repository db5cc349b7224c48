"""Production error pages (DEBUG=False): 403, 404 and 500 in the product's layout, never a bare page."""

from __future__ import annotations

from typing import Any

import pytest
from django.http import HttpRequest, HttpResponse
from django.test import Client
from django.urls import include, path, reverse

from apps.accounts.models import Study, User
from tests.conftest import login

pytestmark = pytest.mark.django_db


def _explode(request: HttpRequest) -> HttpResponse:
    raise RuntimeError("SECRET-DETAIL of the failure")


# This module is also the URLconf of the 500 test: the project's URLs and one view that fails.
urlpatterns = [path("explode/", _explode), path("", include("config.urls"))]


@pytest.fixture(autouse=True)
def production(settings: Any) -> None:
    settings.DEBUG = False


def _in_the_product_layout(response: Any) -> str:
    html: str = response.content.decode()
    assert 'class="topbar"' in html and "/static/css/app.css" in html, html[:500]
    assert 'data-testid="error-page"' in html
    assert f'href="{reverse("accounts:study-list")}"' in html  # a way back
    return html


def test_an_unknown_address_answers_the_styled_404_page(client: Client, annotator_a: User) -> None:
    response = login(client, annotator_a).get("/no/such/page/")

    assert response.status_code == 404
    assert "404.html" in [t.name for t in response.templates]
    html = _in_the_product_layout(response)
    assert "Page not found" in html and "/no/such/page/" in html
    assert annotator_a.username in html  # the page knows who is logged in, like every page


def test_a_study_of_someone_else_answers_the_same_styled_404_page(
    client: Client, study: Study, outsider: User
) -> None:
    response = login(client, outsider).get(reverse("adjudication:study-detail", args=[study.slug]))

    assert response.status_code == 404
    html = _in_the_product_layout(response)
    assert "Page not found" in html and study.name not in html


def test_a_page_the_role_does_not_allow_answers_the_styled_403_page_with_the_reason(
    client: Client, study: Study, annotator_a: User
) -> None:
    response = login(client, annotator_a).get(reverse("accounts:members", args=[study.slug]))

    assert response.status_code == 403
    assert "403.html" in [t.name for t in response.templates]
    html = _in_the_product_layout(response)
    assert "You may not open this page" in html
    assert "Only a lead or an owner of this study can do this." in html


@pytest.mark.urls(__name__)
def test_an_unexpected_error_answers_the_styled_500_page_without_its_details(annotator_a: User) -> None:
    client = Client(raise_request_exception=False)
    client.force_login(annotator_a)

    response = client.get("/explode/")

    assert response.status_code == 500
    html = _in_the_product_layout(response)
    assert "Server Error (500)" in html and "Something went wrong" in html
    assert "SECRET-DETAIL" not in html and "RuntimeError" not in html and "Traceback" not in html
