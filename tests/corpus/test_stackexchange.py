"""The Stack Exchange client against recorded responses: has_more paging, answers, backoff, quota, errors.

Question pages are the recorded samples. No recording of an ``/answers`` response exists (see
samples/SOURCES.md), so answer pages are built here in the API's answer shape (``withbody``
filter: answer_id, question_id, is_accepted, score, creation_date, owner, body).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
import responses
from responses import matchers

from apps.corpus.records import ItemRecord
from apps.corpus.stackexchange import (
    KeyRejected,
    StackExchangeClient,
    StackExchangeError,
    StackExchangeUnavailable,
    question_to_record,
)

SAMPLES = Path(__file__).parent / "samples"
API = "https://api.stackexchange.com/2.3"
KEY = "se-key-U4dlfj3k2Q(("
NOW = 1_700_000_000.0
WITHBODY_IDS = "2984842;3151276;4387500"


def sample(name: str) -> Any:
    return json.loads((SAMPLES / name).read_text(encoding="utf-8"))


def answer(answer_id: int, question_id: int, *, accepted: bool = False, score: int = 0) -> dict[str, Any]:
    return {
        "owner": {
            "reputation": 10,
            "user_id": answer_id,
            "user_type": "registered",
            "display_name": "Conan O&#39;Brien",
        },
        "is_accepted": accepted,
        "score": score,
        "last_activity_date": 1275886649,
        "creation_date": 1275840083 + answer_id % 1000,
        "answer_id": answer_id,
        "question_id": question_id,
        "content_license": "CC BY-SA 2.5",
        "body": f"<p>answer {answer_id}</p>",
    }


def page(
    items: list[dict[str, Any]], has_more: bool = False, quota: int = 9000, **extra: Any
) -> dict[str, Any]:
    return {"items": items, "has_more": has_more, "quota_max": 10000, "quota_remaining": quota, **extra}


def withbody_page(has_more: bool = True, **extra: Any) -> dict[str, Any]:
    data = sample("se_search_advanced_withbody_excerpt.json")
    data["has_more"] = has_more
    data.update(extra)
    return dict(data)


ANSWERS = page(
    [
        answer(2984850, 2984842, score=5),
        answer(2984863, 2984842, accepted=True, score=1),
        answer(2984870, 2984842, score=7),
        answer(3151289, 3151276, accepted=True, score=12),
    ]
)


class Recorder:
    """Collects the client's sleeps and wait reports instead of sleeping; the clock stands still."""

    def __init__(self) -> None:
        self.sleeps: list[float] = []
        self.waits: list[tuple[float, str]] = []
        self.notices: list[str] = []

    def client(self, **options: Any) -> StackExchangeClient:
        return StackExchangeClient(
            sleep=self.sleeps.append,
            on_wait=lambda seconds, reason: self.waits.append((seconds, reason)),
            on_notice=self.notices.append,
            clock=lambda: NOW,
            **options,
        )


@pytest.fixture
def rsps() -> Iterator[responses.RequestsMock]:
    with responses.RequestsMock(assert_all_requests_are_fired=True) as mock:
        yield mock


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


def params_of(call: Any) -> dict[str, list[str]]:
    return parse_qs(urlsplit(call.request.url).query)


def on_page(number: int) -> list[Any]:
    return [matchers.query_param_matcher({"page": str(number)}, strict_match=False)]


# --- conversion --------------------------------------------------------------------------------


def test_a_question_object_becomes_a_record_with_unescaped_title() -> None:
    item = sample("gaea_search_advanced_questions.json")["items"][3]
    record = question_to_record(item)
    assert record.url == "https://stackoverflow.com/questions/35187659"
    assert (record.source, record.external_id, record.body_format) == ("stackoverflow", "35187659", "html")
    assert record.title == "Rails ... Can't access object?"
    assert record.tags == ["ruby-on-rails"]
    assert record.metadata["accepted_answer_id"] == 35187763
    assert record.created_at == datetime.fromtimestamp(item["creation_date"], tz=UTC)


def test_answers_come_accepted_first_then_by_score() -> None:
    question = sample("se_search_advanced_withbody_excerpt.json")["items"][0]
    record = question_to_record(question, ANSWERS["items"][:3])
    assert [(c.external_id, c.is_accepted, c.score) for c in record.comments] == [
        ("2984863", True, 1),
        ("2984870", False, 7),
        ("2984850", False, 5),
    ]
    assert all(c.is_answer and c.body_format == "html" for c in record.comments)
    assert record.comments[0].author == "Conan O'Brien"
    assert record.raw["answers"][0]["answer_id"] == 2984850


def test_another_site_gets_its_own_source_and_id() -> None:
    item = {
        "question_id": 12,
        "title": "t",
        "tags": ["keras"],
        "link": "https://datascience.stackexchange.com/questions/12/t",
    }
    record = question_to_record(item)
    assert (record.url, record.source, record.external_id) == (
        "https://datascience.stackexchange.com/questions/12",
        "stackexchange",
        "datascience:12",
    )


# --- paging and answers ------------------------------------------------------------------------


def test_questions_follow_has_more_and_carry_their_answers(
    rsps: responses.RequestsMock, recorder: Recorder
) -> None:
    rsps.get(f"{API}/search/advanced", json=withbody_page(has_more=True), match=on_page(1))
    rsps.get(f"{API}/questions/{WITHBODY_IDS}/answers", json=ANSWERS)
    second = sample("gaea_search_advanced_questions.json")
    second["has_more"] = False
    rsps.get(f"{API}/search/advanced", json=second, match=on_page(2))
    gaea_ids = ";".join(str(item["question_id"]) for item in second["items"])
    rsps.get(f"{API}/questions/{gaea_ids}/answers", json=page([]))

    records = list(recorder.client(key=KEY).questions(["c++", "c"]))

    assert len(records) == 13
    first = records[0]
    assert first.url == "https://stackoverflow.com/questions/2984842"
    assert first.body.startswith("<p>Delete every 't'th")
    assert [c.external_id for c in first.comments] == ["2984863", "2984870", "2984850"]
    assert [c.external_id for c in records[1].comments] == ["3151289"]
    assert records[2].comments == []
    query = params_of(rsps.calls[0])
    assert query == {
        "tagged": ["c++;c"],
        "site": ["stackoverflow"],
        "filter": ["withbody"],
        "sort": ["creation"],
        "order": ["asc"],
        "pagesize": ["100"],
        "page": ["1"],
        "key": [KEY],
    }
    assert params_of(rsps.calls[1])["filter"] == ["withbody"]
    assert recorder.sleeps == []


def test_answers_are_fetched_100_question_ids_at_a_time_and_paged(
    rsps: responses.RequestsMock, recorder: Recorder
) -> None:
    ids = list(range(1, 151))
    first_batch = ";".join(map(str, ids[:100]))
    rsps.get(
        f"{API}/questions/{first_batch}/answers",
        json=page([answer(1001, 1)], has_more=True),
        match=on_page(1),
    )
    rsps.get(f"{API}/questions/{first_batch}/answers", json=page([answer(1002, 2)]), match=on_page(2))
    rsps.get(f"{API}/questions/{';'.join(map(str, ids[100:]))}/answers", json=page([answer(1150, 150)]))
    grouped = recorder.client().answers_for(ids)
    assert {question: [a["answer_id"] for a in answers] for question, answers in grouped.items()} == {
        1: [1001],
        2: [1002],
        150: [1150],
    }


def test_accepted_only_asks_the_api_and_checks_again(
    rsps: responses.RequestsMock, recorder: Recorder
) -> None:
    data = withbody_page(has_more=False)
    del data["items"][1]["accepted_answer_id"]
    rsps.get(f"{API}/search/advanced", json=data)
    records = list(recorder.client().questions(["c"], accepted_only=True, answers=False))
    assert params_of(rsps.calls[0])["accepted"] == ["True"]
    assert [record.external_id for record in records] == ["2984842", "4387500"]
    assert "key" not in params_of(rsps.calls[0])


def test_any_of_several_tags_runs_one_query_per_tag_without_repeats(
    rsps: responses.RequestsMock, recorder: Recorder
) -> None:
    data = withbody_page(has_more=False)
    rsps.get(
        f"{API}/search/advanced",
        json=data,
        match=[matchers.query_param_matcher({"tagged": "c"}, strict_match=False)],
    )
    rsps.get(
        f"{API}/search/advanced",
        json=data,
        match=[matchers.query_param_matcher({"tagged": "c++"}, strict_match=False)],
    )
    records = list(recorder.client().questions(["c", "c++"], match="any", answers=False))
    assert [record.external_id for record in records] == ["2984842", "3151276", "4387500"]
    assert len(rsps.calls) == 2


def test_a_limit_stops_early(rsps: responses.RequestsMock, recorder: Recorder) -> None:
    rsps.get(f"{API}/search/advanced", json=withbody_page(has_more=True))
    records = list(recorder.client().questions(["c"], answers=False, limit=2))
    assert len(records) == 2
    assert len(rsps.calls) == 1


def test_bad_arguments_are_refused(recorder: Recorder) -> None:
    client = recorder.client()
    with pytest.raises(ValueError, match="at least one tag"):
        list(client.questions([" "]))
    with pytest.raises(ValueError, match="';'"):
        list(client.questions(["a;b"]))


# --- backoff and quota -------------------------------------------------------------------------


def test_backoff_is_slept_before_the_next_request(rsps: responses.RequestsMock, recorder: Recorder) -> None:
    rsps.get(f"{API}/search/advanced", json=withbody_page(has_more=False, backoff=10))
    rsps.get(f"{API}/questions/{WITHBODY_IDS}/answers", json=ANSWERS)
    records = list(recorder.client().questions(["c"]))
    assert len(records) == 3
    assert recorder.sleeps == [10.0]
    assert "back off" in recorder.waits[0][1]


def test_a_spent_quota_stops_cleanly_after_the_complete_page(
    rsps: responses.RequestsMock, recorder: Recorder
) -> None:
    rsps.get(f"{API}/search/advanced", json=withbody_page(has_more=True, quota_remaining=1))
    rsps.get(f"{API}/questions/{WITHBODY_IDS}/answers", json={**ANSWERS, "quota_remaining": 0})
    client = recorder.client()
    records = list(client.questions(["c"]))
    assert len(records) == 3
    assert client.quota_exhausted and client.quota_remaining == 0
    [notice] = recorder.notices
    assert "quota" in notice and "3 question(s)" in notice
    assert len(rsps.calls) == 2


def test_questions_whose_answers_cannot_be_fetched_are_not_yielded(
    rsps: responses.RequestsMock, recorder: Recorder
) -> None:
    rsps.get(f"{API}/search/advanced", json=withbody_page(has_more=True, quota_remaining=0))
    client = recorder.client()
    assert list(client.questions(["c"])) == []
    assert client.quota_exhausted
    assert "0 question(s)" in recorder.notices[0]


def test_a_short_throttle_is_waited_out(rsps: responses.RequestsMock, recorder: Recorder) -> None:
    throttle = {
        "error_id": 502,
        "error_name": "throttle_violation",
        "error_message": "too many requests from this IP, more requests available in 5 seconds",
    }
    rsps.get(f"{API}/search/advanced", status=400, json=throttle)
    rsps.get(f"{API}/search/advanced", json=withbody_page(has_more=False))
    records = list(recorder.client().questions(["c"], answers=False))
    assert len(records) == 3
    assert recorder.sleeps == [5.0]


def test_a_day_long_throttle_means_the_quota_is_spent(
    rsps: responses.RequestsMock, recorder: Recorder
) -> None:
    throttle = {
        "error_id": 502,
        "error_name": "throttle_violation",
        "error_message": "too many requests from this IP, more requests available in 80000 seconds",
    }
    rsps.get(f"{API}/search/advanced", status=400, json=throttle)
    client = recorder.client()
    assert list(client.questions(["c"])) == []
    assert client.quota_exhausted
    assert recorder.sleeps == []


# --- errors ------------------------------------------------------------------------------------


def test_a_rejected_key_stops_without_revealing_it(rsps: responses.RequestsMock, recorder: Recorder) -> None:
    rsps.get(
        f"{API}/search/advanced",
        status=400,
        json={"error_id": 400, "error_name": "bad_parameter", "error_message": "key"},
    )
    client = recorder.client(key=KEY)
    with pytest.raises(KeyRejected) as caught:
        list(client.questions(["c"]))
    assert KEY not in str(caught.value)
    assert KEY not in repr(client)


def test_another_api_error_is_named(rsps: responses.RequestsMock, recorder: Recorder) -> None:
    rsps.get(
        f"{API}/search/advanced",
        status=400,
        json={"error_id": 400, "error_name": "bad_parameter", "error_message": "site is required"},
    )
    with pytest.raises(StackExchangeError, match="bad_parameter: site is required"):
        list(recorder.client().questions(["c"], site=""))


def test_internal_errors_and_5xx_are_retried_then_raise(
    rsps: responses.RequestsMock, recorder: Recorder
) -> None:
    rsps.get(
        f"{API}/search/advanced",
        status=500,
        json={"error_id": 500, "error_name": "internal_error", "error_message": "x"},
    )
    rsps.get(f"{API}/search/advanced", status=503, body="<html>down</html>")
    rsps.get(f"{API}/search/advanced", json=withbody_page(has_more=False))
    assert len(list(recorder.client().questions(["c"], answers=False))) == 3
    assert recorder.sleeps == [1.0, 2.0]


def test_retries_are_bounded(rsps: responses.RequestsMock, recorder: Recorder) -> None:
    for _ in range(3):
        rsps.get(f"{API}/search/advanced", status=502, body="bad gateway")
    with pytest.raises(StackExchangeUnavailable, match="2 retries exhausted"):
        list(recorder.client(max_retries=2).questions(["c"]))


def test_a_connection_error_never_quotes_the_url_with_the_key(
    rsps: responses.RequestsMock, recorder: Recorder
) -> None:
    failure = requests.ConnectionError(f"Max retries exceeded with url: /2.3/search/advanced?key={KEY}")
    rsps.get(f"{API}/search/advanced", body=failure)
    rsps.get(f"{API}/search/advanced", body=failure)
    with pytest.raises(StackExchangeUnavailable) as caught:
        list(recorder.client(key=KEY, max_retries=1).questions(["c"]))
    assert KEY not in str(caught.value)
    assert all(KEY not in reason for _, reason in recorder.waits)
    error = caught.value
    assert error.__cause__ is None and (error.__context__ is None or error.__suppress_context__)


def test_a_truncated_body_is_retried(rsps: responses.RequestsMock, recorder: Recorder) -> None:
    text = json.dumps(withbody_page(has_more=False))
    rsps.get(f"{API}/search/advanced", body=text[:200], content_type="application/json")
    rsps.get(f"{API}/search/advanced", body=text, content_type="application/json")
    assert len(list(recorder.client().questions(["c"], answers=False))) == 3
    assert recorder.sleeps == [1.0]


def test_records_hold_no_key(rsps: responses.RequestsMock, recorder: Recorder) -> None:
    rsps.get(f"{API}/search/advanced", json=withbody_page(has_more=False))
    rsps.get(f"{API}/questions/{WITHBODY_IDS}/answers", json=ANSWERS)
    records: list[ItemRecord] = list(recorder.client(key=KEY).questions(["c"]))
    assert all(KEY not in json.dumps(record.raw) + json.dumps(record.metadata) for record in records)
