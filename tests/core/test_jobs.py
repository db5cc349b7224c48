"""One mechanism for every kind of job: each job model is registered, shows as stalled when its worker died
or its message never reached the broker, and `requeue_jobs` runs it to its end.

The cases are built per model from `apps.core.jobs.job_models()` (every concrete model with the job
fields), so a kind added later without a registration, or without a case here, fails these tests.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from celery.signals import worker_ready
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone

from apps.agreement.models import AgreementSnapshot
from apps.core import jobs
from apps.core.jobs import QUEUE_UNAVAILABLE, check_registered, display_status, job_kinds, job_models
from apps.core.models import Job, JobStatus
from apps.corpus.models import ImportJob
from apps.corpus.params import FileParams
from apps.corpus.services import create_import_job
from apps.export.models import ExportJob
from apps.export.services import create_export, is_downloadable, parse_options
from apps.raters.models import ModelRun
from apps.raters.runs import create_model_run
from apps.raters.services import RaterSettings, add_model_rater
from tests.api.world import World
from tests.raters.fake_openai import FakeServer, fake_server


def import_job(world: World, tmp_path: Path) -> Job:
    upload = tmp_path / "items.csv"
    upload.write_text("url,title\nhttps://github.com/a/b/issues/77,Hang\n", encoding="utf-8")
    return create_import_job(world.study, FileParams(format="csv"), upload=upload)


def export_job(world: World, tmp_path: Path) -> Job:
    return create_export(world.study, parse_options(world.study, format="xlsx"), user=world.lead)


def agreement_job(world: World, tmp_path: Path) -> Job:
    params = {"kind": "dashboard", "level": None, "bootstrap": 10, "seed": 0}
    return AgreementSnapshot.objects.create(study=world.study, params=params, created_by=world.lead)


_SERVERS: list[tuple[Any, FakeServer]] = []  # the open context too: collecting it would stop the server


@pytest.fixture(scope="module", autouse=True)
def _close_the_fake_server() -> Iterator[None]:
    """Stop the module's fake server while its thread still runs. Left to the garbage collector at exit,
    its `shutdown()` waited for a serve loop that interpreter shutdown had already frozen: the pytest
    process printed its summary and never exited (CI's 90 minutes ran out)."""
    yield
    while _SERVERS:
        context, _ = _SERVERS.pop()
        context.__exit__(None, None, None)


def model_run_job(world: World, tmp_path: Path) -> Job:
    """A run of a model rater over round 1 against a local fake server (one per process, kept open)."""
    if not _SERVERS:
        context = fake_server(FakeServer())
        _SERVERS.append((context, context.__enter__()))
    settings = RaterSettings(kind="openai", base_url=_SERVERS[0][1].url, model="fake")
    rater = add_model_rater(world.study, "fake-llm", settings, actor=world.lead)
    return create_model_run(world.study, rater, round_number=1, actor=world.lead)


# One way to make a job of each model, and how to tell it did its work.
CASES: dict[type[Job], Callable[[World, Path], Job]] = {
    ImportJob: import_job,
    ExportJob: export_job,
    AgreementSnapshot: agreement_job,
    ModelRun: model_run_job,
}
DONE: dict[type[Job], Callable[[Any], bool]] = {
    ImportJob: lambda job: job.created == 1,
    ExportJob: is_downloadable,
    AgreementSnapshot: lambda job: bool(job.result.get("dimensions")),
    ModelRun: lambda job: job.asked > 0 and job.asked + job.reused == job.progress_total,
}


def test_every_job_model_has_a_registered_kind_and_a_case_here() -> None:
    check_registered()  # raises naming a model nobody registered
    models = set(job_models())
    assert {kind.model for kind in job_kinds()} == models
    assert set(CASES) == models, "add a case for the new kind of job to CASES and DONE"


def died(job: Job, minutes: float = 11) -> None:
    """What a worker killed while running `job` leaves: running, its last heartbeat long ago."""
    long_ago = timezone.now() - timedelta(minutes=minutes)
    type(job)._default_manager.filter(pk=job.pk).update(
        status=JobStatus.RUNNING, started_at=long_ago, heartbeat_at=long_ago
    )


def never_sent(job: Job, minutes: float = 61) -> None:
    """A job whose message the broker lost (a Redis restart without persistence): queued long ago."""
    type(job)._default_manager.filter(pk=job.pk).update(
        created_at=timezone.now() - timedelta(minutes=minutes)
    )


@pytest.mark.parametrize("model", job_models(), ids=lambda m: m.__name__)
@pytest.mark.parametrize("fate", [died, never_sent], ids=["worker-died", "message-lost"])
def test_a_job_of_every_kind_that_died_or_never_reached_the_broker_is_stalled_and_requeue_jobs_completes_it(
    model: type[Job], fate: Callable[[Job], None], world: World, tmp_path: Path, settings: Any
) -> None:
    job = CASES[model](world, tmp_path)
    fate(job)
    job.refresh_from_db()
    assert display_status(job) == "stalled"

    call_command("requeue_jobs")  # tests run tasks eagerly: the resent job runs here

    job.refresh_from_db()
    assert (job.status, job.error) == (JobStatus.SUCCEEDED, "")
    assert DONE[model](job)
    assert display_status(job) == "succeeded"


@pytest.mark.parametrize("model", job_models(), ids=lambda m: m.__name__)
def test_a_job_of_every_kind_still_within_its_timeout_is_left_alone(
    model: type[Job], world: World, tmp_path: Path
) -> None:
    job = CASES[model](world, tmp_path)
    died(job, minutes=1)

    call_command("requeue_jobs")

    job.refresh_from_db()
    assert job.status == JobStatus.RUNNING and display_status(job) == "running"


@pytest.mark.parametrize("model", job_models(), ids=lambda m: m.__name__)
def test_a_job_of_every_kind_the_queue_refused_is_sent_by_requeue_jobs(
    model: type[Job], world: World, tmp_path: Path
) -> None:
    job = CASES[model](world, tmp_path)
    type(job)._default_manager.filter(pk=job.pk).update(message=QUEUE_UNAVAILABLE)

    call_command("requeue_jobs")

    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED and DONE[model](job)


@pytest.mark.parametrize("model", job_models(), ids=lambda m: m.__name__)
def test_a_job_of_every_kind_queued_behind_a_long_one_is_not_stalled_before_its_longer_timeout(
    model: type[Job], world: World, tmp_path: Path
) -> None:
    """On a single worker a queued job may wait behind a 20-minute import: it is waiting, not lost."""
    job = CASES[model](world, tmp_path)
    never_sent(job, minutes=20)
    job.refresh_from_db()
    assert display_status(job) == "queued"

    call_command("requeue_jobs")

    job.refresh_from_db()
    assert job.status == JobStatus.QUEUED


@pytest.mark.parametrize("model", job_models(), ids=lambda m: m.__name__)
def test_a_worker_that_starts_resends_the_stalled_jobs_of_every_kind(
    model: type[Job], world: World, tmp_path: Path
) -> None:
    job = CASES[model](world, tmp_path)
    died(job)

    worker_ready.send(sender=None)  # what Celery sends once a worker is up

    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED and DONE[model](job)


def test_requeue_jobs_names_an_unregistered_job_model_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jobs, "_KINDS", {})
    with pytest.raises(CommandError, match="job models without a registered kind"):
        call_command("requeue_jobs")
