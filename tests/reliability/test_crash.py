"""A Celery worker killed with SIGKILL in the middle of an import and of an export, then the work rerun.

These drive the real path: the service queues the job through Redis, a `celery worker --pool=solo`
subprocess runs it against the test database, the test kills it mid-job, and a fresh worker finishes.
An import's items come from a local fake of the GitHub REST API on 127.0.0.1 that serves its pages
slowly, so that the kill lands after some batches have committed and before the last.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from apps.accounts.models import Study, User
from apps.core.jobs import is_stalled
from apps.core.models import JobStatus
from apps.corpus.models import ImportJob, ImportKind, Item, ItemComment
from apps.corpus.params import params_from_json
from apps.corpus.services import restart_import, submit_import
from apps.export import services as export_services
from apps.export.models import ExportJob
from apps.export.rows import ExportOptions
from apps.export.tasks import export_dataset_task
from tests.export.conftest import build_tosem_study
from tests.reliability.conftest import Worker, needs_postgres, wait_for

pytestmark = [*needs_postgres, pytest.mark.django_db(transaction=True)]

PAGES = 30
PER_PAGE = 25
ISSUES = PAGES * PER_PAGE


def issue(n: int, api: str) -> dict[str, Any]:
    return {
        "number": n,
        "html_url": f"https://github.com/ex/repo/issues/{n}",
        "repository_url": f"{api}/repos/ex/repo",
        "title": f"Issue {n}: allreduce hangs on rank {n % 8}",
        "body": f"Training hangs after epoch {n}.\n\n```python\nimport torch\n```\n",
        "user": {"login": f"user{n % 17}"},
        "state": "closed",
        "labels": [{"name": "module: ddp"}],
        "comments": n % 3,
        "created_at": "2021-03-01T10:00:00Z",
        "updated_at": "2021-03-02T10:00:00Z",
    }


def comment(n: int, c: int) -> dict[str, Any]:
    return {"id": n * 10 + c, "user": {"login": "helper"}, "body": f"Comment {c} on {n}",
            "created_at": "2021-03-01T11:00:00Z"}  # fmt: skip


class FakeGitHub:
    """`/repos/ex/repo/issues?page=N` (PER_PAGE issues a page, `delay` seconds each, Link pagination)
    and `/repos/ex/repo/issues/N/comments` and `/timeline` (empty), on 127.0.0.1 only."""

    def __init__(self, delay: float) -> None:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                fake.handle(self)

            def log_message(self, *args: Any) -> None:
                pass

        self.delay = delay
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def handle(self, request: BaseHTTPRequestHandler) -> None:
        parts = urlsplit(request.path)
        headers: dict[str, str] = {}
        if parts.path == "/repos/ex/repo/issues":
            page = int(parse_qs(parts.query).get("page", ["1"])[0])
            time.sleep(self.delay)
            first = (page - 1) * PER_PAGE + 1
            body: Any = [issue(n, self.url) for n in range(first, min(first + PER_PAGE, ISSUES + 1))]
            if page < PAGES:
                headers["Link"] = f'<{self.url}/repos/ex/repo/issues?page={page + 1}>; rel="next"'
        elif parts.path.startswith("/repos/ex/repo/issues/") and parts.path.endswith("/comments"):
            n = int(parts.path.split("/")[-2])
            body = [comment(n, c) for c in range(1, n % 3 + 1)]
        elif parts.path.startswith("/repos/ex/repo/issues/") and parts.path.endswith("/timeline"):
            body = []  # fix evidence: no linked pull request or commit (its own tests are in tests/corpus)
        else:
            request.send_response(404)
            request.end_headers()
            return
        data = json.dumps(body).encode()
        request.send_response(200)
        request.send_header("Content-Type", "application/json")
        request.send_header("Content-Length", str(len(data)))
        for name, value in headers.items():
            request.send_header(name, value)
        request.end_headers()
        request.wfile.write(data)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def fake_github() -> Iterator[FakeGitHub]:
    server = FakeGitHub(delay=0.2)
    yield server
    server.close()


def make_stalled[J: (ImportJob, ExportJob)](job: J) -> J:
    """What JOB_STALE_MINUTES of silence does to a job whose worker died, without waiting for it."""
    long_ago = timezone.now() - timedelta(hours=1)
    type(job)._default_manager.filter(pk=job.pk).update(heartbeat_at=long_ago, started_at=long_ago)
    job.refresh_from_db()
    assert is_stalled(job)
    return job


def test_an_import_killed_mid_job_and_restarted_ends_with_exactly_the_right_items(
    study: Study, lead: User, fake_github: FakeGitHub, start_worker: Callable[..., Worker]
) -> None:
    first_worker = start_worker()
    params = {"repo": "ex/repo", "state": "all", "api_url": fake_github.url}
    job = submit_import(study, params_from_json(ImportKind.GITHUB, params), user=lead)

    # Killed once some batches are committed (batches flush every 3 s) and well before the end.
    wait_for(lambda: Item.objects.filter(study=study).exists(), 60, "the first committed batch")
    first_worker.kill()
    half = Item.objects.filter(study=study).count()
    assert 0 < half < ISSUES
    job.refresh_from_db()
    assert job.status == JobStatus.RUNNING  # nobody recorded the end: the worker died

    start_worker()
    rerun = restart_import(make_stalled(job), lead)  # the "Run this import again" button
    wait_for(lambda: ImportJob.objects.get(pk=rerun.pk).is_finished, 120, "the restarted import to finish")

    rerun.refresh_from_db()
    job.refresh_from_db()
    assert rerun.status == JobStatus.SUCCEEDED, rerun.error
    assert job.status == JobStatus.FAILED and "Stalled" in job.error
    urls = list(Item.objects.filter(study=study).values_list("url", flat=True))
    assert len(urls) == len(set(urls)) == ISSUES
    assert set(urls) == {f"https://github.com/ex/repo/issues/{n}" for n in range(1, ISSUES + 1)}
    assert rerun.created + rerun.unchanged + rerun.updated == ISSUES
    assert rerun.created == ISSUES - half
    comments = ItemComment.objects.filter(item__study=study)
    assert comments.count() == sum(n % 3 for n in range(1, ISSUES + 1))
    assert comments.values("item_id", "external_id").distinct().count() == comments.count()
    # The render pass is a task of its own, queued when the import succeeded: it finishes too.
    wait_for(lambda: not Item.objects.filter(study=study, body_html="").exists(), 60, "the render pass")


def test_an_export_killed_mid_write_offers_no_file_and_its_redelivery_writes_the_whole_one(
    study: Study, lead: User, client: Client, start_worker: Callable[..., Worker], settings: Any
) -> None:
    build_tosem_study(study)
    slow_worker = start_worker(slow_export=0.05)
    job = export_services.submit_export(study, ExportOptions(format="csv"), user=lead)
    directory = Path(settings.EXPORT_ROOT) / study.slug

    def writing() -> bool:
        job.refresh_from_db()
        # the half-written file sits in the job's scratch folder (export_services.scratch_dir)
        parts = list(directory.glob(".job-*/*.part")) if directory.exists() else []
        return job.status == JobStatus.RUNNING and job.progress_done > 0 and bool(parts)

    wait_for(writing, 60, "the export to be half-way through its file")
    slow_worker.kill()
    job.refresh_from_db()
    assert job.progress_done < (job.progress_total or 0)

    client.force_login(lead)
    download = reverse("export:download", args=[study.slug, job.pk])
    assert not export_services.is_downloadable(job)
    assert client.get(download).status_code == 404
    final = directory / export_services.file_name(job)
    assert not final.exists()  # only the dead worker's .part file, in the job's scratch folder

    # Redis hands the unacknowledged message to a worker again (after its visibility timeout); the
    # job is stalled by then, so the new worker claims it and writes the file from scratch.
    start_worker()
    make_stalled(job)
    export_dataset_task.delay(job.pk)
    wait_for(lambda: ExportJob.objects.get(pk=job.pk).is_finished, 120, "the redelivered export")

    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED, job.error
    assert not list(directory.glob(".job-*"))  # the resend removed the dead worker's scratch folder
    expected = directory.parent / "expected.csv"
    written = export_services.write_export(study, ExportOptions(format="csv"), expected)
    assert final.read_bytes() == expected.read_bytes()
    assert job.row_count == written.rows and job.sha256 == export_services.sha256_of(final)
    response = client.get(download)
    assert response.status_code == 200
    assert b"".join(response.streaming_content) == expected.read_bytes()  # type: ignore[attr-defined]
