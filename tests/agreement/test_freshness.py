"""The dashboard's label aggregates are read once per change of the labels, and every change is seen."""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from pytest_django import DjangoAssertNumQueries, DjangoCaptureOnCommitCallbacks

from apps.accounts.models import Study, User
from apps.agreement import freshness, services
from apps.annotation.models import Assignment, AssignmentStatus, LabelValue, Round
from apps.annotation.services import submit_annotation
from apps.core import generations
from apps.corpus.models import Item
from apps.taxonomy.models import Category, Codebook
from apps.taxonomy.services.categories import merge_category
from tests.agreement.conftest import Annotate
from tests.conftest import login
from tests.factories import ItemFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def labelled(
    study: Study, codebook: Codebook, annotate: Annotate, items: list[Item], annotator_a: User
) -> Study:
    for item in items[:3]:
        annotate(1, item, annotator_a, [{"kind": ["bug"], "symptom": ["oom"]}])
    return study


def _later(monkeypatch: pytest.MonkeyPatch, seconds: float) -> None:
    """Move the clock the cache reads ``seconds`` ahead."""
    now = time.time
    monkeypatch.setattr(time, "time", lambda: now() + seconds)


def _submit_a_new_item(study: Study, annotator: User) -> None:
    """Label a new item of round 1 through the labelling service, as the workbench does."""
    assignment = Assignment.objects.create(
        study=study,
        round=Round.objects.get(study=study, number=1),
        item=ItemFactory(study=study),
        annotator=annotator,
        status=AssignmentStatus.OPEN,
    )
    payload = {
        "findings": [{"values": {"kind": ["bug"], "symptom": ["segfault"], "fix": ["code"]}}],
        "memo": "",
    }
    submit_annotation(assignment, payload, annotator, codebook_version=3)


def test_the_fingerprint_reads_only_the_codebook_version_until_the_labels_change(
    labelled: Study, django_assert_num_queries: DjangoAssertNumQueries, annotate: Annotate, annotator_b: User
) -> None:
    first = services.fingerprint(labelled)
    with django_assert_num_queries(1):
        assert services.fingerprint(labelled) == first
    annotate(1, ItemFactory(study=labelled), annotator_b, [{"kind": ["question"]}])
    assert services.fingerprint(labelled)["annotations"] == first["annotations"] + 1


def test_a_submission_through_the_workbench_makes_the_snapshot_stale(
    labelled: Study, lead: User, annotator_b: User
) -> None:
    services.request_dashboard(labelled, None, actor=lead)
    assert services.dashboard_state(labelled, None).fresh
    _submit_a_new_item(labelled, annotator_b)
    assert not services.dashboard_state(labelled, None).fresh


def test_a_merge_in_the_codebook_makes_the_cached_values_stale(
    labelled: Study, lead: User, django_assert_num_queries: DjangoAssertNumQueries
) -> None:
    services.fingerprint(labelled)
    oom, segfault = (
        Category.objects.get(dimension__codebook__study=labelled, key=k) for k in ("oom", "segfault")
    )
    merge_category(oom, segfault, actor=lead)
    with CaptureQueriesContext(connection) as queries:
        current = services.fingerprint(labelled)
    assert len(queries.captured_queries) > 1  # read again
    assert current["codebook_version"] == 4


def test_a_change_that_sends_no_signal_is_seen_once_the_cached_value_expires(
    labelled: Study, monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    # The local-memory cache reads `time.time`, which the test moves; Redis (CI) keeps its own clock.
    settings.CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "ttl"}
    }
    first = services.fingerprint(labelled)
    LabelValue.objects.filter(finding__annotation__assignment__study=labelled).first().delete()  # type: ignore[union-attr]
    assert services.fingerprint(labelled) == first  # the admin or a shell: no signal
    _later(monkeypatch, freshness.TTL + 1)
    assert services.fingerprint(labelled)["ratings"] == first["ratings"] - 1


def test_a_value_read_before_the_commit_is_not_kept_after_it(
    labelled: Study, django_capture_on_commit_callbacks: DjangoCaptureOnCommitCallbacks
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        freshness.labels_changed(study_id=labelled.pk)
        services.fingerprint(labelled)  # another request, before the writer commits
    with CaptureQueriesContext(connection) as queries:
        services.fingerprint(labelled)
    assert len(queries.captured_queries) > 1


def test_a_study_that_reuses_an_id_does_not_see_the_values_of_the_deleted_one(labelled: Study) -> None:
    freshness.cached(labelled, None, "answer", lambda: 1)
    assert freshness.cached(labelled, None, "answer", lambda: 2) == 1
    reborn = Study(pk=labelled.pk, slug="reborn", created_at=labelled.created_at + timedelta(seconds=1))
    assert freshness.cached(reborn, None, "answer", lambda: 2) == 2


def test_the_confusion_matrix_follows_new_labels(
    client: Client, labelled: Study, lead: User, annotate: Annotate, annotator_b: User, items: list[Item]
) -> None:
    dashboard = reverse("agreement:dashboard", args=[labelled.slug])
    params: dict[str, Any] = {"dimension": "kind", "round": "all", "a": "alice", "b": "bob"}
    headers = {"HX-Request": "true", "HX-Target": "confusion"}
    login(client, lead).get(dashboard)
    annotate(1, items[0], annotator_b, [{"kind": ["question"]}])
    html = client.get(dashboard, params, headers=headers).content.decode()
    assert "0 of 1 items rated by both agree" in html
    annotate(1, items[1], annotator_b, [{"kind": ["bug"]}])
    html = client.get(dashboard, params, headers=headers).content.decode()
    assert "1 of 2 items rated by both agree" in html


class _Down:
    """A cache whose server cannot be reached (Redis down)."""

    def __getattr__(self, name: str) -> Any:
        def fail(*args: Any, **kwargs: Any) -> Any:
            raise ConnectionError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

        return fail


def test_without_the_cache_values_are_computed_and_changes_are_not_refused(
    study: Study, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(generations, "cache", _Down())
    calls: list[int] = []

    def compute() -> int:
        calls.append(1)
        return 42

    assert freshness.cached(study, None, "x", compute) == 42
    assert freshness.cached(study, None, "x", compute) == 42
    assert len(calls) == 2  # nothing kept, nothing failed
    freshness.labels_changed(study_id=study.pk)  # what a submission's receiver does: no exception


def test_a_submission_writes_to_the_cache_once_at_commit_and_reads_nothing(
    labelled: Study,
    annotator_b: User,
    monkeypatch: pytest.MonkeyPatch,
    django_capture_on_commit_callbacks: DjangoCaptureOnCommitCallbacks,
) -> None:
    """The submission's path costs one round trip to the cache (Redis in production), not one per signal
    and another at commit; the dashboard still sees the change (the tests above)."""
    services.fingerprint(labelled)
    calls: list[str] = []
    real = generations.cache

    class Counting:
        def __getattr__(self, name: str) -> Any:
            calls.append(name)
            return getattr(real, name)

    monkeypatch.setattr(generations, "cache", Counting())
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        _submit_a_new_item(labelled, annotator_b)
    assert calls == []  # nothing before the commit
    for callback in callbacks:
        callback()
    assert calls == ["set"]


def test_in_a_request_the_token_is_replaced_after_the_response_elsewhere_at_once(
    labelled: Study, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A committed change's token is written once the server has the response (request_finished); a job or
    a command, outside any request, writes it at once."""
    from django.core.signals import request_finished, request_started

    for signal, receiver, uid in (
        (request_started, generations.on_request_started, "generations-request-started"),
        (request_finished, generations.on_request_finished, "generations-request-finished"),
    ):  # connected to Django's request signals (the app's ready())
        assert signal.disconnect(dispatch_uid=uid)
        signal.connect(receiver, dispatch_uid=uid)
    written: list[tuple[str, int]] = []
    monkeypatch.setattr(generations, "_replace", lambda kind, pk: written.append((kind, pk)))
    generations.on_request_started()
    try:
        generations._committed("study", labelled.pk)
        generations._committed("study", labelled.pk)  # twice in one request: written once
        assert written == []
    finally:
        generations.on_request_finished()
    assert written == [("study", labelled.pk)]
    generations._committed("codebook", 7)
    assert written == [("study", labelled.pk), ("codebook", 7)]
