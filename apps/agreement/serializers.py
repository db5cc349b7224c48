"""Shapes of the agreement API: snapshots (one computation each) and requests for a new one."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from apps.core.jobs import display_status

from .metrics import MAX_BOOTSTRAP
from .models import AgreementSnapshot
from .params import COMMAND


class SnapshotSerializer(serializers.ModelSerializer[AgreementSnapshot]):
    """One agreement computation. `result` holds the docs/design.md §6 figures once `status` is `succeeded`:
    for `kind` "command", one dimension's report or an object keyed by dimension; for "dashboard",
    `{"rounds", "dimensions": [{"key", "reports": {round or "all": report}}]}`."""

    status = serializers.SerializerMethodField()
    kind = serializers.SerializerMethodField()
    round = serializers.IntegerField(source="round.number", read_only=True, allow_null=True, default=None)
    dimension = serializers.CharField(source="dimension.key", read_only=True, allow_null=True, default=None)
    percent = serializers.IntegerField(read_only=True, allow_null=True)
    created_by = serializers.CharField(
        source="created_by.username", read_only=True, allow_null=True, default=None
    )
    result = serializers.JSONField(read_only=True)

    class Meta:
        model = AgreementSnapshot
        fields = [
            "id", "kind", "status", "round", "dimension", "level", "codebook_version", "progress_done",
            "progress_total", "percent", "message", "error", "result", "created_by", "created_at",
            "finished_at",
        ]  # fmt: skip

    def get_status(self, snapshot: AgreementSnapshot) -> str:
        return display_status(snapshot)

    def get_kind(self, snapshot: AgreementSnapshot) -> str:
        return str(snapshot.params.get("kind", COMMAND))  # the kind only: any row's, even a malformed one


class LatestSerializer(serializers.Serializer[Any]):
    snapshot = SnapshotSerializer(allow_null=True, help_text="The latest finished dashboard computation.")
    running = SnapshotSerializer(allow_null=True, help_text="A computation still queued or running.")
    fresh = serializers.BooleanField(help_text="No label or codebook change since `snapshot`.")


class ComputeSerializer(serializers.Serializer[Any]):
    """`scope` "dashboard": every dimension, per round and over all rounds, with a bootstrap interval for
    alpha (in the background for a large study). "report" (implied by `dimension` or `round`): the report
    `manage.py agreement` prints, computed now."""

    scope = serializers.ChoiceField(choices=["dashboard", "report"], default="dashboard")
    dimension = serializers.CharField(required=False, max_length=64)
    round = serializers.IntegerField(required=False, min_value=1)
    level = serializers.IntegerField(required=False, min_value=1, max_value=50)
    bootstrap = serializers.IntegerField(required=False, min_value=1, max_value=MAX_BOOTSTRAP)
    seed = serializers.IntegerField(required=False, min_value=0, max_value=2**32 - 1)
    phase = serializers.ChoiceField(
        choices=["blind", "discussed"],
        required=False,
        help_text="A report's labels: blind (default; a revealed round's frozen blind record) or discussed "
        "(after revisions). The dashboard holds both, the after-discussion ones under `discussed`.",
    )


class LevelSerializer(serializers.Serializer[Any]):
    level = serializers.IntegerField(
        required=False, min_value=1, max_value=50, help_text="Tree depth; leaf if absent."
    )
