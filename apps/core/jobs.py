"""The life of a background job: claim, progress, heartbeat, finish, and telling a dead job from a live one.

Generic over :class:`apps.core.models.Job`: nothing here knows about imports, exports or agreement. Every
kind of job registers itself (:func:`register_kind`, from its app's ``ready()``) with its model and its
Celery task, so that one mechanism shows every kind as stalled, resends it (:func:`requeue_stalled`,
``manage.py requeue_jobs``) and cleans up after it; a job model that is not registered is an error
(:func:`check_registered`, run by ``requeue_jobs`` and the tests).

A job row is driven either by a Celery worker (started from the browser or the API) or in the
foreground by a management command; both go through :func:`run_job`, so the row looks the same
whichever way it ran.

Contracts:

- progress is written at most every ``interval`` seconds (0.5 s by default) so that a fast loop does
  not turn into a write per row, and at once for state changes (start, wait, finish);
- ``heartbeat_at`` is refreshed with every progress write; a *running* job whose heartbeat is older
  than :func:`stale_after` (``settings.JOB_STALE_MINUTES``, default 10 minutes) and that is not in an
  announced wait (``waiting_until`` in the future, import jobs only) is *stalled*: its worker died
  (SIGKILL, OOM, a redeploy). So is a *queued* job that no worker took within
  :func:`queued_stale_after` (``settings.JOB_QUEUED_STALE_MINUTES``, default 60 minutes: longer, since
  a queued job may rightly wait behind a long one on a single worker) since it was created or last sent
  (``heartbeat_at`` of a queued job): its message never reached the broker, or was lost with it. A
  stalled job can be claimed again (:func:`claim_job`) or resent, by ``manage.py requeue_jobs`` or by
  every worker as it starts (:func:`requeue_every_kind`, on Celery's ``worker_ready``);
- progress writes use ``UPDATE ... WHERE pk`` on the job's own fields only, outside any transaction
  the work opens, so a browser polling the job sees them while the work goes on;
- a job is sent to the broker by :func:`enqueue`; when the broker (Redis) cannot be reached the job
  stays *queued* with the message :data:`QUEUE_UNAVAILABLE`, and :func:`requeue_unsent` sends it
  again once the broker is back (the job's page does so while it polls; ``manage.py requeue_jobs``
  does it for every job of every kind, with the stalled ones). A message sent twice is harmless:
  :func:`claim_job` lets one run.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.apps import apps
from django.conf import settings
from django.db.models import Q
from django.utils import timezone
from kombu.exceptions import OperationalError

from apps.core import generations
from apps.core.models import Job, JobStatus

logger = logging.getLogger(__name__)

DEFAULT_INTERVAL = 0.5
_BASE_FIELDS = ("progress_done", "progress_total", "message", "heartbeat_at")
_MESSAGE_MAX = 500
MAX_ERRORS = 50
QUEUE_UNAVAILABLE = "The job queue is unavailable: this job will start once the queue is back."


class JobFailed(Exception):
    """An expected failure (bad input, a rejected token): the job ends *failed* with this message.

    `errors` are row-level details the caller may store (see ImportJob.errors).
    """

    def __init__(self, message: str, errors: Iterable[dict[str, Any]] = ()) -> None:
        super().__init__(message)
        self.errors = list(errors)


def stale_after() -> timedelta:
    """How long a running job may go without a heartbeat before it counts as stalled."""
    return timedelta(minutes=float(getattr(settings, "JOB_STALE_MINUTES", 10)))


def queued_stale_after() -> timedelta:
    """How long a queued job may wait for a worker before it counts as stalled (its message lost)."""
    return timedelta(minutes=float(getattr(settings, "JOB_QUEUED_STALE_MINUTES", 60)))


def is_stalled(job: Job, now: datetime | None = None) -> bool:
    """True for a running job whose worker stopped beating, or a queued job no worker took in time
    (see the module docstring)."""
    now = now or timezone.now()
    if job.status == JobStatus.QUEUED:
        return now - (job.heartbeat_at or job.created_at) > queued_stale_after()
    if job.status != JobStatus.RUNNING:
        return False
    waiting_until: datetime | None = getattr(job, "waiting_until", None)
    if waiting_until is not None and waiting_until > now:
        return False
    last = job.heartbeat_at or job.started_at or job.created_at
    if waiting_until is not None and waiting_until > last:
        last = waiting_until
    return now - last > stale_after()


def display_status(job: Job, now: datetime | None = None) -> str:
    """The status a person should see: `stalled` for a dead running job, else the stored status."""
    return "stalled" if is_stalled(job, now) else str(job.status)


def stalled_q(model: type[Job], now: datetime | None = None, *, queued: bool = False) -> Q:
    """A filter matching the stalled running jobs of `model`, and with `queued` the stalled queued ones
    too (:func:`is_stalled` for one job)."""
    cutoff = (now or timezone.now()) - stale_after()
    condition = Q(status=JobStatus.RUNNING) & (
        Q(heartbeat_at__lt=cutoff) | Q(heartbeat_at__isnull=True, started_at__lt=cutoff)
    )
    if any(field.name == "waiting_until" for field in model._meta.get_fields()):
        condition &= Q(waiting_until__isnull=True) | Q(waiting_until__lt=cutoff)
    if queued:
        queued_cutoff = (now or timezone.now()) - queued_stale_after()
        condition |= Q(status=JobStatus.QUEUED) & (
            Q(heartbeat_at__lt=queued_cutoff) | Q(heartbeat_at__isnull=True, created_at__lt=queued_cutoff)
        )
    return condition


def claim_job[J: Job](model: type[J], pk: int, task_id: str = "") -> J | None:
    """Mark job `pk` running and return it, if nobody else is running it; else None.

    A queued job, or a stalled running one (a redelivered Celery message after the worker died),
    can be claimed; a live running job or a finished one cannot. The check and the write are one
    UPDATE, so two workers given the same message cannot both run it.
    """
    now = timezone.now()
    claimable = Q(status=JobStatus.QUEUED) | stalled_q(model, now)
    changes: dict[str, Any] = {"status": JobStatus.RUNNING, "started_at": now, "heartbeat_at": now}
    if task_id:
        changes["task_id"] = task_id[:64]
    if model._default_manager.filter(claimable, pk=pk).update(**changes) == 0:
        return None
    return model._default_manager.get(pk=pk)


def enqueue(task: Any, job: Job, *, retry: bool = True) -> bool:
    """Send `task(job.pk)` to the Celery broker; True when the broker took it.

    When the broker cannot be reached (Redis down: kombu's OperationalError, after Celery's own short
    publish retries unless `retry` is False), the job stays queued with the message
    :data:`QUEUE_UNAVAILABLE`, a warning is logged and False is returned: the request that started the
    job still gets its page, and :func:`requeue_unsent` sends the job later.
    """
    try:
        task.apply_async((job.pk,), retry=retry)
    except OperationalError as exc:
        logger.warning("job queue unavailable: %s %s stays queued (%s)", type(job).__name__, job.pk, exc)
        type(job)._default_manager.filter(pk=job.pk, status=JobStatus.QUEUED).update(
            message=QUEUE_UNAVAILABLE
        )
        job.message = QUEUE_UNAVAILABLE
        return False
    return True


def requeue_unsent(
    model: type[Job], task: Any, *, pks: Iterable[int] | None = None, older_than: timedelta | None = None
) -> int:
    """Send again the queued jobs of `model` the broker never took (message :data:`QUEUE_UNAVAILABLE`),
    oldest first; with `older_than`, also every job queued for longer than that (a message lost when
    Redis restarted without persistence). `pks` limits it to those jobs. Stops at the first job that
    still cannot be sent (the broker is still down); returns how many were sent.
    """
    condition = Q(message=QUEUE_UNAVAILABLE)
    if older_than is not None:
        condition |= Q(created_at__lt=timezone.now() - older_than)
    jobs = model._default_manager.filter(condition, status=JobStatus.QUEUED)
    if pks is not None:
        jobs = jobs.filter(pk__in=list(pks))
    sent = 0
    for job in jobs.order_by("created_at", "pk"):
        if not enqueue(task, job, retry=False):
            break
        model._default_manager.filter(pk=job.pk, status=JobStatus.QUEUED, message=QUEUE_UNAVAILABLE).update(
            message=""
        )
        sent += 1
    return sent


# --- the kinds of job ------------------------------------------------------------------------------


@dataclass(frozen=True)
class JobKind:
    """One kind of background job: its model, the Celery task that runs one (``task(job_id)``), and what
    to clean up when a stalled job of the kind is resent (`discard`: the files a killed worker left)."""

    name: str
    model: type[Job]
    task: Any
    discard: Callable[[Any], None] | None = None
    writes: bool = False  # writes into its study: refused once archived; its figures forgotten (`run_job`)


_KINDS: dict[str, JobKind] = {}


def register_kind(kind: JobKind) -> None:
    """Add a kind of job (an app's ``ready()`` calls this). Registering the same model again replaces it."""
    for name, known in list(_KINDS.items()):
        if known.model is kind.model:
            del _KINDS[name]
    _KINDS[kind.name] = kind


def job_kinds() -> list[JobKind]:
    """Every registered kind, by name."""
    return [_KINDS[name] for name in sorted(_KINDS)]


def job_models() -> list[type[Job]]:
    """Every concrete model of a job installed (whether its kind was registered or not)."""
    return [model for model in apps.get_models() if issubclass(model, Job)]


def check_registered() -> None:
    """Raise ImproperlyConfigured naming each job model whose kind nobody registered: such jobs could
    stall and never be resent."""
    from django.core.exceptions import ImproperlyConfigured

    registered = {kind.model for kind in _KINDS.values()}
    missing = [model._meta.label for model in job_models() if model not in registered]
    if missing:
        raise ImproperlyConfigured(
            f"job models without a registered kind (apps.core.jobs.register_kind): {', '.join(missing)}"
        )


RESENT = "Resent: its worker stopped (killed or restarted) or its message never reached the queue."


def requeue_stalled(kind: JobKind, *, older_than: timedelta | None = None) -> tuple[int, int]:
    """Send again every job of `kind` that needs it; return (sent, still unsent).

    That is: queued jobs the broker never took (:data:`QUEUE_UNAVAILABLE`), stalled queued and running
    jobs (:func:`is_stalled`), and with `older_than` every job queued for longer than that. A stalled
    running job is put back to *queued* first (with the message :data:`RESENT`; its `discard` cleans up
    what the dead worker left) unless it came alive meanwhile; every job sent gets ``heartbeat_at`` = now,
    so it counts as stalled again only if this message is lost too. Stops at the first job the broker
    refuses (it is still down); the rest count as unsent.
    """
    model = kind.model
    manager = model._default_manager
    now = timezone.now()
    condition = Q(status=JobStatus.QUEUED, message=QUEUE_UNAVAILABLE) | stalled_q(model, now, queued=True)
    if older_than is not None:
        condition |= Q(status=JobStatus.QUEUED, created_at__lt=now - older_than)
    sent = 0
    for job in manager.filter(condition).order_by("created_at", "pk"):
        if job.status == JobStatus.RUNNING:
            revived = manager.filter(stalled_q(model, now), pk=job.pk).update(
                status=JobStatus.QUEUED, message=RESENT, heartbeat_at=timezone.now()
            )
            if not revived:  # it came alive, or another requeue took it
                continue
            job.refresh_from_db()
            if kind.discard is not None:
                kind.discard(job)
        else:
            manager.filter(pk=job.pk, status=JobStatus.QUEUED).update(heartbeat_at=timezone.now())
        if not enqueue(kind.task, job, retry=False):
            break
        manager.filter(pk=job.pk, status=JobStatus.QUEUED, message=QUEUE_UNAVAILABLE).update(message="")
        sent += 1
    unsent = manager.filter(status=JobStatus.QUEUED, message=QUEUE_UNAVAILABLE).count()
    return sent, unsent


def requeue_every_kind(*, older_than: timedelta | None = None) -> list[tuple[JobKind, int, int]]:
    """:func:`requeue_stalled` for every registered kind, in name order: (kind, sent, still unsent)."""
    return [(kind, *requeue_stalled(kind, older_than=older_than)) for kind in job_kinds()]


def requeue_on_worker_start(**_: Any) -> None:
    """Celery's ``worker_ready``: a worker that starts (after a crash, a redeploy, a broker outage) sends
    what needs sending, so that no job waits for an operator's ``requeue_jobs``. Never stops the worker:
    a failure is logged."""
    try:
        for kind, sent, unsent in requeue_every_kind():
            if sent or unsent:
                logger.warning("%s jobs: %s resent, %s still waiting for the queue", kind.name, sent, unsent)
    except Exception:
        logger.exception("resending stalled jobs when the worker started failed")


# --- progress -------------------------------------------------------------------------------------


class JobProgress:
    """Progress reporting for one job: counts in memory, written at most every `interval` seconds.

    `fields` names extra fields of the job to write along with the progress (an import job's
    counts). `echo` receives a one-line progress text on every write (a command passes a stderr
    writer); `clock` is injectable for tests.
    """

    def __init__(
        self,
        job: Job,
        *,
        fields: Iterable[str] = (),
        interval: float = DEFAULT_INTERVAL,
        echo: Callable[[str], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.job = job
        waiting = ("waiting_until",) if hasattr(job, "waiting_until") else ()
        self.fields = tuple(dict.fromkeys((*_BASE_FIELDS, *waiting, *fields)))
        self.interval = interval
        self.echo = echo
        self._clock = clock
        self._last_write: float | None = None
        self.writes = 0
        # The study a writing job writes into (set by `run_job`): its cached figures are forgotten with
        # every progress write, so that its pages count what the job has committed so far.
        self.writes_into: int | None = None

    # --- progress ---------------------------------------------------------------------------------

    def set_total(self, total: int | None) -> None:
        self.job.progress_total = total
        self.flush()

    def advance(self, count: int = 1, message: str | None = None) -> None:
        self.job.progress_done += count
        if message is not None:
            self.job.message = message[:_MESSAGE_MAX]
        self.save()

    def note(self, message: str) -> None:
        """A message worth showing now (a phase change): written at once."""
        self.job.message = message[:_MESSAGE_MAX]
        self.flush()

    def wait(self, seconds: float, reason: str) -> None:
        """An announced pause (a rate limit): the job is alive until it ends. Written at once."""
        until = timezone.now() + timedelta(seconds=seconds)
        if hasattr(self.job, "waiting_until"):
            self.job.waiting_until = until
        self.job.message = f"Waiting {seconds:.0f} s: {reason}"[:_MESSAGE_MAX]
        self.flush()

    def save(self) -> None:
        """Write the progress if the last write is older than `interval` seconds."""
        now = self._clock()
        if self._last_write is not None and now - self._last_write < self.interval:
            return
        self.flush()

    def flush(self) -> None:
        """Write the progress now."""
        job = self.job
        job.heartbeat_at = timezone.now()
        waiting_until: datetime | None = getattr(job, "waiting_until", None)
        if waiting_until is not None and waiting_until <= job.heartbeat_at:
            job.waiting_until = None  # type: ignore[attr-defined]  # only import jobs have the field
        values = {name: getattr(job, name) for name in self.fields}
        type(job)._default_manager.filter(pk=job.pk).update(**values)
        self._last_write = self._clock()
        self.writes += 1
        if self.writes_into is not None:
            generations.figures_changed(self.writes_into)
        if self.echo is not None:
            self.echo(self.line())

    def line(self) -> str:
        job = self.job
        done = f"{job.progress_done}/{job.progress_total}" if job.progress_total else f"{job.progress_done}"
        percent = f" ({job.percent} %)" if job.progress_total else ""
        return f"[{done}{percent}] {job.message}".rstrip()

    # --- state changes ----------------------------------------------------------------------------

    def finish(self, status: str, message: str = "", error: str = "") -> None:
        job = self.job
        job.status = status
        job.finished_at = timezone.now()
        if message:
            job.message = message[:_MESSAGE_MAX]
        job.error = error
        if hasattr(job, "waiting_until"):
            job.waiting_until = None
        self.fields = tuple(dict.fromkeys((*self.fields, "status", "finished_at", "error")))
        self.flush()


def run_job[J: Job](
    job: J,
    work: Callable[[JobProgress], str],
    *,
    fields: Iterable[str] = (),
    echo: Callable[[str], None] | None = None,
    interval: float = DEFAULT_INTERVAL,
) -> J:
    """Run `work(progress)` as job `job` and record how it ended; return the job.

    The job must already be claimed (running) or queued; a queued job is marked running here.
    `work` returns the final message. :class:`JobFailed` ends the job *failed* with its message
    (expected failures: bad input, a rejected token); any other exception also ends it *failed*
    (with the exception's type and text) and is raised again, so a worker logs it.
    """
    progress = JobProgress(job, fields=fields, echo=echo, interval=interval)
    if _kind_of(job).writes:
        progress.writes_into = getattr(job, "study_id", None)
    if (refusal := _archived_refusal(job)) is not None:
        progress.finish(JobStatus.FAILED, message=refusal, error=refusal)
        return job
    if job.status != JobStatus.RUNNING:
        now = timezone.now()
        job.status = JobStatus.RUNNING
        job.started_at = now
        job.finished_at = None
        type(job)._default_manager.filter(pk=job.pk).update(
            status=job.status, started_at=now, finished_at=None, heartbeat_at=now
        )
    try:
        message = work(progress)
    except JobFailed as exc:
        _record_errors(job, exc.errors, progress)
        progress.finish(JobStatus.FAILED, message=str(exc), error=str(exc))
        return job
    except BaseException as exc:
        text = f"{type(exc).__name__}: {exc}"
        progress.finish(JobStatus.FAILED, message="Stopped by an internal error.", error=text)
        raise
    progress.finish(JobStatus.SUCCEEDED, message=message)
    return job


def _kind_of(job: Job) -> JobKind:
    """The registered kind of `job`, or a reading kind of no name for a model nobody registered (tests)."""
    found = next((k for k in _KINDS.values() if k.model is type(job)), None)
    return found or JobKind("", type(job), None)


def _archived_refusal(job: Job) -> str | None:
    """Why a job of a writing kind may not run (its study was archived after the job was queued), else
    None. The study is read again: the job's copy may predate the archive."""
    study_id = getattr(job, "study_id", None)
    if not _kind_of(job).writes or study_id is None:
        return None
    field = next(f for f in type(job)._meta.get_fields() if f.name == "study")  # the concrete model's FK
    if field.related_model is None:
        return None
    studies = field.related_model._default_manager
    fresh = studies.filter(pk=study_id).values_list("archived_at", "slug").first()
    if fresh is None or fresh[0] is None:
        return None
    return (
        f"Not run: study {fresh[1]} was archived after this job was queued. "
        "Unarchive it in Settings, then run it again."
    )


def _record_errors(job: Job, errors: list[dict[str, Any]], progress: JobProgress) -> None:
    """Keep a failure's row-level errors on jobs that have an `errors` list (the first MAX_ERRORS)."""
    if errors and hasattr(job, "errors"):
        job.errors = [*job.errors, *errors][:MAX_ERRORS]
        progress.fields = tuple(dict.fromkeys((*progress.fields, "errors")))
