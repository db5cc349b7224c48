"""Stack Exchange API client for importing questions with their answers, and the conversion of
API objects to records.

Pure module (no Django; talks HTTP through ``requests``). :meth:`StackExchangeClient.questions`
reads ``/search/advanced`` (``tagged`` semicolon-joined, ``accepted=True`` when only questions with
an accepted answer are wanted, ``filter=withbody``, oldest first) page by page while ``has_more``,
then fetches the answers of each page's questions with ``/questions/{ids}/answers?filter=withbody``
(up to 100 ids per call, paged too) and yields one :class:`ItemRecord` per question, answers as
comments (``is_answer=True``; the accepted one first, then by score).

API etiquette (https://api.stackexchange.com/docs/throttle):

- a response carrying ``backoff: N`` makes the client wait N seconds before its next request (a
  hold on the importers' one policy, :mod:`apps.corpus.http`, so it uses the same sleep, clock and
  ``on_wait``);
- ``quota_remaining`` is tracked; when it reaches 0 the client stops cleanly: it yields what it has
  complete (never a question whose answers it could not fetch), sets ``quota_exhausted`` and tells
  ``on_notice``. A ``throttle_violation`` asking for a wait longer than ``max_throttle_wait`` is
  treated the same way (it means the daily quota is spent);
- a shorter ``throttle_violation`` wait is waited out, ``internal_error``/``temporarily_unavailable``
  and invalid JSON are retried with exponential backoff; HTTP 5xx, connection errors, timeouts and
  ``Retry-After`` are the policy's. When the retries run out :class:`StackExchangeUnavailable` is
  raised;
- an invalid key raises :class:`KeyRejected`; any other API error :class:`StackExchangeError`.

The key is optional (without one the quota is 300 requests a day per IP, with one 10,000) and
never appears in an exception message, ``repr(client)`` or a record.
"""

from __future__ import annotations

import html
import re
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Literal

import requests

from apps.corpus.records import (
    SOURCE_STACKEXCHANGE,
    SOURCE_STACKOVERFLOW,
    CommentRecord,
    ItemRecord,
    canonical_url,
    parse_timestamp,
    site_name,
    stackexchange_question_ref,
)

from .http import (
    DEFAULT_MAX_WAIT,
    DEFAULT_TIMEOUT,
    HttpPolicy,
    NoticeCallback,
    PolicyError,
    RetriesExhausted,
    ServiceError,
    Timeout,
    Transient,
    WaitCallback,
    api_base,
    new_session,
)

DEFAULT_API_URL = "https://api.stackexchange.com/2.3"
IDS_PER_CALL = 100
_SITE_HOSTS = {
    "stackoverflow": "stackoverflow.com",
    "superuser": "superuser.com",
    "serverfault": "serverfault.com",
    "askubuntu": "askubuntu.com",
    "mathoverflow": "mathoverflow.net",
    "stackapps": "stackapps.com",
}
_RETRYABLE_ERRORS = frozenset({"internal_error", "temporarily_unavailable"})
_THROTTLE_SECONDS = re.compile(r"available in (\d+) seconds")


class StackExchangeError(ServiceError):
    """A Stack Exchange request failed; the message names the method and the API's error, never the key."""


class KeyRejected(StackExchangeError):
    """The API refused the application key."""


class StackExchangeUnavailable(StackExchangeError):
    """Server errors, throttling or connection failures outlasted the retries."""


class QuotaExhausted(StackExchangeError):
    """The daily quota is spent: no request is sent until it resets (``questions`` stops cleanly)."""


def is_question_object(data: Mapping[str, Any]) -> bool:
    """True for a Stack Exchange API question object (answers also carry ``question_id``)."""
    return "question_id" in data and "answer_id" not in data


def host_for_site(site: str) -> str:
    """``stackoverflow`` → ``stackoverflow.com``; ``datascience`` → ``datascience.stackexchange.com``."""
    if "." in site:
        return site.lower()
    return _SITE_HOSTS.get(site.lower(), f"{site.lower()}.stackexchange.com")


def _epoch(value: object) -> datetime | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return parse_timestamp(value)
    return None


def _display_name(owner: object) -> str:
    if isinstance(owner, Mapping) and isinstance(owner.get("display_name"), str):
        return html.unescape(str(owner["display_name"]))
    return ""


def answer_to_record(answer: Mapping[str, Any], accepted_answer_id: object = None) -> CommentRecord:
    """A Stack Exchange answer object (``withbody`` filter: HTML ``body``) as a :class:`CommentRecord`."""
    answer_id = answer["answer_id"]
    score = answer.get("score")
    return CommentRecord(
        external_id=str(answer_id),
        author=_display_name(answer.get("owner")),
        body=str(answer.get("body") or ""),
        body_format="html",
        created_at=_epoch(answer.get("creation_date")),
        is_answer=True,
        is_accepted=bool(answer.get("is_accepted"))
        or (accepted_answer_id is not None and answer_id == accepted_answer_id),
        score=score if isinstance(score, int) and not isinstance(score, bool) else None,
    )


def question_to_record(
    question: Mapping[str, Any], answers: Iterable[Mapping[str, Any]] = (), site: str | None = None
) -> ItemRecord:
    """A question object (and its answer objects) as an :class:`ItemRecord`.

    The site comes from the question's ``link`` when present, else from ``site`` (an API site name
    such as ``stackoverflow``). Titles and display names arrive HTML-escaped (``Can&#39;t``) and are
    unescaped; bodies stay HTML (``body_format="html"``). ``raw`` is ``{"question", "answers"}``.
    """
    question_id = int(question["question_id"])
    link = question.get("link")
    ref = stackexchange_question_ref(str(link)) if isinstance(link, str) else None
    host = ref[0] if ref is not None else host_for_site(site or "stackoverflow")
    name = site_name(host)
    url = canonical_url(f"https://{host}/questions/{question_id}")
    accepted_id = question.get("accepted_answer_id")
    answer_list = [dict(answer) for answer in answers]
    comments = [answer_to_record(answer, accepted_id) for answer in answer_list]
    comments.sort(
        key=lambda c: (not c.is_accepted, -(c.score or 0), c.created_at or datetime.min.replace(tzinfo=UTC))
    )
    tags = [str(tag) for tag in question.get("tags") or []]
    metadata: dict[str, Any] = {
        "site": name,
        "question_id": question_id,
        "score": question.get("score"),
        "view_count": question.get("view_count"),
        "answer_count": question.get("answer_count"),
        "is_answered": question.get("is_answered"),
        "accepted_answer_id": accepted_id,
        "author": _display_name(question.get("owner")),
        "closed_date": question.get("closed_date"),
        "last_activity_date": question.get("last_activity_date"),
    }
    raw_question = {key: value for key, value in question.items() if key != "answers"}
    return ItemRecord(
        url=url,
        source=SOURCE_STACKOVERFLOW if host == "stackoverflow.com" else SOURCE_STACKEXCHANGE,
        external_id=str(question_id) if host == "stackoverflow.com" else f"{name}:{question_id}",
        title=html.unescape(str(question.get("title") or "")).strip(),
        body=str(question.get("body") or ""),
        body_format="html",
        created_at=_epoch(question.get("creation_date")),
        tags=tags,
        metadata=metadata,
        raw={"question": raw_question, "answers": answer_list},
        comments=comments,
    )


class StackExchangeClient:
    """Reads questions and answers from the Stack Exchange API 2.x.

    ``session``, ``sleep`` and ``clock`` are injectable so tests replay recorded responses without
    waiting; they and ``max_retries``, ``backoff_base``, ``max_wait`` and ``timeout`` configure the
    client's :class:`~apps.corpus.http.HttpPolicy`.
    After a run, ``quota_remaining`` holds the last value the API reported and ``quota_exhausted``
    says whether the run stopped because the quota was spent.
    """

    def __init__(
        self,
        api_url: str = DEFAULT_API_URL,
        key: str | None = None,
        session: requests.Session | None = None,
        sleep: Callable[[float], None] = time.sleep,
        max_retries: int = 5,
        *,
        on_wait: WaitCallback | None = None,
        on_notice: NoticeCallback | None = None,
        backoff_base: float = 1.0,
        max_throttle_wait: float = 600.0,
        timeout: Timeout = DEFAULT_TIMEOUT,
        clock: Callable[[], float] = time.time,
        max_wait: float = DEFAULT_MAX_WAIT,
    ) -> None:
        self.api_url, _ = api_base(api_url)
        self._key = key or None
        self._session = session if session is not None else new_session()
        self._policy = HttpPolicy(
            timeout=timeout,
            max_retries=max_retries,
            backoff_base=backoff_base,
            max_wait=max_wait,
            sleep=sleep,
            clock=clock,
            on_wait=on_wait,
        )
        self._on_notice = on_notice
        self._max_throttle_wait = max_throttle_wait
        self.quota_remaining: int | None = None
        self.quota_max: int | None = None
        self.quota_exhausted = False

    def __repr__(self) -> str:
        return f"StackExchangeClient(api_url={self.api_url!r}, key={'<set>' if self._key else None})"

    def questions(
        self,
        tagged: Sequence[str],
        *,
        site: str = "stackoverflow",
        match: Literal["all", "any"] = "all",
        accepted_only: bool = False,
        answers: bool = True,
        limit: int | None = None,
    ) -> Iterator[ItemRecord]:
        """Questions tagged with all of ``tagged`` (``match="all"``, the API's own semantics) or
        with any of them (``match="any"``: one query per tag, repeats dropped), oldest first.

        ``accepted_only`` asks the API for questions with an accepted answer and checks
        ``accepted_answer_id`` again here. ``limit`` caps the number of records.
        """
        tags = [tag.strip() for tag in tagged if tag.strip()]
        if not tags:
            raise ValueError("at least one tag is required")
        if any(";" in tag for tag in tags):
            raise ValueError(f"a tag cannot contain ';': {tags!r}")
        if limit is not None and limit < 1:
            raise ValueError(f"limit must be at least 1, got {limit}")
        if match not in ("all", "any"):
            raise ValueError(f"match must be 'all' or 'any', got {match!r}")
        queries = [tags] if match == "all" else [[tag] for tag in tags]
        seen: set[int] = set()
        produced = 0
        self.quota_exhausted = False
        try:
            for query_tags in queries:
                for record in self._questions_for(query_tags, site, accepted_only, answers):
                    question_id = int(record.metadata["question_id"])
                    if question_id in seen:
                        continue
                    seen.add(question_id)
                    yield record
                    produced += 1
                    if limit is not None and produced >= limit:
                        return
        except QuotaExhausted:
            self.quota_exhausted = True
            self._notice(
                f"the Stack Exchange API quota is used up (quota_max {self.quota_max}); stopped after "
                f"{produced} question(s). The quota resets daily; run the import again to continue."
            )

    def _questions_for(
        self, tags: Sequence[str], site: str, accepted_only: bool, answers: bool
    ) -> Iterator[ItemRecord]:
        page = 1
        while True:
            params = {
                "tagged": ";".join(tags),
                "site": site,
                "filter": "withbody",
                "sort": "creation",
                "order": "asc",
                "pagesize": "100",
                "page": str(page),
            }
            if accepted_only:
                params["accepted"] = "True"
            data = self._get("/search/advanced", params)
            items = [
                item
                for item in data.get("items") or []
                if isinstance(item, dict) and is_question_object(item)
            ]
            answers_by_question: dict[int, list[dict[str, Any]]] = {}
            if answers:
                wanted = [int(item["question_id"]) for item in items if item.get("answer_count", 1) != 0]
                # Raises QuotaExhausted before this page is yielded: never a question without its answers.
                answers_by_question = self.answers_for(wanted, site)
            for item in items:
                if accepted_only and item.get("accepted_answer_id") is None:
                    continue
                yield question_to_record(item, answers_by_question.get(int(item["question_id"]), ()), site)
            if not data.get("has_more"):
                return
            page += 1

    def question_batches(
        self, question_ids: Sequence[int], site: str = "stackoverflow"
    ) -> Iterator[dict[int, ItemRecord]]:
        """Questions by id with their answers, ``IDS_PER_CALL`` ids per call (``/questions/{ids}``, then
        ``/questions/{ids}/answers``), one dict per batch: id → record. An id missing from the answer
        (deleted, or not a question of ``site``) is missing from its dict. Raises :class:`QuotaExhausted`
        when the quota runs out (the batches yielded before it are complete)."""
        for start in range(0, len(question_ids), IDS_PER_CALL):
            ids = ";".join(str(question_id) for question_id in question_ids[start : start + IDS_PER_CALL])
            # At most 100 ids and pagesize 100: one page holds them all (a has_more is not followed).
            params = {"site": site, "filter": "withbody", "pagesize": str(IDS_PER_CALL)}
            data = self._get(f"/questions/{ids}", params)
            questions = [
                item
                for item in data.get("items") or []
                if isinstance(item, dict) and is_question_object(item)
            ]
            wanted = [int(item["question_id"]) for item in questions if item.get("answer_count", 1) != 0]
            answers = self.answers_for(wanted, site)
            yield {
                int(item["question_id"]): question_to_record(
                    item, answers.get(int(item["question_id"]), ()), site
                )
                for item in questions
            }

    def answers_for(
        self, question_ids: Sequence[int], site: str = "stackoverflow"
    ) -> dict[int, list[dict[str, Any]]]:
        """Answer objects (with bodies) of the given questions, by question id, 100 ids per call."""
        grouped: dict[int, list[dict[str, Any]]] = {}
        for start in range(0, len(question_ids), IDS_PER_CALL):
            batch = question_ids[start : start + IDS_PER_CALL]
            ids = ";".join(str(question_id) for question_id in batch)
            page = 1
            while True:
                params = {"site": site, "filter": "withbody", "pagesize": "100", "page": str(page)}
                data = self._get(f"/questions/{ids}/answers", params)
                for answer in data.get("items") or []:
                    if isinstance(answer, dict) and "question_id" in answer:
                        grouped.setdefault(int(answer["question_id"]), []).append(answer)
                if not data.get("has_more"):
                    break
                page += 1
        return grouped

    # --- one request, with waits and retries ---------------------------------------------------

    def _notice(self, message: str) -> None:
        if self._on_notice is not None:
            self._on_notice(message)

    def _get(self, method: str, params: Mapping[str, str]) -> dict[str, Any]:
        query = dict(params)
        if self._key:
            query["key"] = self._key
        if self.quota_remaining == 0:
            raise QuotaExhausted(f"GET {method}: the quota is used up (quota_max {self.quota_max})")
        label = f"GET {method}"  # never the URL with its query: that holds the key
        try:
            return self._policy.get(
                self._session,
                f"{self.api_url}{method}",
                label=label,
                judge=lambda response: self._judge(response, label),
                params=query,
            )
        except RetriesExhausted as exc:
            raise StackExchangeUnavailable(str(exc)) from None
        except PolicyError as exc:
            raise StackExchangeError(str(exc)) from None

    def _judge(self, response: requests.Response, label: str) -> dict[str, Any] | Transient:
        """Stack Exchange's reading of an answer the policy did not retry: errors are in the body."""
        try:
            data = response.json()
        except ValueError:
            if response.ok:
                return Transient(f"invalid JSON in the response (status {response.status_code})")
            raise StackExchangeError(f"{label}: {response.status_code} {response.reason}") from None
        if not isinstance(data, dict):
            return Transient("the response is not a JSON object")
        self._note_quota(data)
        if "error_id" not in data:
            return data
        name = str(data.get("error_name", ""))
        message = str(data.get("error_message", ""))
        if name == "throttle_violation":
            found = _THROTTLE_SECONDS.search(message)
            seconds = float(found.group(1)) if found else 60.0
            if seconds > self._max_throttle_wait:
                raise QuotaExhausted(f"{label}: throttled for {seconds:g} s ({message})")
            return Transient(f"throttled by Stack Exchange ({message})", seconds=seconds)
        if name in _RETRYABLE_ERRORS:
            return Transient(f"{name} ({message})")
        if name in ("bad_parameter", "key_required", "access_denied") and message.strip().lower() == "key":
            raise KeyRejected("key rejected: the Stack Exchange API refused STACKEXCHANGE_KEY")
        raise StackExchangeError(f"{label}: {name or data['error_id']}: {message}")

    def _note_quota(self, data: Mapping[str, Any]) -> None:
        backoff = data.get("backoff")
        if isinstance(backoff, int | float) and not isinstance(backoff, bool) and backoff > 0:
            self._policy.hold_for(float(backoff), f"the Stack Exchange API asked to back off {backoff:g} s")
        remaining = data.get("quota_remaining")
        if isinstance(remaining, int) and not isinstance(remaining, bool):
            self.quota_remaining = remaining
        quota_max = data.get("quota_max")
        if isinstance(quota_max, int) and not isinstance(quota_max, bool):
            self.quota_max = quota_max
