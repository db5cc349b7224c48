"""An agreement computation started while the job queue is down waits queued, as imports and exports do."""

from __future__ import annotations

from typing import Any

import pytest
from kombu.exceptions import OperationalError

from apps.agreement.models import AgreementSnapshot
from apps.agreement.services import request_dashboard
from apps.agreement.tasks import compute_agreement_task
from apps.core.jobs import QUEUE_UNAVAILABLE
from apps.core.models import JobStatus
from tests.api.world import World


def test_a_large_dashboard_requested_while_the_queue_is_down_stays_queued_to_be_resent(
    world: World, settings: Any, monkeypatch: pytest.MonkeyPatch, django_capture_on_commit_callbacks: Any
) -> None:
    settings.AGREEMENT_SYNC_MAX_RATINGS = 0  # every study counts as large: computed in the background

    def redis_down(*args: Any, **kwargs: Any) -> None:
        raise OperationalError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    monkeypatch.setattr(compute_agreement_task, "apply_async", redis_down)
    with django_capture_on_commit_callbacks(execute=True):
        snapshot = request_dashboard(world.study, None, actor=world.lead)

    stored = AgreementSnapshot.objects.get(pk=snapshot.pk)
    assert (stored.status, stored.message) == (JobStatus.QUEUED, QUEUE_UNAVAILABLE)
