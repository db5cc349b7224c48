"""Import jobs: record the request, queue it, run it (in a worker or in the foreground of a command).

:func:`create_import_job` records the request (its options, one of the dataclasses of
:mod:`apps.corpus.params`, in the job's ``params``; never a secret),
:func:`submit_import` stores an upload and queues the job for Celery, :func:`run_import` does the
work: the same function the Celery task and the import commands call, so a job looks the same
whichever way it ran. Each source turns into :class:`ItemRecord` objects for :func:`upsert_records`;
skipped and failed items are counted on the job with their row or URL.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, Literal

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from apps.accounts.models import Study, User
from apps.core.jobs import (
    MAX_ERRORS,
    QUEUE_UNAVAILABLE,
    JobFailed,
    JobProgress,
    claim_job,
    enqueue,
    is_stalled,
    requeue_unsent,
    run_job,
)
from apps.core.models import JobStatus

from ..github import GitHubClient, GitHubError, GitHubResult, TokenRejected
from ..models import ImportJob, Item
from ..params import (
    FileParams,
    GitHubQueryParams,
    GitHubRepoParams,
    GitHubUrlsParams,
    GitLabParams,
    HydrateParams,
    ImportParams,
    ImportParamsError,
    JiraParams,
    SoDumpParams,
    StackExchangeParams,
    params_from_json,
)
from ..parsing import ImportFileError, check_file, detect_format, iter_records
from ..records import ItemRecord
from ..so_dump import DumpError, PostsDumpReader
from ..stackexchange import KeyRejected, StackExchangeClient, StackExchangeError
from . import pg
from .hydrate import hydrate_items
from .render import render_pending
from .search_index import fill_search_vectors, fill_search_vectors_soon
from .trackers import count_results, import_gitlab, import_jira, read_url_list, rules_or_fail
from .upsert import UnstorableRecord, add_error, unstorable, upsert_records

IMPORT_JOB_FIELDS = (
    "created",
    "updated",
    "unchanged",
    "filtered",
    "failed",
    "filtered_by",
    "errors",
    "waiting_until",
)
UPLOAD_EXTENSIONS = (".csv", ".json", ".jsonl", ".txt", ".xml")
ANALYZE_AFTER = 5000  # items written by one import before the planner statistics are refreshed


def create_import_job(
    study: Study,
    params: ImportParams,
    *,
    user: User | None = None,
    upload: str | Path = "",
) -> ImportJob:
    """Record a queued import of `params`' kind. The options hold no secret (a token or key comes from
    the worker's environment): `params.to_json()` has no field for one."""
    return ImportJob.objects.create(
        study=study,
        kind=params.kind,
        params=params.to_json(),
        created_by=user,
        upload=str(upload),
        status=JobStatus.QUEUED,
    )


def job_params(job: ImportJob) -> ImportParams:
    """The options a job recorded, typed. Raises ImportParamsError (a ValueError) for a row that
    cannot be an import's (unknown kind or option, wrong type, a secret)."""
    return params_from_json(job.kind, job.params)


def start_import(job: ImportJob) -> None:
    """Queue the job for a Celery worker once the surrounding transaction commits. With the broker
    down the job stays queued with the message QUEUE_UNAVAILABLE (see `jobs.enqueue`)."""
    from ..tasks import run_import_task  # tasks import this module

    transaction.on_commit(lambda: enqueue(run_import_task, job))


def resend_import(job: ImportJob) -> bool:
    """Send a queued import the broker never took again (the job page calls this while it polls);
    True when it went. Refreshes `job`."""
    from ..tasks import run_import_task

    if job.status != JobStatus.QUEUED or job.message != QUEUE_UNAVAILABLE:
        return False
    sent = requeue_unsent(ImportJob, run_import_task, pks=[job.pk]) > 0
    job.refresh_from_db()
    return sent


def submit_import(
    study: Study,
    params: ImportParams,
    *,
    user: User | None = None,
    upload_name: str | None = None,
    chunks: Iterable[bytes] | None = None,
) -> ImportJob:
    """The browser and API path: store the uploaded file (if any), record the job, queue it.

    Raises ValueError (bad extension, file too large, bad options) with nothing recorded.
    """
    path: str | Path = ""
    if upload_name is not None and chunks is not None:
        path = save_upload(study, upload_name, chunks)
    try:
        with transaction.atomic():
            job = create_import_job(study, params, user=user, upload=path)
            start_import(job)
    except Exception:
        if path:
            Path(path).unlink(missing_ok=True)
        raise
    return job


def restart_import(job: ImportJob, user: User | None = None) -> ImportJob:
    """Start a finished-unsuccessfully or stalled import again, as a new job with the same options.

    The old job stays in the history; a stalled one is marked failed first. Re-running is safe: the
    upsert skips what the first run already wrote. Raises ValueError for a job still alive or done.
    """
    stalled = is_stalled(job)
    if job.status == JobStatus.RUNNING and not stalled:
        raise ValueError("this import is still running")
    if job.status == JobStatus.SUCCEEDED or (job.status == JobStatus.QUEUED and not stalled):
        raise ValueError(
            f"only a failed, cancelled or stalled import can be restarted (this one is {job.status})"
        )
    params = job_params(job)
    with transaction.atomic():
        if stalled:
            ImportJob.objects.filter(pk=job.pk).update(
                status=JobStatus.FAILED,
                finished_at=timezone.now(),
                error="Stalled: no worker ran it to its end (killed or restarted, or its message was lost).",
                message="Stalled; restarted as a new import.",
            )
        new = create_import_job(job.study, params, user=user, upload=job.upload)
        start_import(new)
    return new


def save_upload(study: Study, name: str, chunks: Iterable[bytes]) -> Path:
    """Store an uploaded file under UPLOAD_ROOT/<study>/ with a fresh name; return its path.

    Raises ValueError when the extension is not one of UPLOAD_EXTENSIONS or the size passes
    MAX_IMPORT_UPLOAD_BYTES (the partial file is removed).
    """
    suffix = Path(name).suffix.lower()
    if suffix not in UPLOAD_EXTENSIONS:
        raise ValueError(
            f"files ending in {suffix or '(nothing)'} cannot be imported ({', '.join(UPLOAD_EXTENSIONS)})"
        )
    limit = int(settings.MAX_IMPORT_UPLOAD_BYTES)
    directory = Path(settings.UPLOAD_ROOT) / study.slug
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{timezone.now():%Y%m%d-%H%M%S}-{uuid.uuid4().hex[:8]}{suffix}"
    size = 0
    with path.open("wb") as handle:
        for chunk in chunks:
            size += len(chunk)
            if size > limit:
                handle.close()
                path.unlink(missing_ok=True)
                raise ValueError(f"the file is larger than the limit of {limit // (1024 * 1024)} MB")
            handle.write(chunk)
    return path


def run_import(
    job: ImportJob,
    *,
    echo: Callable[[str], None] | None = None,
    environ: dict[str, str] | None = None,
    session: Any = None,
    sleep: Callable[[float], None] | None = None,
    render: bool = True,
    search_index: Literal["soon", "now", "skip"] = "soon",
) -> ImportJob:
    """Run an import job to its end (status, counts, errors, duration recorded on the row).

    Called by the Celery task and, in the foreground, by the import commands (`echo` prints progress).
    Credentials come from the environment (`GITHUB_TOKEN`, `STACKEXCHANGE_KEY`; `environ` overrides
    for tests) and are never written anywhere. `session` and `sleep` are the HTTP boundary, for tests.
    The upsert stores the items it writes rendered; after it, items of the study still unrendered
    (stored by a path that did not render) are rendered in a second phase, unless `render` is False.
    The full-text vectors of what it wrote (PostgreSQL) are filled after the job by a worker (`soon`),
    before the job ends (`now`: the commands, which have no worker), or not at all (`skip`: benchmarks).
    """
    env = dict(os.environ if environ is None else environ)
    pause = sleep if sleep is not None else _sleep

    def work(progress: JobProgress) -> str:
        study = job.study
        try:
            params = job_params(job)
        except ImportParamsError as exc:
            raise JobFailed(str(exc)) from None
        if isinstance(params, FileParams):
            _import_file(job, params, progress)
        elif isinstance(params, StackExchangeParams):
            key = env.get("STACKEXCHANGE_KEY") or None
            _import_stackexchange(job, params, progress, key, session, pause)
        elif isinstance(params, SoDumpParams):
            _import_so_dump(job, params, progress)
        elif isinstance(params, GitLabParams):
            import_gitlab(job, params, progress, env.get("GITLAB_TOKEN") or None, session, pause)
        elif isinstance(params, JiraParams):
            import_jira(job, params, progress, env, session, pause)
        elif isinstance(params, HydrateParams):
            hydrate_items(job, params, progress, env, session, pause)
        else:
            _import_github(job, params, progress, env.get("GITHUB_TOKEN") or None, session, pause)
        summary = summarize(job)
        if connection.vendor == "postgresql" and job.created + job.updated >= ANALYZE_AFTER:
            pg.refresh_statistics()
        if render and Item.objects.in_study(study).unrendered().exists():
            progress.note(f"{summary} Rendering bodies…")
            render_pending(study, progress)
        if search_index == "now" and job.created + job.updated:
            progress.note(f"{summary} Indexing for search…")
            fill_search_vectors(study.pk)
        return summary

    finished = run_job(job, work, fields=IMPORT_JOB_FIELDS, echo=echo)
    if search_index == "soon" and finished.created + finished.updated:
        fill_search_vectors_soon(finished.study_id)
    return finished


def _sleep(seconds: float) -> None:
    time.sleep(seconds)  # looked up at call time, so tests can replace the clock


def import_in_foreground(
    study: Study,
    params: ImportParams,
    *,
    upload: str | Path = "",
    user: User | None = None,
    echo: Callable[[str], None] | None = None,
) -> ImportJob:
    """The command-line path: record the job exactly as the browser would, then run it here."""
    job = create_import_job(study, params, user=user, upload=upload)
    claimed = claim_job(ImportJob, job.pk, task_id="foreground")
    if claimed is None:  # nobody else knows this fresh job's id; this cannot happen
        raise RuntimeError(f"import job {job.pk} was claimed by someone else")
    return run_import(claimed, echo=echo, search_index="now")


def summarize(job: ImportJob) -> str:
    parts = [f"{job.created} created", f"{job.updated} updated", f"{job.unchanged} unchanged"]
    if job.filtered:
        parts.append(f"{job.filtered} filtered out")
    if job.failed:
        parts.append(f"{job.failed} failed")
    return ", ".join(parts) + "."


def _import_file(job: ImportJob, params: FileParams, progress: JobProgress) -> None:
    """A CSV/JSON/JSONL/URL-list file: one bad row fails the whole file and nothing is written.

    On PostgreSQL the file is read once, every batch going into one transaction that commits only
    when the last row has been read (a bad row rolls it all back), written by the background writer
    so that progress stays visible. Elsewhere (SQLite, whose single writer would be held for the
    whole import) the file is checked in a first pass and written in a second, batch by batch.
    """
    path = job.upload
    rules = rules_or_fail(params.screening)
    try:
        fmt = detect_format(path, params.format or None)
    except ImportFileError as exc:
        raise JobFailed(str(exc), [_file_error(exc)]) from None
    single_pass = connection.vendor == "postgresql" and not connection.in_atomic_block
    try:
        if single_pass:
            progress.note("Importing…")
            upsert_records(
                job.study, iter_records(path, fmt), job, rules=rules, progress=progress, atomic=True
            )
            return
        progress.note("Checking the file…")
        total = _check_storable(path, fmt)
    except (ImportFileError, UnstorableRecord) as first:
        _reset_counts(job)
        raise _bad_file(path, fmt, first) from None
    progress.job.progress_done = 0
    progress.set_total(total)
    progress.note(f"Importing {total} items…")
    upsert_records(job.study, iter_records(path, fmt), job, rules=rules, progress=progress)


def _reset_counts(job: ImportJob) -> None:
    """A rolled-back file import wrote nothing: its counts say so."""
    job.created = job.updated = job.unchanged = job.filtered = job.failed = 0
    job.filtered_by = {}


def _bad_file(path: str, fmt: str, first: ImportFileError | UnstorableRecord) -> JobFailed:
    """The failure of a file with bad rows: every parser error (the first MAX_ERRORS) with line and field."""
    if isinstance(first, UnstorableRecord):
        problems = [_file_error(ImportFileError(None, "url", first.url[:200], first.problem))]
        return JobFailed(
            f"The file has a row the database cannot hold; nothing was imported. {first}", problems
        )
    check = check_file(path, fmt, max_errors=MAX_ERRORS)
    errors = check.errors or [first]
    more = "+" if check.truncated else ""
    return JobFailed(
        f"The file has {len(errors)}{more} bad row(s); nothing was imported. First: {errors[0]}",
        [_file_error(error) for error in errors],
    )


def _check_storable(path: str, fmt: str) -> int:
    """Read the whole file once: the parser's checks plus what the database needs. Return the count."""
    count = 0
    for record in iter_records(path, fmt):
        problem = unstorable(record)
        if problem is not None:
            raise UnstorableRecord(record.url, problem)
        count += 1
    return count


def _file_error(error: ImportFileError) -> dict[str, Any]:
    where = f"{error.unit} {error.line}" if error.line is not None else "file"
    value = None if error.value is None else str(error.value)[:200]
    return {"where": where, "field": error.field, "value": value, "message": error.message}


def _import_github(
    job: ImportJob,
    params: GitHubRepoParams | GitHubQueryParams | GitHubUrlsParams,
    progress: JobProgress,
    token: str | None,
    session: Any,
    sleep: Callable[[float], None],
) -> None:
    rules = rules_or_fail(params.screening)
    notices: list[str] = []

    def notice(text: str) -> None:
        notices.append(text)
        progress.note(text)

    client = GitHubClient(
        api_url=params.endpoint,
        token=token,
        session=session,
        sleep=sleep,
        on_wait=progress.wait,
        on_notice=notice,
    )
    comments = not params.no_comments
    links = not params.no_links
    limit = params.limit
    results: Iterator[GitHubResult]
    try:
        if isinstance(params, GitHubRepoParams):
            results = client.repo_issues(
                params.repo,
                state=params.state,
                labels=params.labels,
                exclude_labels=params.exclude_labels,
                since=params.since or None,
                comments=comments,
                links=links,
                limit=limit,
            )
            progress.note(f"Reading issues of {params.repo}…")
        elif isinstance(params, GitHubQueryParams):
            results = client.search_issues(
                params.query,
                comments=comments,
                links=links,
                exclude_labels=params.exclude_labels,
                limit=limit,
            )
            progress.note("Searching issues…")
        else:
            urls = list(params.urls) or read_url_list(job.upload)
            progress.set_total(len(urls))
            results = client.hydrate(urls, comments=comments, links=links, limit=limit)
            progress.note(f"Fetching {len(urls)} issues…")
        upsert_records(
            job.study,
            count_results(results, job, progress),
            job,
            rules=rules,
            replace_comments=comments,
        )
    except TokenRejected:
        raise JobFailed("token rejected: GitHub answered 401 Unauthorized; check GITHUB_TOKEN") from None
    except (GitHubError, ValueError) as exc:
        raise JobFailed(f"GitHub import stopped: {exc}") from None
    for text in notices:
        add_error(job, "GitHub", None, None, text)


def _import_stackexchange(
    job: ImportJob,
    params: StackExchangeParams,
    progress: JobProgress,
    key: str | None,
    session: Any,
    sleep: Callable[[float], None],
) -> None:
    rules = rules_or_fail(params.screening)
    notices: list[str] = []

    def notice(text: str) -> None:
        notices.append(text)
        progress.note(text)

    client = StackExchangeClient(
        api_url=params.endpoint,
        key=key,
        session=session,
        sleep=sleep,
        on_wait=progress.wait,
        on_notice=notice,
    )
    progress.note(f"Reading questions tagged {', '.join(params.tagged)}…")
    try:
        records = client.questions(
            params.tagged,
            site=params.site,
            match=params.match,
            accepted_only=params.accepted_only,
            limit=params.limit,
        )
        upsert_records(job.study, records, job, rules=rules, progress=progress)
    except KeyRejected:
        raise JobFailed("key rejected: the Stack Exchange API refused STACKEXCHANGE_KEY") from None
    except (StackExchangeError, ValueError) as exc:
        raise JobFailed(f"Stack Exchange import stopped: {exc}") from None
    for text in notices:
        add_error(job, "Stack Exchange", None, None, text)


def _import_so_dump(job: ImportJob, params: SoDumpParams, progress: JobProgress) -> None:
    """Posts.xml: the reader screens while it streams (it keeps only selected questions), then upserts."""
    rules = rules_or_fail(params.screening)
    site = params.host

    def on_progress(done: int, total: int) -> None:
        progress.job.progress_total = total
        progress.job.progress_done = done
        progress.save()

    reader = PostsDumpReader(job.upload, rules, site_host=site, on_progress=on_progress)
    progress.note("Reading the dump (step 1 of 3)…")
    records = _after_scan(reader, job, progress)
    try:
        upsert_records(job.study, records, job)
    except DumpError as exc:
        raise JobFailed(f"The dump cannot be read; nothing was imported. {exc}") from None
    except FileNotFoundError:
        raise JobFailed(f"The dump file is missing: {job.upload}") from None


def _after_scan(reader: PostsDumpReader, job: ImportJob, progress: JobProgress) -> Iterator[ItemRecord]:
    """The reader's records; once its XML pass is over, its rejections go on the job as `filtered`."""
    first = True
    for record in reader:
        if first:
            _note_dump_stats(reader, job, progress)
            first = False
        progress.advance()
        yield record
    if first:
        _note_dump_stats(reader, job, progress)


def _note_dump_stats(reader: PostsDumpReader, job: ImportJob, progress: JobProgress) -> None:
    stats = reader.stats
    for rule, count in stats.rejected.items():
        job.filtered += count
        job.filtered_by[rule] = job.filtered_by.get(rule, 0) + count
    progress.job.progress_done = 0
    progress.set_total(stats.selected)
    progress.note(f"{stats.questions} questions read, {stats.selected} selected; importing (step 2 of 3)…")
