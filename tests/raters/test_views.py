"""The Models screen (#21): a lead adds a model rater in the browser, starts a run on a round against a
local fake OpenAI-compatible server, watches its row (polled) and cancels a run; annotators never reach
any of it, and a key is never asked for, only the name of its variable."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from apps.accounts.models import Study, User
from apps.core.models import JobStatus
from apps.corpus.models import Item
from apps.raters import client as model_client
from apps.raters.models import ModelRater, ModelRun
from apps.raters.runs import create_model_run
from apps.raters.services import base_url_allowed
from tests.conftest import login
from tests.raters.fake_openai import FakeServer, fake_server
from tests.raters.test_runs import answer

pytestmark = pytest.mark.django_db


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeServer]:
    monkeypatch.setattr(model_client, "sleep", lambda seconds: None)
    with fake_server(FakeServer(answer=answer)) as running:
        yield running


def _add(client: Client, study: Study, server: FakeServer, **fields: Any) -> Any:
    data = {"name": "gpt", "kind": "openai", "base_url": server.url, "model": "gpt-test",
            "api_key_env": "MODEL_KEY_FAKE", "temperature": "0", "samples": "1", "concurrency": "2",
            "timeout": "10", **fields}  # fmt: skip
    return client.post(reverse("raters:rater-add", args=[study.slug]), data)


def test_a_lead_adds_a_rater_and_runs_it_on_a_round_and_its_row_shows_the_counts(
    client: Client, study: Study, lead: User, round_items: list[Item], server: FakeServer,
    monkeypatch: pytest.MonkeyPatch, django_capture_on_commit_callbacks: Any,
) -> None:  # fmt: skip
    monkeypatch.setenv("MODEL_KEY_FAKE", "sk-fake-secret-123")
    login(client, lead)
    assert _add(client, study, server).status_code == 302
    rater = ModelRater.objects.get(study=study, name="gpt")
    assert (rater.model, rater.api_key_env) == ("gpt-test", "MODEL_KEY_FAKE") and rater.host.startswith(
        "127.0.0.1:"
    )

    with django_capture_on_commit_callbacks(execute=True):  # the run goes to the worker on commit
        response = client.post(
            reverse("raters:run-start", args=[study.slug, rater.pk]), {"scope": "round", "round": "1"}
        )

    assert response.status_code == 302
    run = ModelRun.objects.get(rater=rater)  # tests run tasks eagerly: the run is done
    assert run.status == JobStatus.SUCCEEDED and run.asked == len(round_items), run.message
    page = client.get(reverse("raters:models", args=[study.slug])).content.decode()
    assert 'data-rater="gpt"' in page and f'id="model-run-{run.pk}" data-status="succeeded"' in page
    assert "sk-fake-secret-123" not in page
    row = client.get(reverse("raters:run", args=[study.slug, run.pk]), headers={"HX-Request": "true"})
    assert row.content.decode().lstrip().startswith(f'<tr id="model-run-{run.pk}"')


def test_bad_settings_and_a_bad_scope_are_named_and_nothing_is_written(
    client: Client, study: Study, lead: User, round_items: list[Item], server: FakeServer
) -> None:
    login(client, lead)
    response = _add(client, study, server, base_url="ftp://nowhere", name="bad one")
    text = response.content.decode()
    assert response.status_code == 400 and "the base URL must be an http:// or https:// URL" in text
    assert "the name must be 1 to 64 letters" in text and not ModelRater.objects.exists()

    _add(client, study, server)
    rater = ModelRater.objects.get()
    response = client.post(
        reverse("raters:run-start", args=[study.slug, rater.pk]), {"scope": "round", "round": "9"}
    )
    assert response.status_code == 400 and "has no round 9 (rounds: 1)" in response.content.decode()
    response = client.post(
        reverse("raters:run-start", args=[study.slug, rater.pk]), {"scope": "sample", "sample_size": "3"}
    )
    assert response.status_code == 400 and "a sample needs its seed" in response.content.decode()
    assert not ModelRun.objects.exists()


def test_a_lead_cancels_a_queued_run(
    client: Client, study: Study, lead: User, round_items: list[Item], server: FakeServer
) -> None:
    login(client, lead)
    _add(client, study, server)
    run = create_model_run(study, ModelRater.objects.get(), round_number=1, actor=lead)  # recorded, not sent
    page = client.get(reverse("raters:models", args=[study.slug])).content.decode()
    assert f'hx-get="{reverse("raters:run", args=[study.slug, run.pk])}"' in page  # queued: polled

    client.post(reverse("raters:run-cancel", args=[study.slug, run.pk]))

    run.refresh_from_db()
    assert run.status == JobStatus.CANCELLED and run.cancel_requested


def test_annotators_and_outsiders_never_reach_the_models_screen(
    client: Client, study: Study, annotator_a: User, outsider: User
) -> None:
    url = reverse("raters:models", args=[study.slug])
    assert login(client, annotator_a).get(url).status_code == 403
    assert login(client, outsider).get(url).status_code == 404


@pytest.mark.parametrize("variable", ["SECRET_KEY", "DATABASE_URL", "GITLAB_TOKEN", "HOME"])
def test_a_lead_cannot_send_a_server_secret_to_a_server_of_their_choosing(
    client: Client, study: Study, lead: User, server: FakeServer, variable: str
) -> None:
    login(client, lead)
    response = _add(client, study, server, api_key_env=variable)
    assert (
        response.status_code == 400
        and f"the API key variable &#x27;{variable}&#x27; is not one" in response.content.decode()
    )
    assert not ModelRater.objects.exists()


@pytest.mark.parametrize("variable", ["OPENAI_API_KEY", "MODEL_KEY_OLLAMA", ""])
def test_the_allowed_key_variables_and_none_are_accepted(
    client: Client, study: Study, lead: User, server: FakeServer, variable: str
) -> None:
    login(client, lead)
    assert _add(client, study, server, api_key_env=variable).status_code == 302


def test_out_of_range_run_numbers_are_refused_not_overflowed(
    client: Client, study: Study, lead: User, round_items: list[Item], server: FakeServer
) -> None:
    login(client, lead)
    _add(client, study, server)
    rater = ModelRater.objects.get()
    url = reverse("raters:run-start", args=[study.slug, rater.pk])
    response = client.post(url, {"scope": "sample", "sample_size": "3", "seed": "9" * 25})
    assert response.status_code == 400 and "Seed" in response.content.decode()
    assert client.post(url, {"scope": "round", "round": "1", "limit": "3000000000"}).status_code == 400
    assert not ModelRun.objects.exists()


@pytest.mark.parametrize(
    ("url", "allowed"),
    [
        ("https://api.openai.com/v1", True),
        ("https://api.openai.com/v1/", True),
        ("https://api.openai.com/v1/deployments/x", True),
        ("https://api.openai.com/v10", False),  # a path prefix counts at a '/' only
        ("http://api.openai.com/v1", False),  # another scheme
        ("https://api.openai.com:8443/v1", False),  # another port
        ("https://api.openai.com.evil.example/v1", False),
        ("http://169.254.169.254/latest", False),
        ("http://127.0.0.1:11434/v1", True),
        ("http://127.0.0.1:11435/v1", False),
        ("http://127.0.0.1:notaport/v1", False),
    ],
)
def test_a_base_url_is_allowed_only_by_an_entry_of_model_base_urls(
    settings: Any, url: str, allowed: bool
) -> None:
    settings.MODEL_BASE_URLS = ["https://api.openai.com/v1", "http://127.0.0.1:11434/v1"]
    assert base_url_allowed(url) is allowed
    settings.MODEL_BASE_URLS = ["*"]
    assert base_url_allowed(url)


def test_a_lead_cannot_point_a_rater_at_a_server_the_operator_did_not_list(
    client: Client, study: Study, lead: User, server: FakeServer, settings: Any
) -> None:
    settings.MODEL_BASE_URLS = ["https://api.openai.com/v1"]
    login(client, lead)
    response = _add(client, study, server)
    text = response.content.decode()
    assert response.status_code == 400 and "is not a server this installation lets a study use" in text
    assert "https://api.openai.com/v1" in text and not ModelRater.objects.exists()
    # The operator's command line may name any server.
    call_command("add_model_rater", study.slug, "gpt", "--base-url", server.url, "--model", "gpt-test")
    assert ModelRater.objects.get().base_url == server.url


def test_production_lists_hosted_providers_and_development_any_server() -> None:
    code = (
        "import os, django; os.environ['DJANGO_SETTINGS_MODULE'] = 'config.settings'; "
        "from django.conf import settings; print(settings.MODEL_BASE_URLS)"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("MODEL_BASE_URLS", "DJANGO_ENV")}
    development = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    production = subprocess.run(
        [sys.executable, "-c", code],
        env={**env, "DJANGO_ENV": "production", "SECRET_KEY": "x" * 60, "ALLOWED_HOSTS": "example.org"},
        capture_output=True,
        text=True,
        check=True,
    )
    assert development.stdout.strip() == "['*']"
    assert "https://api.openai.com/v1" in production.stdout and "*" not in production.stdout
