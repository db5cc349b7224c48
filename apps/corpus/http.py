"""The one HTTP policy of every importer (GitHub, Stack Exchange, and the ones to come).

Pure module (no Django). An API client builds one :class:`HttpPolicy` and sends every request
through :meth:`HttpPolicy.get`, which owns what is the same for every API:

- **timeouts**: every request is sent with ``timeout=(connect, read)`` (10 s and 60 s by default);
- **retries**: connection errors (refused, reset, timed out, a transfer cut short) and ``5xx``
  answers are retried ``max_retries`` times with exponential backoff (``backoff_base * 2**n``
  seconds: 1, 2, 4, 8, 16 by default), then :class:`RetriesExhausted` is raised;
- **waits the server asks for**: ``Retry-After`` (seconds or an HTTP date) on ``403``, ``429`` and
  ``503``, and an exhausted rate limit (``403``/``429`` with ``X-RateLimit-Remaining: 0``): waited
  until ``X-RateLimit-Reset`` + 1 s for clock skew. A successful answer that leaves
  ``X-RateLimit-Remaining: 0`` makes the next request wait for the reset instead of failing first.
  At most ``max_rate_limit_waits`` such waits per request (then :class:`StillRateLimited`);
- **a max wait**: a wait longer than ``max_wait`` seconds is not slept but raises :class:`WaitTooLong`
  (a job does not hang for a day on a reset far away);
- **the clock**: ``sleep`` and ``clock`` are injected, so tests replay recorded answers without
  waiting; every wait is told to ``on_wait(seconds, reason)`` before it starts.

What only one API knows stays in its client, in the ``judge`` it passes to :meth:`HttpPolicy.get`:
the judge reads an answer the policy did not retry and returns the parsed value, or asks for a
:class:`Transient` retry (a body that is not valid JSON, Stack Exchange's ``internal_error``), or a
:class:`RateLimited` wait (GitHub's secondary limit without headers), or raises the client's own
error (401, 404...). Waits that arrive in a body (Stack Exchange's ``backoff`` field) go through
:meth:`HttpPolicy.hold_for`, so they use the same sleep, clock and ``on_wait``. A ``4xx`` is never
retried by the policy: only the rate-limit cases above, or what a judge asks for.

Why a loop here rather than urllib3's ``Retry`` mounted through a requests ``HTTPAdapter``: the
adapter retries inside ``HTTPAdapter.send``, below the boundary the importer tests replay recorded
answers at (``responses`` replaces ``send``; it emulates status retries without ever sleeping and
never retries a connection error), so its backoff could not be tested without a socket; it cannot
retry a transfer cut while the body is read or a body that is not JSON (both happen after it has
returned); it sleeps with ``time.sleep``, parses HTTP-date ``Retry-After`` against the real clock,
shares one budget between server errors and rate limits, and cannot tell a caller what it waits
for. The sessions made by :func:`new_session` therefore mount an adapter with urllib3's retries off:
one layer counts, reports and bounds the retries.

Exceptions raised by the policy carry only the request's label (``GET /path``), never a URL with a
query (a key) or a header (a token), and are raised outside any ``except`` block, so that no
requests exception (whose request holds the credentials) hangs on as their context.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from urllib.parse import urlsplit, urlunsplit

import requests
from requests.adapters import HTTPAdapter

# requests wraps resets and refusals in its ConnectionError; the builtin one is a raw socket error.
CONNECTION_ERRORS = (
    requests.ConnectionError,
    requests.Timeout,
    requests.exceptions.ChunkedEncodingError,
    ConnectionError,
)

WaitCallback = Callable[[float, str], None]
NoticeCallback = Callable[[str], None]
Timeout = float | tuple[float, float]

USER_AGENT = "taxonomist-importer"
DEFAULT_TIMEOUT: tuple[float, float] = (10.0, 60.0)
DEFAULT_MAX_WAIT = 2 * 3600.0  # GitHub's primary limit resets within the hour; leave it room
RETRY_AFTER_STATUSES = frozenset({403, 429, 503})
RATE_LIMIT_STATUSES = frozenset({403, 429})


class ServiceError(Exception):
    """A request to a source's API failed: the base of each importer's errors (GitHub's, GitLab's, Jira's,
    Stack Exchange's). The message names the request, never a token or key; `status` is the HTTP status
    when there was one."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


def api_base(api_url: str, what: str = "API") -> tuple[str, tuple[str, str]]:
    """An API's base URL without a trailing slash, query or fragment, and its origin (scheme, host), the
    only place a client sends its credentials. ValueError names a URL that is not absolute http(s)."""
    parts = urlsplit(api_url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"not an absolute http(s) {what} URL: {api_url!r}")
    return urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/"), "", "")), (
        parts.scheme,
        parts.netloc,
    )


def new_session(user_agent: str = USER_AGENT) -> requests.Session:
    """A requests session for an importer: its own ``User-Agent``, no retries below the policy."""
    session = requests.Session()
    session.headers["User-Agent"] = user_agent
    adapter = HTTPAdapter(max_retries=0)  # the policy retries; two layers would multiply the tries
    session.mount("https://", adapter)
    session.mount("http://", adapter)
    return session


@dataclass(frozen=True, slots=True)
class Transient:
    """A failure worth retrying: after exponential backoff, or after ``seconds`` if the API named them.

    Counts against ``max_retries``. ``invalid_body`` marks a body that could not be read, so the
    client can raise its own kind of error when the retries run out.
    """

    problem: str
    seconds: float | None = None
    invalid_body: bool = False


@dataclass(frozen=True, slots=True)
class RateLimited:
    """The API asks to wait ``seconds`` before the same request; counts against ``max_rate_limit_waits``."""

    seconds: float
    reason: str


class PolicyError(Exception):
    """The policy gave up on a request; the message names it (``GET /path``), never a credential."""

    def __init__(self, message: str, status: int | None = None, *, invalid_body: bool = False) -> None:
        super().__init__(message)
        self.status = status
        self.invalid_body = invalid_body


class RetriesExhausted(PolicyError):
    """Connection errors, server errors or what the judge called transient outlasted ``max_retries``."""


class StillRateLimited(PolicyError):
    """The API kept asking to wait after ``max_rate_limit_waits`` waits."""


class WaitTooLong(PolicyError):
    """The API asked for a wait longer than ``max_wait``."""


def retry_after_seconds(value: str, now: float) -> float | None:
    """``Retry-After`` in seconds from ``now``: a number of seconds or an HTTP date; ``None`` if neither."""
    text = value.strip()
    if text.isdigit():
        return float(text)
    try:
        moment = parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return max(moment.timestamp() - now, 0.0)


def rate_limit_reset(headers: Mapping[str, str]) -> int | None:
    """The epoch second the limit resets at, when ``X-RateLimit-Remaining`` says it is used up."""
    reset = headers.get("X-RateLimit-Reset", "")
    if headers.get("X-RateLimit-Remaining") == "0" and reset.isdigit():
        return int(reset)
    return None


def server_wait(status: int, headers: Mapping[str, str], now: float) -> RateLimited | None:
    """The wait an answer asks for through its headers (``Retry-After``, an exhausted rate limit), if any."""
    retry_after = headers.get("Retry-After")
    if status in RETRY_AFTER_STATUSES and retry_after is not None:
        seconds = retry_after_seconds(retry_after, now)
        if seconds is not None:
            what = "server unavailable" if status == 503 else "rate limited"
            return RateLimited(seconds, f"{what} ({status}); Retry-After {retry_after}")
    reset = rate_limit_reset(headers) if status in RATE_LIMIT_STATUSES else None
    if reset is not None:
        return RateLimited(
            max(reset - now, 0.0) + 1.0, f"rate limit exhausted ({status}); resets at {_utc(reset)}"
        )
    return None


class HttpPolicy:
    """Timeouts, retries, backoff and waits for one API client (see the module docstring).

    One instance per client: it remembers a wait owed to the next request (:meth:`hold_until`).
    """

    def __init__(
        self,
        *,
        timeout: Timeout = DEFAULT_TIMEOUT,
        max_retries: int = 5,
        backoff_base: float = 1.0,
        max_wait: float = DEFAULT_MAX_WAIT,
        max_rate_limit_waits: int = 20,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.time,
        on_wait: WaitCallback | None = None,
    ) -> None:
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff_base = backoff_base
        self.max_wait = max_wait
        self.max_rate_limit_waits = max_rate_limit_waits
        self._sleep = sleep
        self._clock = clock
        self._on_wait = on_wait
        self._hold: tuple[float, str] | None = None

    def now(self) -> float:
        return self._clock()

    def backoff(self, failures: int) -> float:
        """Seconds to wait after the ``failures``-th failure in a row: ``backoff_base * 2**(failures-1)``."""
        return float(self.backoff_base * 2 ** (failures - 1))

    def wait(self, seconds: float, reason: str, *, label: str = "", status: int | None = None) -> None:
        """Tell ``on_wait``, then sleep; a wait over ``max_wait`` raises :class:`WaitTooLong` instead."""
        if seconds > self.max_wait:
            where = f"{label}: " if label else ""
            raise WaitTooLong(
                f"{where}{reason}: {seconds:g} s is longer than the max wait of {self.max_wait:g} s",
                status,
            )
        if self._on_wait is not None:
            self._on_wait(seconds, reason)
        self._sleep(seconds)

    def hold_until(self, moment: float, reason: str) -> None:
        """Make the next request wait until ``moment`` (epoch seconds) first; the later of two holds wins."""
        if self._hold is None or moment > self._hold[0]:
            self._hold = (moment, reason)

    def hold_for(self, seconds: float, reason: str) -> None:
        """Make the next request wait ``seconds`` from now first (a ``backoff`` an API sent in a body)."""
        self.hold_until(self.now() + seconds, reason)

    def get[T](
        self,
        session: requests.Session,
        url: str,
        *,
        label: str,
        judge: Callable[[requests.Response], T | Transient | RateLimited],
        params: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> T:
        """``GET url`` until ``judge`` accepts an answer; returns what the judge returned.

        ``label`` names the request in wait reasons and errors (``GET /repos/o/r/issues``): never
        put a query string with a key in it. Raises :class:`RetriesExhausted`,
        :class:`StillRateLimited`, :class:`WaitTooLong`, or whatever ``judge`` raises.
        """
        failures = 0
        rate_limit_waits = 0
        while True:
            self._wait_for_hold(label)
            # Failures are handled after the except block, so that no exception raised here keeps
            # the requests exception (whose request holds the credentials) as its context.
            response: requests.Response | None = None
            problem = ""
            try:
                response = session.get(url, params=params, headers=headers, timeout=self.timeout)
            except requests.Timeout as exc:
                problem = f"no answer within the timeout ({type(exc).__name__})"
            except CONNECTION_ERRORS as exc:
                problem = f"connection failed ({type(exc).__name__})"
            status = None if response is None else response.status_code
            verdict: T | Transient | RateLimited
            if response is None:
                verdict = Transient(problem)
            else:
                verdict = self._judge_status(response) or judge(response)
            if isinstance(verdict, RateLimited):
                rate_limit_waits += 1
                if rate_limit_waits > self.max_rate_limit_waits:
                    raise StillRateLimited(
                        f"{label}: still rate limited after {self.max_rate_limit_waits} waits", status
                    )
                self.wait(verdict.seconds, verdict.reason, label=label, status=status)
                continue
            if isinstance(verdict, Transient):
                failures += 1
                if failures > self.max_retries:
                    raise RetriesExhausted(
                        f"{label}: {verdict.problem}, {self.max_retries} retries exhausted",
                        status,
                        invalid_body=verdict.invalid_body,
                    )
                seconds = self.backoff(failures) if verdict.seconds is None else verdict.seconds
                self.wait(
                    seconds,
                    f"{label}: {verdict.problem}; retry {failures} of {self.max_retries}",
                    label=label,
                    status=status,
                )
                continue
            assert response is not None  # a verdict other than a retry comes from an answer
            reset = rate_limit_reset(response.headers)
            if reset is not None:
                self.hold_until(reset + 1.0, "rate limit used up; waiting for it to reset")
            return verdict

    def _judge_status(self, response: requests.Response) -> Transient | RateLimited | None:
        status = response.status_code
        asked = server_wait(status, response.headers, self.now())
        if asked is not None:
            return asked
        if status >= 500:
            return Transient(f"server error {status}")
        return None

    def _wait_for_hold(self, label: str) -> None:
        if self._hold is None:
            return
        moment, reason = self._hold
        self._hold = None
        remaining = moment - self.now()
        if remaining > 0:
            self.wait(remaining, reason, label=label)


def _utc(epoch: int) -> str:
    return datetime.fromtimestamp(epoch, tz=UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
