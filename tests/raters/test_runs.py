"""Model runs against a local fake OpenAI-compatible server: answers stored with what the server said,
refusals kept with their reason and raw text, 429 Retry-After, 5xx and timeouts retried, a restart that
asks only for what it lacks, tokens and cost recorded, cancellation, and the key never stored."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from apps.accounts.models import Study
from apps.core.models import JobStatus
from apps.corpus.models import Item
from apps.raters import client
from apps.raters.models import AnswerStatus, ModelAnswer, ModelLabel, ModelRater, ModelRun
from apps.raters.runs import cancel_model_run, create_model_run, execute_model_run
from apps.raters.services import RaterSettings, add_model_rater
from tests.raters.fake_openai import FakeServer, Fault, fake_server

BUG = json.dumps({"findings": [{"kind": "bug", "symptom": "crash", "fix": ["code"]}]})
QUESTION = json.dumps({"findings": [{"kind": "question", "symptom": "slow", "fix": ["docs", "config"]}]})


def answer(title: str) -> str:
    return QUESTION if title.endswith(("0", "5")) else BUG


@pytest.fixture
def waits(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The client's waits, recorded instead of slept."""
    seen: list[float] = []
    monkeypatch.setattr(client, "sleep", seen.append)
    return seen


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with fake_server(FakeServer(answer=answer)) as running:
        yield running


def rater_for(study: Study, server: FakeServer, **settings: object) -> ModelRater:
    values: dict[str, object] = {
        "kind": "openai",
        "base_url": server.url,
        "model": "gpt-test",
        "api_key_env": "FAKE_KEY",
    }
    return add_model_rater(study, "gpt", RaterSettings(**{**values, **settings}), actor=None)  # type: ignore[arg-type]


def test_a_run_over_a_round_stores_each_answer_with_what_the_server_reported(
    study: Study,
    round_items: list[Item],
    server: FakeServer,
    monkeypatch: pytest.MonkeyPatch,
    waits: list[float],
) -> None:
    monkeypatch.setenv("FAKE_KEY", "sk-fake-secret-123")
    rater = rater_for(study, server)
    run = execute_model_run(create_model_run(study, rater, round_number=1, actor=None))
    assert run.status == JobStatus.SUCCEEDED and (run.asked, run.refused, run.failed) == (6, 0, 0)
    assert run.progress_done == run.progress_total == 6
    answers = ModelAnswer.objects.filter(rater=rater)
    assert answers.count() == 6 and {a.model_id for a in answers} == {"fake-model-1"}
    first = answers.first()
    assert first is not None and len(first.prompt_hash) == 64 and first.codebook_version == 3
    assert first.params["temperature"] == 0.0 and first.params["structured_output"] is True
    assert run.input_tokens > 0 and run.output_tokens == 72 and run.cost is None
    # structured output was asked for with the codebook's schema; the key went in the header only
    schema = server.requests[0]["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["findings"]["items"]["properties"]["kind"]["enum"] == ["bug", "question"]
    assert server.headers[0]["Authorization"] == "Bearer sk-fake-secret-123"
    stored = json.dumps(
        [
            list(ModelAnswer.objects.values()),
            list(ModelRun.objects.values()),
            list(ModelRater.objects.values()),
        ],
        default=str,
    )
    assert "sk-fake-secret" not in stored
    labels = set(
        ModelLabel.objects.filter(answer__item=round_items[0]).values_list("dimension__key", "category__key")
    )
    assert labels == {("kind", "bug"), ("symptom", "crash"), ("fix", "code")} or labels == {
        ("kind", "question"), ("symptom", "slow"), ("fix", "docs"), ("fix", "config"),
    }  # fmt: skip


def test_invalid_answers_are_refusals_with_reason_and_raw_text_never_labels(
    study: Study, round_items: list[Item], server: FakeServer, waits: list[float]
) -> None:
    server.faults = [
        Fault(content="I think it is a bug"),
        Fault(content=json.dumps({"findings": [{"kind": "feature", "symptom": "crash", "fix": ["code"]}]})),
        Fault(content=json.dumps({"findings": [{"kind": "bug", "fix": ["code"]}]})),
        Fault(
            content=json.dumps({"findings": [{"kind": ["bug", "question"], "symptom": "crash", "fix": []}]})
        ),
    ]
    rater = rater_for(study, server, concurrency=1)
    run = execute_model_run(create_model_run(study, rater, round_number=1, actor=None))
    assert (run.asked, run.refused) == (6, 4)
    refused = ModelAnswer.objects.filter(rater=rater, status=AnswerStatus.REFUSED).order_by("pk")
    reasons = [a.reason for a in refused]
    assert reasons[0].startswith("malformed JSON")
    assert "unknown category 'feature'" in reasons[1]
    assert "missing dimension 'symptom'" in reasons[2]
    assert "single-choice, got 2 categories" in reasons[3]
    assert refused[0].raw_text == "I think it is a bug"
    assert not ModelLabel.objects.filter(answer__status=AnswerStatus.REFUSED).exists()


def test_429_retry_after_500s_and_timeouts_are_retried_and_a_changing_model_id_is_recorded(
    study: Study, round_items: list[Item], server: FakeServer, waits: list[float]
) -> None:
    server.faults = [
        Fault(status=429, headers={"Retry-After": "7"}),
        Fault(status=500),
        Fault(status=503),
        Fault(delay=1.5),  # longer than the rater's timeout
    ]
    server.model_id = lambda n: "fake-model-1" if n <= 6 else "fake-model-2"
    rater = rater_for(study, server, concurrency=1, timeout=0.5)
    run = execute_model_run(create_model_run(study, rater, round_number=1, actor=None))
    assert (run.asked, run.failed) == (6, 0)
    assert waits == [7.0, 2.0, 4.0, 8.0]  # Retry-After, then the backoff doubles with each failure
    assert run.model_ids == ["fake-model-1", "fake-model-2"]
    assert "several model ids" in run.message
    assert set(ModelAnswer.objects.values_list("model_id", flat=True)) == {"fake-model-1", "fake-model-2"}


def test_a_server_that_keeps_failing_leaves_the_item_unanswered_for_a_rerun(
    study: Study, round_items: list[Item], server: FakeServer, waits: list[float]
) -> None:
    server.faults = [Fault(status=500)] * client.MAX_ATTEMPTS
    rater = rater_for(study, server, concurrency=1)
    run = execute_model_run(create_model_run(study, rater, round_number=1, actor=None))
    assert (run.asked, run.failed) == (5, 1)
    again = execute_model_run(create_model_run(study, rater, round_number=1, actor=None))
    assert (again.asked, again.reused, again.failed) == (1, 5, 0)
    assert ModelAnswer.objects.filter(rater=rater).count() == 6


def test_a_restarted_run_asks_only_for_what_it_lacks_and_a_new_prompt_asks_again(
    study: Study, round_items: list[Item], server: FakeServer, waits: list[float]
) -> None:
    rater = rater_for(study, server, samples=2)
    first = execute_model_run(create_model_run(study, rater, round_number=1, limit=3, actor=None))
    assert (first.asked, first.reused) == (6, 0)  # 3 items x 2 samples
    second = execute_model_run(create_model_run(study, rater, round_number=1, actor=None))
    assert (second.asked, second.reused) == (6, 6) and len(server.requests) == 12
    ModelRater.objects.filter(pk=rater.pk).update(
        prompt_template="Label it.\n$item\n$schema\n$codebook", prompt_version=2
    )
    rater.refresh_from_db()
    third = execute_model_run(create_model_run(study, rater, round_number=1, limit=1, actor=None))
    assert (third.asked, third.reused) == (2, 0)  # another prompt: another hash
    assert server.requests[-1]["messages"][-1]["content"].startswith("Label it.")


def test_a_server_without_structured_output_is_asked_for_plain_json(
    study: Study, round_items: list[Item], server: FakeServer, waits: list[float]
) -> None:
    server.structured = False
    rater = rater_for(study, server, concurrency=1)
    run = execute_model_run(create_model_run(study, rater, round_number=1, actor=None))
    assert (run.asked, run.refused) == (6, 0)
    assert "response_format" not in server.requests[-1]
    assert ModelAnswer.objects.filter(params__structured_output=False).count() == 6


def test_tokens_and_a_cost_estimate_are_recorded_where_a_price_is_set(
    study: Study, round_items: list[Item], server: FakeServer, waits: list[float]
) -> None:
    rater = rater_for(study, server)
    ModelRater.objects.filter(pk=rater.pk).update(price_input=Decimal("2.5"), price_output=Decimal("10"))
    rater.refresh_from_db()
    run = execute_model_run(create_model_run(study, rater, round_number=1, actor=None))
    expected = (Decimal("2.5") * run.input_tokens + Decimal(10) * run.output_tokens) / Decimal(1_000_000)
    assert run.cost == pytest.approx(expected)
    assert sum(ModelAnswer.objects.values_list("input_tokens", flat=True)) == run.input_tokens


def test_a_cancelled_run_stops_sending_and_ends_cancelled(
    study: Study,
    round_items: list[Item],
    server: FakeServer,
    waits: list[float],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server.delay = 0.3
    rater = rater_for(study, server, concurrency=1)
    run = create_model_run(study, rater, round_number=1, actor=None)
    monkeypatch.setattr("apps.raters.runs.CANCEL_CHECK_SECONDS", 0.0)

    def lead_cancels_once_answers_come(line: str) -> None:  # the progress the lead watches
        if "answered" in line:
            cancel_model_run(run)

    execute_model_run(run, echo=lead_cancels_once_answers_come)
    run.refresh_from_db()
    assert run.status == JobStatus.CANCELLED and run.message.startswith("Cancelled")
    assert 1 <= run.asked < 6 and len(server.requests) < 6
    assert ModelAnswer.objects.count() == run.asked  # what it got is kept
    queued = create_model_run(study, rater, round_number=1, actor=None)
    assert cancel_model_run(queued)
    queued.refresh_from_db()
    assert queued.status == JobStatus.CANCELLED


def test_model_run_command_runs_a_sample_and_the_unlabelled_items(
    study: Study, round_items: list[Item], server: FakeServer, waits: list[float]
) -> None:
    rater_for(study, server)
    out = StringIO()
    call_command(
        "model_run", "ddp", "--rater", "gpt", "--sample", "3", "--seed", "42", stdout=out, stderr=StringIO()
    )
    assert "succeeded: 3 answered (0 refused)" in out.getvalue()
    extra = Item.objects.create(study=study, url="https://github.com/example/repo/issues/999", title="Alone")
    call_command("model_run", "ddp", "--rater", "gpt", "--unlabelled", stdout=out, stderr=StringIO())
    # round 1's items have open assignments only (no submitted label): all 7 are unlabelled
    assert ModelAnswer.objects.filter(item=extra).exists()
    with pytest.raises(CommandError, match="no model rater named 'nope'"):
        call_command("model_run", "ddp", "--rater", "nope", "--round", "1")
    with pytest.raises(CommandError, match="needs its seed"):
        call_command("model_run", "ddp", "--rater", "gpt", "--sample", "2")
    with pytest.raises(CommandError, match="has no round 7"):
        call_command("model_run", "ddp", "--rater", "gpt", "--round", "7")


def test_a_rejected_key_fails_the_run_with_the_servers_message(
    study: Study, round_items: list[Item], server: FakeServer, waits: list[float]
) -> None:
    server.faults = [Fault(status=401)] * 10
    rater = rater_for(study, server, concurrency=1)
    run = execute_model_run(create_model_run(study, rater, round_number=1, actor=None))
    assert run.status == JobStatus.FAILED and "401" in run.error
    assert not ModelAnswer.objects.exists()


def test_a_run_logs_neither_the_key_nor_the_password_of_its_base_url(
    study: Study,
    round_items: list[Item],
    server: FakeServer,
    monkeypatch: pytest.MonkeyPatch,
    waits: list[float],
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setenv("FAKE_KEY", "sk-fake-secret-123")
    with_password = server.url.replace("http://", "http://someone:pw-secret-77@")
    rater = rater_for(study, server, base_url=with_password)
    caplog.set_level(logging.DEBUG)
    run = execute_model_run(create_model_run(study, rater, round_number=1, actor=None))
    assert run.status == JobStatus.SUCCEEDED and run.asked == 6
    logged = "\n".join(f"{r.name} {r.getMessage()} {r.args!r}" for r in caplog.records)
    assert "pw-secret-77" not in logged and "sk-fake-secret" not in logged
    assert rater.host == server.url.split("//")[1].split("/")[0]  # shown without the user and password
