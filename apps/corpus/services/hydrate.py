"""Hydrate: fetch the title, body and comments or answers of a study's URL-only items (#26 point 7).

Called by :func:`.imports.run_import` for jobs of kind ``hydrate`` (the ``hydrate`` command, the import
page's "Fetch URL-only items" tab, ``POST .../imports/`` with ``kind=hydrate``); never run by anything else
(the demo study is URL-only and stays so until a lead asks).

- Which items: :meth:`ItemQuerySet.url_only`, in id order; :mod:`..hydration` says where each is fetched
  from. GitHub issues one by one (``GET /repos/o/r/issues/N`` and its comments); Stack Overflow and other
  Stack Exchange questions 100 ids per call (``/questions/{ids}``, then their answers); GitLab and Jira
  issues one by one from a listed instance. Fix evidence is not read (``import_github --urls`` and the
  other importers do); stored links stay as they are.
- Each fetched record updates the item it was fetched for (the record takes the item's URL, so an issue
  that moved never becomes a second item), through the one upsert: labels, assignments, decisions and
  screening are other tables or columns the upsert never writes.
- An item that cannot be fetched (gone, hidden, not an issue) is counted ``failed`` with its URL, and the
  rest go on; an item on no known source or an unlisted instance is reported once in the job's problems.
- Resumable: hydrated items are no longer URL-only, so a rerun (or "Run this import again" after a crash)
  fetches only what is left. A spent Stack Exchange quota stops that source cleanly with a note.
- Rate limits and retries are the importers' one HTTP policy (:mod:`..http`), whose waits show on the job.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from django.conf import settings

from apps.core.jobs import JobFailed, JobProgress

from ..github import Failed, GitHubClient, GitHubError, GitHubResult
from ..github import TokenRejected as GitHubTokenRejected
from ..gitlab import GitLabClient, GitLabError, GitLabResult
from ..gitlab import TokenRejected as GitLabTokenRejected
from ..hydration import Plan, jira_key, plan
from ..jira import JiraError, NotFound
from ..jira import TokenRejected as JiraTokenRejected
from ..models import ImportJob, Item
from ..params import GITHUB_API, STACKEXCHANGE_API, HydrateParams
from ..records import ItemRecord
from ..stackexchange import IDS_PER_CALL, KeyRejected, QuotaExhausted, StackExchangeClient, StackExchangeError
from .trackers import count_results, jira_client
from .upsert import add_error, upsert_records

Sleep = Callable[[float], None]


def hydrate_items(
    job: ImportJob,
    params: HydrateParams,
    progress: JobProgress,
    env: Mapping[str, str],
    session: Any,
    sleep: Sleep,
) -> None:
    """Fetch the study's URL-only items (see the module docstring). Raises JobFailed for a rejected
    token or key, or a source that stops answering; what was fetched before stays written."""
    urls = Item.objects.in_study(job.study).url_only().order_by("id").values_list("url", flat=True)
    try:
        todo = plan(
            urls.iterator(),
            source=params.source,
            limit=params.limit,
            api_url=params.api_url,
            gitlab_sites=[str(u).rstrip("/") for u in getattr(settings, "GITLAB_API_URLS", [])],
            jira_sites=[str(u).rstrip("/") for u in getattr(settings, "JIRA_API_URLS", [])],
        )
    except ValueError as exc:
        raise JobFailed(str(exc)) from None
    for url, why in todo.unreachable:
        add_error(job, url[:200], "url", None, f"not fetched: {why}")
    progress.set_total(todo.size)
    progress.note(f"Fetching {todo.size} URL-only items…" if todo.size else "No URL-only item to fetch.")
    notices: list[str] = []

    def notice(text: str) -> None:
        notices.append(text)
        progress.note(text)

    fetch = _Fetch(params, env, session, sleep, progress, notice)
    try:
        upsert_records(job.study, count_results(fetch.results(todo), job, progress), job)
    except (GitHubTokenRejected, GitLabTokenRejected, JiraTokenRejected, KeyRejected) as exc:
        raise JobFailed(f"Hydrate stopped: {exc}") from None
    except (GitHubError, GitLabError, JiraError, StackExchangeError, ValueError) as exc:
        raise JobFailed(f"Hydrate stopped (a rerun continues where it stopped): {exc}") from None
    for text in notices:
        add_error(job, "hydrate", None, None, text)


class _Fetch:
    """The results of every source in turn: records (with the item's URL) and Failed items."""

    def __init__(
        self,
        params: HydrateParams,
        env: Mapping[str, str],
        session: Any,
        sleep: Sleep,
        progress: JobProgress,
        notice: Callable[[str], None],
    ) -> None:
        self.params, self.env, self.session, self.sleep = params, env, session, sleep
        self.progress, self.notice = progress, notice

    def results(self, todo: Plan) -> Iterator[GitHubResult | GitLabResult]:
        yield from self._github(todo.github)
        for site, questions in todo.stackexchange.items():
            yield from self._stackexchange(site, questions)
        for api, urls in todo.gitlab.items():
            yield from self._gitlab(api, urls)
        for site, urls in todo.jira.items():
            yield from self._jira(site, urls)

    def _github(self, urls: list[str]) -> Iterator[GitHubResult]:
        if not urls:
            return
        client = GitHubClient(
            api_url=self.params.api_url or GITHUB_API, token=self.env.get("GITHUB_TOKEN") or None,
            session=self.session, sleep=self.sleep, on_wait=self.progress.wait, on_notice=self.notice,
        )  # fmt: skip
        for url in urls:
            yield from _on_item(client.hydrate([url], comments=True, links=False), url)

    def _stackexchange(self, site: str, questions: list[tuple[int, str]]) -> Iterator[GitHubResult]:
        client = StackExchangeClient(
            api_url=self.params.api_url or STACKEXCHANGE_API, key=self.env.get("STACKEXCHANGE_KEY") or None,
            session=self.session, sleep=self.sleep, on_wait=self.progress.wait, on_notice=self.notice,
        )  # fmt: skip
        urls = dict(questions)
        ids = [question_id for question_id, _url in questions]
        done = 0
        try:
            for batch in client.question_batches(ids, site):
                for question_id in ids[done : done + IDS_PER_CALL]:
                    record = batch.get(question_id)
                    if record is None:
                        yield Failed(urls[question_id], f"question {question_id} is not on {site} (deleted?)")
                    else:
                        record.url = urls[question_id]
                        yield record
                done += IDS_PER_CALL
        except QuotaExhausted as exc:
            self.notice(
                f"The Stack Exchange quota is used up ({exc}); {len(ids) - done} question(s) of {site} "
                "were left URL-only: run hydrate again once the quota resets."
            )

    def _gitlab(self, api: str, urls: list[str]) -> Iterator[GitLabResult]:
        client = GitLabClient(
            api, self.env.get("GITLAB_TOKEN") or None, session=self.session, sleep=self.sleep,
            on_wait=self.progress.wait,
        )  # fmt: skip
        for url in urls:
            yield from _on_item(client.hydrate([url], comments=True, links=False), url)

    def _jira(self, site: str, urls: list[str]) -> Iterator[GitHubResult]:
        client = jira_client(site, self.env, self.session, self.sleep, self.progress, self.notice)
        for url in urls:
            try:
                record = client.issue(str(jira_key(url)), links=False)
            except NotFound as exc:
                yield Failed(url, str(exc), exc.status)
                continue
            record.url = url
            yield record


def _on_item[R: GitHubResult | GitLabResult](results: Iterable[R], url: str) -> Iterator[R]:
    """A client's results for one item, a record taking the item's URL (an issue that moved, a URL
    spelt differently, stays the item it was fetched for)."""
    for result in results:
        if isinstance(result, ItemRecord):
            result.url = url
        yield result
