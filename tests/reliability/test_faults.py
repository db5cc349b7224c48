"""Dependency faults: Redis down, PostgreSQL dropping connections or refusing them, GitHub misbehaving.

- Redis down: both the Celery broker and the cache point at a closed port on 127.0.0.1. Pages work,
  logging in works, starting an import says the queue is unavailable and keeps the job queued; once
  the broker answers again, the job page (which polls) sends it and it runs.
- PostgreSQL: a real gunicorn process against the test database; its connections are killed with
  `pg_terminate_backend`, then the database refuses connections (a restart, for this database only):
  requests fail fast with a 500 page, and the next request after the database is back works, with no
  restart of the web process (CONN_HEALTH_CHECKS).
- GitHub: 502s, a connection reset, a truncated body and both kinds of rate limit in a row, through the
  import service: the import waits, retries and ends complete.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg2
import pytest
import requests
import responses
from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from django.contrib.sessions.backends.db import SessionStore
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test import Client
from django.urls import reverse

from apps.accounts.models import Study, User
from apps.core.jobs import QUEUE_UNAVAILABLE
from apps.core.models import JobStatus
from apps.corpus.models import ImportJob, Item, ItemComment
from apps.corpus.params import GitHubRepoParams, GitHubUrlsParams
from apps.corpus.services import create_import_job, run_import
from tests.reliability.conftest import ROOT, celery_broker, database_url, needs_postgres, wait_for

API = "https://api.github.com"


def closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# --- Redis down ---------------------------------------------------------------------------------------


@pytest.fixture
def redis_down(settings: Any, tmp_path: Path) -> Iterator[str]:
    """The cache and the broker both on a closed port, as when the Redis server is stopped."""
    url = f"redis://127.0.0.1:{closed_port()}/7"
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": url}}
    settings.UPLOAD_ROOT = tmp_path / "uploads"
    with celery_broker(url):
        yield url


@pytest.mark.django_db(transaction=True)  # the job is sent on commit, as in production
def test_with_redis_down_pages_work_and_an_import_waits_then_starts_when_redis_is_back(
    redis_down: str, study: Study, lead: User, client: Client
) -> None:
    from django.core.cache import cache

    with pytest.raises(Exception):  # noqa: B017  (proof that the cache really is unreachable)
        cache.get("anything")
    lead.set_password("correct horse battery")
    lead.save()

    assert client.get(reverse("accounts:login")).status_code == 200
    login = client.post(reverse("accounts:login"), {"username": "lena", "password": "correct horse battery"})
    assert login.status_code == 302, "logging in must not depend on Redis"
    for name in ("corpus:item-list", "corpus:import", "export:export", "agreement:dashboard"):
        assert client.get(reverse(name, args=[study.slug])).status_code == 200, name

    started = time.monotonic()
    upload = SimpleUploadedFile(
        "items.csv", b"url,title\nhttps://example.org/1,One\nhttps://example.org/2,Two\n"
    )
    response = client.post(reverse("corpus:import", args=[study.slug]), {"kind": "file", "file": upload})
    assert time.monotonic() - started < 10  # Celery's short publish retries, not a hang
    job = ImportJob.objects.get(study=study)
    assert response.status_code == 302 and response["Location"].endswith(f"/import/{job.pk}/")
    assert (job.status, job.message) == (JobStatus.QUEUED, QUEUE_UNAVAILABLE)
    page = client.get(response["Location"])
    assert "The job queue is unavailable" in page.content.decode()
    job.refresh_from_db()
    assert job.status == JobStatus.QUEUED and not Item.objects.exists()  # still down: still waiting

    with celery_broker("memory://", eager=True):  # the broker is back (the task runs in-process here)
        client.get(response["Location"], headers={"HX-Request": "true"})  # the page's next poll
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED, job.error
    assert job.message != QUEUE_UNAVAILABLE
    assert sorted(Item.objects.values_list("url", flat=True)) == [
        "https://example.org/1",
        "https://example.org/2",
    ]


@pytest.mark.django_db(transaction=True)
def test_requeue_jobs_sends_every_job_the_broker_never_took(redis_down: str, study: Study) -> None:
    from django.core.management import CommandError, call_command

    from apps.corpus.services import submit_import

    jobs = [
        submit_import(
            study,
            GitHubUrlsParams(urls=(f"https://github.com/ex/repo/issues/{n}",), api_url="http://127.0.0.1:9"),
        )
        for n in (1, 2)
    ]
    assert all(ImportJob.objects.get(pk=j.pk).message == QUEUE_UNAVAILABLE for j in jobs)

    with pytest.raises(CommandError, match="still unavailable"):
        call_command("requeue_jobs")  # still down: nothing sent, nothing lost
    assert all(ImportJob.objects.get(pk=j.pk).status == JobStatus.QUEUED for j in jobs)

    with celery_broker("memory://", eager=True):
        call_command("requeue_jobs")
    # The jobs ran (and failed: nothing listens on port 9): each was sent exactly once and finished.
    for job in jobs:
        job.refresh_from_db()
        assert job.status == JobStatus.FAILED and "GitHub" in job.error, job.error


# --- PostgreSQL dropping and refusing connections ----------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def gunicorn(tmp_path: Path) -> Iterator[str]:
    """gunicorn (2 sync workers, persistent connections as in production) on the test database."""
    port = free_port()
    log = tmp_path / "gunicorn.log"
    env = {**os.environ, "DATABASE_URL": database_url(), "DEBUG": "0", "CONN_MAX_AGE": "600",
           "TAXONOMIST_VAR_DIR": str(tmp_path / "var")}  # fmt: skip
    env.pop("DJANGO_SETTINGS_MODULE", None)
    with log.open("wb") as handle:
        process = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "config.wsgi:application", "--bind", f"127.0.0.1:{port}",
             "--workers", "2", "--timeout", "30", "--graceful-timeout", "5",
             "--control-socket", str(tmp_path / "gunicorn.ctl")],
            cwd=ROOT, env=env, stdout=handle, stderr=subprocess.STDOUT,
        )  # fmt: skip
    base = f"http://127.0.0.1:{port}"

    def up() -> bool:
        if process.poll() is not None:
            pytest.fail(f"gunicorn exited:\n{log.read_text(errors='replace')[-3000:]}")
        try:
            return requests.get(f"{base}/login/", timeout=2).status_code == 200
        except (requests.ConnectionError, requests.Timeout):
            return False

    wait_for(up, 60, "gunicorn to answer", interval=0.2)
    yield base
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def session_for(user: User) -> str:
    """A logged-in session stored in the database (what logging in leaves behind)."""
    store = SessionStore()
    store[SESSION_KEY] = str(user.pk)
    store[BACKEND_SESSION_KEY] = settings.AUTHENTICATION_BACKENDS[0]
    store[HASH_SESSION_KEY] = user.get_session_auth_hash()
    store.save()
    return str(store.session_key)


def admin_connection() -> Any:
    s = connection.settings_dict
    conn = psycopg2.connect(
        dbname="postgres", user=s["USER"], password=s.get("PASSWORD") or None,
        host=s["HOST"] or "127.0.0.1", port=s["PORT"] or 5432,
    )  # fmt: skip
    conn.autocommit = True
    return conn


def terminate_backends(cursor: Any, name: str) -> int:
    """Terminate the database's other backends and wait until each has ended (PostgreSQL 14+'s timeout
    argument), as a restart or an operator's kill leaves them before the next request comes: a request
    within the instant between the signal and the backend's exit is one in flight, and may fail."""
    cursor.execute(
        "SELECT count(pg_terminate_backend(pid, 5000)) FROM pg_stat_activity"
        " WHERE datname = %s AND pid <> %s",
        [name, connection.connection.info.backend_pid],  # never the test's own connection
    )
    return int(cursor.fetchone()[0])


@needs_postgres[0]
@needs_postgres[1]
@pytest.mark.django_db(transaction=True)
def test_postgres_dropping_then_refusing_connections_gives_500s_then_recovers_without_a_restart(
    study: Study, lead: User, gunicorn: str
) -> None:
    connection.ensure_connection()
    page = f"{gunicorn}/studies/{study.slug}/items/"
    web = requests.Session()
    web.cookies.set("sessionid", session_for(lead), domain="127.0.0.1")

    def get() -> requests.Response:
        started = time.monotonic()
        response = web.get(page, timeout=15, allow_redirects=False)
        assert time.monotonic() - started < 10, "a request hung"
        return response

    for _ in range(4):  # both workers hold a persistent connection now
        assert get().status_code == 200
    name = str(connection.settings_dict["NAME"])
    admin = admin_connection()
    try:
        with admin.cursor() as cursor:
            assert terminate_backends(cursor, name) >= 1
            # Killed connections: the health check at the next request notices and reconnects.
            assert [get().status_code for _ in range(4)] == [200] * 4

            # The database goes away (a restart): requests fail fast with the 500 page, no hang.
            cursor.execute(f'ALTER DATABASE "{name}" WITH ALLOW_CONNECTIONS false')
            terminate_backends(cursor, name)
            failed = [get() for _ in range(4)]
            assert [r.status_code for r in failed] == [500] * 4
            assert "Server Error" in failed[0].text and name not in failed[0].text  # no details leak
            cursor.execute(f'ALTER DATABASE "{name}" WITH ALLOW_CONNECTIONS true')
            assert [get().status_code for _ in range(4)] == [200] * 4
    finally:
        with admin.cursor() as cursor:
            cursor.execute(f'ALTER DATABASE "{name}" WITH ALLOW_CONNECTIONS true')
        admin.close()


# --- GitHub misbehaving -------------------------------------------------------------------------------


def gh_issue(n: int, comments: int) -> dict[str, Any]:
    return {
        "number": n, "html_url": f"https://github.com/ex/repo/issues/{n}",
        "repository_url": f"{API}/repos/ex/repo", "title": f"Issue {n}", "body": f"Body {n}",
        "user": {"login": "u"}, "state": "closed", "labels": [], "comments": comments,
        "created_at": "2021-01-01T00:00:00Z",
    }  # fmt: skip


@pytest.mark.django_db
def test_github_502s_resets_truncated_bodies_and_rate_limits_in_a_row_end_in_a_complete_import(
    study: Study,
) -> None:
    page1 = f"{API}/repos/ex/repo/issues"
    page2 = f"{API}/repos/ex/repo/issues?page=2"
    comments = f"{API}/repos/ex/repo/issues/2/comments"
    first = [gh_issue(1, 0), gh_issue(2, 1)]
    second = [gh_issue(3, 0), {**gh_issue(4, 0), "pull_request": {"url": "x"}}]
    reset = int(time.time()) + 30
    waits: list[float] = []
    with responses.RequestsMock(assert_all_requests_are_fired=True) as rsps:
        rsps.get(page1, status=502, body="<html>Bad gateway</html>")
        rsps.get(page1, body=requests.ConnectionError("Connection reset by peer"))
        rsps.get(page1, body=json.dumps(first)[:40], content_type="application/json")  # cut short
        rsps.get(page1, status=403, json={"message": "API rate limit exceeded"},
                 headers={"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(reset)})  # fmt: skip
        rsps.get(page1, status=429, json={"message": "slow down"}, headers={"Retry-After": "7"})
        rsps.get(page1, json=first, headers={"Link": f'<{page2}>; rel="next"'})
        rsps.get(comments, status=503)
        rsps.get(comments, json=[{"id": 21, "user": {"login": "v"}, "body": "same here"}])
        rsps.get(page2, status=502)
        rsps.get(page2, json=second)
        # no_links: this test is about the issue list's faults; fix evidence has its own (tests/corpus)
        job = create_import_job(study, GitHubRepoParams(repo="ex/repo", state="all", no_links=True))
        run_import(job, environ={}, sleep=waits.append)

    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED, job.error
    assert (job.created, job.filtered, job.failed) == (3, 1, 0)
    assert job.waiting_until is None
    assert sorted(Item.objects.values_list("url", flat=True)) == [
        f"https://github.com/ex/repo/issues/{n}" for n in (1, 2, 3)
    ]
    assert list(ItemComment.objects.values_list("body", flat=True)) == ["same here"]
    assert 7.0 in waits and any(w >= 25 for w in waits)  # Retry-After obeyed, the reset waited out
    assert len(waits) >= 7  # one pause before every retry
