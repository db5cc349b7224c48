"""Job lifecycle: claiming, throttled progress, heartbeats, stalled jobs, how a job ends."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from apps.accounts.models import Study
from apps.core.jobs import (
    JobFailed,
    JobProgress,
    claim_job,
    display_status,
    is_stalled,
    run_job,
    stalled_q,
)
from apps.core.models import JobStatus
from apps.corpus.models import ImportJob, ImportKind

pytestmark = pytest.mark.django_db


@pytest.fixture
def job(study: Study) -> ImportJob:
    return ImportJob.objects.create(study=study, kind=ImportKind.FILE)


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_progress_is_written_at_most_every_half_second(job: ImportJob) -> None:
    clock = FakeClock()
    progress = JobProgress(job, clock=clock)
    progress.flush()

    with CaptureQueriesContext(connection) as queries:
        for _ in range(1000):  # a thousand rows in 0.3 s: no write
            progress.advance()
            clock.now += 0.0003
        clock.now += 0.3
        progress.advance()  # 0.6 s after the last write: one write

    assert len(queries) == 1
    job.refresh_from_db()
    assert job.progress_done == 1001
    assert job.heartbeat_at is not None


def test_progress_lines_go_to_the_echo(job: ImportJob) -> None:
    lines: list[str] = []
    progress = JobProgress(job, echo=lines.append)
    progress.set_total(200)
    progress.job.progress_done = 50
    progress.note("Importing")

    assert lines[-1] == "[50/200 (25 %)] Importing"


def test_a_queued_job_is_claimed_once(job: ImportJob) -> None:
    first = claim_job(ImportJob, job.pk, task_id="abc")
    second = claim_job(ImportJob, job.pk, task_id="def")

    assert first is not None and first.status == JobStatus.RUNNING and first.task_id == "abc"
    assert second is None


def test_a_finished_job_is_never_claimed_again(job: ImportJob) -> None:
    ImportJob.objects.filter(pk=job.pk).update(status=JobStatus.SUCCEEDED)
    assert claim_job(ImportJob, job.pk) is None


def test_a_running_job_without_heartbeat_for_too_long_is_stalled_and_claimable(job: ImportJob) -> None:
    long_ago = timezone.now() - timedelta(minutes=30)
    ImportJob.objects.filter(pk=job.pk).update(
        status=JobStatus.RUNNING, started_at=long_ago, heartbeat_at=long_ago
    )
    job.refresh_from_db()

    assert is_stalled(job)
    assert display_status(job) == "stalled"
    assert list(ImportJob.objects.filter(stalled_q(ImportJob))) == [job]
    assert claim_job(ImportJob, job.pk) is not None


def test_a_job_with_a_recent_heartbeat_is_alive(job: ImportJob) -> None:
    ImportJob.objects.filter(pk=job.pk).update(status=JobStatus.RUNNING, heartbeat_at=timezone.now())
    job.refresh_from_db()

    assert not is_stalled(job)
    assert display_status(job) == "running"
    assert claim_job(ImportJob, job.pk) is None


def test_a_job_waiting_out_a_rate_limit_is_not_stalled(job: ImportJob) -> None:
    long_ago = timezone.now() - timedelta(minutes=30)
    ImportJob.objects.filter(pk=job.pk).update(
        status=JobStatus.RUNNING, heartbeat_at=long_ago, waiting_until=timezone.now() + timedelta(minutes=20)
    )
    job.refresh_from_db()

    assert not is_stalled(job)
    assert not ImportJob.objects.filter(stalled_q(ImportJob)).exists()


def test_the_stale_threshold_comes_from_settings(job: ImportJob, settings: object) -> None:
    ImportJob.objects.filter(pk=job.pk).update(
        status=JobStatus.RUNNING, heartbeat_at=timezone.now() - timedelta(minutes=3)
    )
    job.refresh_from_db()
    assert not is_stalled(job)
    settings.JOB_STALE_MINUTES = 2  # type: ignore[attr-defined]
    assert is_stalled(job)


def test_a_wait_is_recorded_with_its_end_and_cleared_after(job: ImportJob) -> None:
    progress = JobProgress(job)
    progress.wait(120, "rate limit exhausted (403)")

    job.refresh_from_db()
    assert job.waiting_until is not None
    assert timedelta(seconds=100) < job.waiting_until - timezone.now() <= timedelta(seconds=120)
    assert job.message == "Waiting 120 s: rate limit exhausted (403)"

    progress.job.waiting_until = timezone.now() - timedelta(seconds=1)
    progress.flush()
    job.refresh_from_db()
    assert job.waiting_until is None


def test_run_job_records_success_with_its_message(job: ImportJob) -> None:
    def work(progress: JobProgress) -> str:
        progress.advance(3)
        return "3 things done."

    run_job(job, work)

    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED
    assert job.message == "3 things done." and job.progress_done == 3
    assert job.started_at is not None and job.finished_at is not None and job.finished_at >= job.started_at


def test_an_expected_failure_ends_the_job_failed_with_its_errors(job: ImportJob) -> None:
    def work(progress: JobProgress) -> str:
        raise JobFailed("token rejected", [{"where": "GitHub", "message": "401"}])

    run_job(job, work, fields=["errors"])

    job.refresh_from_db()
    assert (job.status, job.error) == (JobStatus.FAILED, "token rejected")
    assert job.errors == [{"where": "GitHub", "message": "401"}]


def test_an_unexpected_error_fails_the_job_and_is_raised_again(job: ImportJob) -> None:
    def work(progress: JobProgress) -> str:
        raise ZeroDivisionError("oops")

    with pytest.raises(ZeroDivisionError):
        run_job(job, work)

    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert job.error == "ZeroDivisionError: oops"
