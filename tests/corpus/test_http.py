"""The importers' one HTTP policy: retries with backoff, Retry-After, rate-limit resets, timeouts, 4xx.

No test sleeps: the policy's sleep records the waits and its clock stands still (or moves when told).
"""

from __future__ import annotations

from collections.abc import Iterator
from email.utils import formatdate
from typing import Any

import pytest
import requests
import responses

from apps.corpus.github import GitHubClient, GitHubUnavailable
from apps.corpus.http import (
    HttpPolicy,
    RateLimited,
    RetriesExhausted,
    StillRateLimited,
    Transient,
    WaitTooLong,
    new_session,
)
from apps.corpus.stackexchange import StackExchangeClient, StackExchangeUnavailable

URL = "https://api.example.org/things"
NOW = 1_700_000_000.0


class Clock:
    def __init__(self) -> None:
        self.now = NOW
        self.sleeps: list[float] = []
        self.waits: list[tuple[float, str]] = []

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds

    def policy(self, **options: Any) -> HttpPolicy:
        return HttpPolicy(
            sleep=self.sleep,
            clock=lambda: self.now,
            on_wait=lambda seconds, reason: self.waits.append((seconds, reason)),
            **options,
        )


@pytest.fixture
def rsps() -> Iterator[responses.RequestsMock]:
    with responses.RequestsMock(assert_all_requests_are_fired=True) as mock:
        yield mock


@pytest.fixture
def clock() -> Clock:
    return Clock()


def accept(response: requests.Response) -> requests.Response:
    return response


def get(policy: HttpPolicy, **options: Any) -> requests.Response:
    return policy.get(new_session(), URL, label="GET /things", judge=accept, **options)


def test_a_server_error_then_an_answer_is_retried_after_a_backoff(
    rsps: responses.RequestsMock, clock: Clock
) -> None:
    rsps.get(URL, status=502)
    rsps.get(URL, status=503)
    rsps.get(URL, json={"ok": True})
    assert get(clock.policy()).json() == {"ok": True}
    assert clock.sleeps == [1.0, 2.0]
    assert clock.waits[0][1] == "GET /things: server error 502; retry 1 of 5"


def test_the_backoff_doubles_from_its_base_and_the_retries_are_bounded(
    rsps: responses.RequestsMock, clock: Clock
) -> None:
    for _ in range(4):
        rsps.get(URL, status=500)
    with pytest.raises(
        RetriesExhausted, match="GET /things: server error 500, 3 retries exhausted"
    ) as caught:
        get(clock.policy(max_retries=3, backoff_base=0.5))
    assert caught.value.status == 500
    assert clock.sleeps == [0.5, 1.0, 2.0]


def test_retry_after_in_seconds_is_honoured(rsps: responses.RequestsMock, clock: Clock) -> None:
    rsps.get(URL, status=429, headers={"Retry-After": "7"})
    rsps.get(URL, json=[])
    get(clock.policy())
    assert clock.sleeps == [7.0]
    assert "Retry-After 7" in clock.waits[0][1]


def test_retry_after_as_an_http_date_is_read_against_the_policy_clock(
    rsps: responses.RequestsMock, clock: Clock
) -> None:
    rsps.get(URL, status=503, headers={"Retry-After": formatdate(NOW + 20, usegmt=True)})
    rsps.get(URL, json=[])
    get(clock.policy())
    assert clock.sleeps == [20.0]


def test_an_exhausted_rate_limit_is_waited_out_until_its_reset(
    rsps: responses.RequestsMock, clock: Clock
) -> None:
    headers = {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(int(NOW) + 30)}
    rsps.get(URL, status=403, headers=headers)
    rsps.get(URL, json=[])
    get(clock.policy(max_wait=60))
    assert clock.sleeps == [31.0]  # one second more for clock skew
    assert "rate limit exhausted (403)" in clock.waits[0][1]


def test_a_reset_further_away_than_the_max_wait_raises_without_waiting(
    rsps: responses.RequestsMock, clock: Clock
) -> None:
    headers = {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(int(NOW) + 3600)}
    rsps.get(URL, status=429, headers=headers)
    with pytest.raises(WaitTooLong, match="longer than the max wait of 600 s") as caught:
        get(clock.policy(max_wait=600))
    assert caught.value.status == 429
    assert clock.sleeps == [] and clock.waits == []


def test_an_answer_that_uses_up_the_limit_makes_the_next_request_wait_first(
    rsps: responses.RequestsMock, clock: Clock
) -> None:
    rsps.get(URL, json=[], headers={"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(int(NOW) + 50)})
    rsps.get(URL, json=[])
    policy = clock.policy()
    get(policy)
    assert clock.sleeps == []
    clock.now += 10  # the caller worked for a while: only what is left of the wait is slept
    get(policy)
    assert clock.sleeps == [41.0]


def test_rate_limit_waits_are_bounded(rsps: responses.RequestsMock, clock: Clock) -> None:
    for _ in range(3):
        rsps.get(URL, status=429, headers={"Retry-After": "1"})
    with pytest.raises(StillRateLimited, match="still rate limited after 2 waits"):
        get(clock.policy(max_rate_limit_waits=2))
    assert clock.sleeps == [1.0, 1.0]


@pytest.mark.parametrize("status", [400, 401, 403, 404, 410, 422, 429])
def test_a_4xx_is_not_retried_unless_it_is_a_rate_limit(
    rsps: responses.RequestsMock, clock: Clock, status: int
) -> None:
    rsps.get(URL, status=status, json={"message": "no"})  # a 429 without a header to say how long
    assert get(clock.policy()).status_code == status
    assert len(rsps.calls) == 1 and clock.sleeps == []


def test_requests_are_sent_with_the_connect_and_read_timeouts(
    rsps: responses.RequestsMock, clock: Clock
) -> None:
    rsps.get(URL, json=[])
    get(clock.policy(timeout=(3.0, 30.0)))
    assert rsps.calls[0].request.req_kwargs["timeout"] == (3.0, 30.0)  # type: ignore[attr-defined]


def test_a_timeout_is_retried_then_raises(rsps: responses.RequestsMock, clock: Clock) -> None:
    rsps.get(URL, body=requests.ReadTimeout("read timed out"))
    rsps.get(URL, body=requests.ConnectTimeout("connect timed out"))
    with pytest.raises(RetriesExhausted, match="no answer within the timeout") as caught:
        get(clock.policy(max_retries=1))
    assert clock.sleeps == [1.0]
    assert caught.value.__context__ is None  # raised outside the except: no request hangs on


def test_a_timeout_raises_the_github_importers_error(rsps: responses.RequestsMock, clock: Clock) -> None:
    for _ in range(3):
        rsps.get("https://api.github.com/repos/a/b/issues", body=requests.ReadTimeout("timed out"))
    client = GitHubClient(token="t0ken", sleep=clock.sleep, clock=lambda: clock.now, max_retries=2)
    with pytest.raises(GitHubUnavailable, match=r"no answer within the timeout.*2 retries exhausted"):
        list(client.repo_issues("a/b"))
    assert clock.sleeps == [1.0, 2.0]


def test_a_timeout_raises_the_stack_exchange_importers_error(
    rsps: responses.RequestsMock, clock: Clock
) -> None:
    for _ in range(2):
        rsps.get("https://api.stackexchange.com/2.3/search/advanced", body=requests.ReadTimeout("timed out"))
    client = StackExchangeClient(sleep=clock.sleep, clock=lambda: clock.now, max_retries=1)
    with pytest.raises(StackExchangeUnavailable, match="no answer within the timeout"):
        list(client.questions(["c"]))


def test_a_judge_decides_what_else_is_transient_or_a_wait(rsps: responses.RequestsMock, clock: Clock) -> None:
    rsps.get(URL, body="not json")
    rsps.get(URL, json={"throttled": 5})
    rsps.get(URL, json={"done": True})

    def judge(response: requests.Response) -> dict[str, Any] | Transient | RateLimited:
        try:
            data = response.json()
        except ValueError:
            return Transient("invalid JSON", invalid_body=True)
        if "throttled" in data:
            return RateLimited(float(data["throttled"]), "throttled")
        return dict(data)

    policy = clock.policy()
    assert policy.get(new_session(), URL, label="GET /things", judge=judge) == {"done": True}
    assert clock.sleeps == [1.0, 5.0]


def test_a_hold_from_a_body_goes_through_the_policy_clock(rsps: responses.RequestsMock, clock: Clock) -> None:
    rsps.get(URL, json=[])
    policy = clock.policy()
    policy.hold_for(10, "asked to back off")
    policy.hold_for(4, "a shorter hold does not shorten the longer one")
    get(policy)
    assert clock.waits == [(10.0, "asked to back off")]


def test_sessions_leave_the_retries_to_the_policy() -> None:
    session = new_session()
    adapter = session.get_adapter("https://api.github.com")
    assert adapter.max_retries.total == 0  # type: ignore[attr-defined]
    assert session.headers["User-Agent"] == "taxonomist-importer"
