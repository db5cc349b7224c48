"""The live server the browser tests drive (tests/conftest.py): on SQLite it shares the test's in-memory
connection, so it answers one request at a time; on PostgreSQL it stays threaded, a connection each."""

from __future__ import annotations

import socketserver
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from django.conf import settings
from django.db import connection
from django.test import Client

from apps.accounts.models import Study, User


def test_the_live_server_is_threaded_only_where_each_thread_has_its_own_connection(live_server: Any) -> None:
    threaded = isinstance(live_server.thread.httpd, socketserver.ThreadingMixIn)
    assert threaded is (connection.vendor != "sqlite")


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
