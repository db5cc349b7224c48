"""Imports from issue trackers other than GitHub: GitLab (REST v4) and Jira (REST, or an export file).

Called by :func:`.imports.run_import` for jobs of kind ``gitlab`` and ``jira``; the same counting of
skipped and failed items (:func:`count_results`), screening (:func:`rules_or_fail`), upsert and URL
lists as the GitHub import.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from apps.core.files import FileReadError, open_text
from apps.core.jobs import JobFailed, JobProgress

from ..github import Failed, GitHubResult, Skipped
from ..gitlab import Failed as GitLabFailed
from ..gitlab import GitLabClient, GitLabError, GitLabResult
from ..gitlab import TokenRejected as GitLabTokenRejected
from ..jira import ExportError, JiraClient, JiraError, read_export
from ..jira import TokenRejected as JiraTokenRejected
from ..models import ImportJob
from ..params import GitLabParams, JiraParams, Screening
from ..records import ItemRecord
from ..screening import PRESETS, ScreeningRules
from .upsert import add_error, upsert_records


def screening_rules(screening: Screening) -> ScreeningRules | None:
    """The screening rules a job's options ask for: a named preset, or keywords/tags, or none.

    Raises ValueError naming the problem for an unknown preset, or a preset mixed with own keywords.
    """
    preset = screening.preset
    keywords = [k for k in screening.keywords if k.strip()]
    tags = [t for t in screening.tags if t.strip()]
    accepted_only = screening.accepted_only
    if preset:
        if preset not in PRESETS:
            raise ValueError(f"unknown screening preset {preset!r} (known: {', '.join(sorted(PRESETS))})")
        if keywords or tags:
            raise ValueError(f"use either the preset {preset!r} or your own keywords and tags, not both")
        return PRESETS[preset]
    rules = ScreeningRules.simple(keywords=keywords, tags_any=tags, accepted_only=accepted_only)
    return None if rules.is_empty else rules


def rules_or_fail(screening: Screening) -> ScreeningRules | None:
    try:
        return screening_rules(screening)
    except ValueError as exc:
        raise JobFailed(str(exc)) from None


def read_url_list(path: str | Path) -> list[str]:
    """URLs of a URL-list file: one per line; blank lines and `#` comments ignored."""
    try:
        with open_text(path) as handle:
            return [line.strip() for line in handle if line.strip() and not line.lstrip().startswith("#")]
    except FileReadError as exc:
        raise JobFailed(f"the URL list {exc}") from None


def count_results(
    results: Iterable[GitHubResult | GitLabResult], job: ImportJob, progress: JobProgress
) -> Iterator[ItemRecord]:
    """Records for the upsert; skips and failures are counted on the job as they pass."""
    for result in results:
        progress.advance()
        if isinstance(result, Skipped):
            rule = "pull_request" if result.reason == "pull request" else "labels_exclude"
            job.filtered += 1
            job.filtered_by[rule] = job.filtered_by.get(rule, 0) + 1
        elif isinstance(result, Failed | GitLabFailed):
            job.failed += 1
            add_error(job, result.url, None, result.status, result.message)
        else:
            yield result


def import_gitlab(
    job: ImportJob,
    params: GitLabParams,
    progress: JobProgress,
    token: str | None,
    session: Any,
    sleep: Callable[[float], None],
) -> None:
    """A GitLab project's issues, or a URL list, with notes and merge requests (see `corpus.gitlab`)."""
    rules = rules_or_fail(params.screening)
    client = GitLabClient(params.endpoint, token, session=session, sleep=sleep, on_wait=progress.wait)
    comments, links = not params.no_comments, not params.no_links
    try:
        if params.project:
            progress.note(f"Reading issues of {params.project}…")
            results = client.project_issues(
                params.project, state=params.state, labels=params.labels, since=params.since or None,
                comments=comments, links=links, limit=params.limit,
            )  # fmt: skip
        else:
            urls = list(params.urls) or read_url_list(job.upload)
            progress.set_total(len(urls))
            progress.note(f"Fetching {len(urls)} issues…")
            results = client.hydrate(urls, comments=comments, links=links, limit=params.limit)
        upsert_records(
            job.study, count_results(results, job, progress), job, rules=rules, replace_comments=comments
        )
    except GitLabTokenRejected:
        raise JobFailed("token rejected: GitLab answered 401 Unauthorized; check GITLAB_TOKEN") from None
    except (GitLabError, ValueError) as exc:
        raise JobFailed(f"GitLab import stopped: {exc}") from None


def import_jira(
    job: ImportJob,
    params: JiraParams,
    progress: JobProgress,
    env: Mapping[str, str],
    session: Any,
    sleep: Callable[[float], None],
) -> None:
    """A JQL search through the REST API (Server/Data Center or Cloud), or an export file (read whole
    before anything is written: a bad file writes nothing)."""
    rules = rules_or_fail(params.screening)
    notices: list[str] = []

    def notice(text: str) -> None:
        notices.append(text)
        progress.note(text)

    try:
        if params.jql:
            client = jira_client(params.api_url, env, session, sleep, progress, notice)
            progress.note(f"Searching {client.base_url} ({'Cloud' if client.cloud else 'Server'})…")
            records: Iterable[ItemRecord] = client.search(
                params.jql, limit=params.limit, links=not params.no_links
            )
        else:
            progress.note("Reading the export file…")
            records = list(read_export(job.upload, params.api_url))[: params.limit]
            progress.set_total(len(records))
        upsert_records(job.study, records, job, rules=rules, progress=progress)
    except JiraTokenRejected as exc:
        raise JobFailed(str(exc)) from None
    except ExportError as exc:
        raise JobFailed(f"The Jira export cannot be read; nothing was imported. {exc}") from None
    except FileNotFoundError:
        raise JobFailed(f"The export file is missing: {job.upload}") from None
    except (JiraError, ValueError) as exc:
        raise JobFailed(f"Jira import stopped: {exc}") from None
    for text in notices:
        add_error(job, "Jira", None, None, text)


def jira_client(
    api_url: str,
    env: Mapping[str, str],
    session: Any,
    sleep: Callable[[float], None],
    progress: JobProgress,
    notice: Callable[[str], None],
) -> JiraClient:
    """A Jira client for a job: credentials from the worker's environment (JIRA_TOKEN, JIRA_USER)."""
    return JiraClient(
        api_url, env.get("JIRA_TOKEN") or None, env.get("JIRA_USER") or None,
        session=session, sleep=sleep, on_wait=progress.wait, on_notice=notice,
    )  # fmt: skip
