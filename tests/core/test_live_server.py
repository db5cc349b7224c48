"""The live server the browser tests drive (tests/live_server.py): on SQLite it answers requests in turn,
unless a test is marked ``overlapping_requests``; on PostgreSQL it runs them at once, a connection each."""

from __future__ import annotations

import socketserver
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from django.conf import settings
from django.db import connection
from django.test import Client

from apps.accounts.models import Study, User
from tests.live_server import InTurn


def test_on_sqlite_the_live_server_answers_in_turn(live_server: Any) -> None:
    assert isinstance(live_server.thread.httpd, socketserver.ThreadingMixIn)
    assert isinstance(live_server.thread.httpd.get_app(), InTurn) is (connection.vendor == "sqlite")
    assert not InTurn.overlap


@pytest.mark.overlapping_requests
def test_a_test_whose_requests_must_overlap_says_so(live_server: Any) -> None:
    assert InTurn.overlap


def test_a_pages_parallel_requests_are_each_answered(live_server: Any, study: Study, lead: User) -> None:
    client = Client()
    client.force_login(lead)
    cookie = f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}"
    pages = ["", "codebook/", "rounds/", "items/", "paper/", "export/"]

    def get(n: int) -> int:
        url = f"{live_server.url}/studies/{study.slug}/{pages[n % len(pages)]}"
        with urllib.request.urlopen(urllib.request.Request(url, headers={"Cookie": cookie}), timeout=30) as r:
            return r.status

    with ThreadPoolExecutor(max_workers=8) as pool:
        statuses = list(pool.map(get, range(120)))
    assert statuses == [200] * 120
