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
    raters = serializers.ListField(
        child=serializers.CharField(max_length=80),
        required=False,
        min_length=2,
        max_length=100,
        help_text="A report over exactly these raters: annotators' usernames and model raters' names "
        "(NAME#k: sample k of a model), as `agreement --raters`. With a model among them, each report adds "
        "`gold` and leaves out labels made with a model's suggestion shown (unless `include_assisted`).",
    )
    alt_test = serializers.CharField(
        required=False, max_length=64, help_text="Add the alternative-annotator test of this model rater."
    )
    epsilon = serializers.FloatField(required=False, min_value=0, max_value=0.999999)
    q = serializers.FloatField(required=False, min_value=0.000001, max_value=0.999999)
    include_assisted = serializers.BooleanField(required=False, default=False)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if "alt_test" not in attrs and ("epsilon" in attrs or "q" in attrs):
            raise serializers.ValidationError({"alt_test": "epsilon and q need alt_test (a model rater)"})
        return attrs


class LevelSerializer(serializers.Serializer[Any]):
    level = serializers.IntegerField(
        required=False, min_value=1, max_value=50, help_text="Tree depth; leaf if absent."
    )
