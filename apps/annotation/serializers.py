"""Shapes of the annotation API: rounds, assignments, the caller's queue and annotations, submissions.

Labels appear only in `AnnotationSerializer`, which the API fills from annotations fetched through
`Annotation.objects.for_annotator(user)` (one's own) or `for_lead(user)` (leads and owners): an annotator
never receives another annotator's labels.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from .models import Assignment, AssignmentStatus, Round, RoundPhase
from .payload import MAX_FINDINGS, MAX_MEMO_LENGTH


class RoundSerializer(serializers.ModelSerializer[Round]):
    items = serializers.IntegerField(
        read_only=True, source="n_items", help_text="Items drawn into the round."
    )

    class Meta:
        model = Round
        fields = [
            "number", "name", "method", "seed", "requested_size", "stratify_field", "params", "items",
            "created_at", "phase", "revealed_at",
        ]  # fmt: skip


class RevealRequestSerializer(serializers.Serializer[Any]):
    force = serializers.BooleanField(
        required=False, default=False, help_text="Reveal although some assignments are still open."
    )
    discussion = serializers.BooleanField(
        required=False,
        allow_null=True,
        default=None,
        help_text="Then discussion (true) or straight to adjudication (false); null: the round's or the "
        "study's setting.",
    )


class RevealSerializer(serializers.Serializer[Any]):
    round = serializers.IntegerField()
    phase = serializers.ChoiceField(choices=RoundPhase.choices)
    revealed_at = serializers.DateTimeField(allow_null=True)
    blind_records = serializers.IntegerField(help_text="Submitted annotations frozen at the reveal.")
    open_assignments = serializers.IntegerField()


class RevisionSerializer(serializers.Serializer[Any]):
    revised_at = serializers.DateTimeField()
    before = serializers.JSONField(help_text="The findings before, as {dimension: [category keys]}.")
    memo_before = serializers.CharField(allow_blank=True)
    after = serializers.JSONField()
    memo_after = serializers.CharField(allow_blank=True)


class RevisionHistorySerializer(serializers.Serializer[Any]):
    assignment = serializers.IntegerField()
    phase = serializers.ChoiceField(choices=RoundPhase.choices)
    blind = serializers.JSONField(allow_null=True, help_text="The labels frozen at the reveal.")
    revisions = RevisionSerializer(many=True)


class DrawRoundSerializer(serializers.Serializer[Any]):
    number = serializers.IntegerField(min_value=1, max_value=1_000_000)
    size = serializers.IntegerField(min_value=1, max_value=10_000_000)
    seed = serializers.IntegerField(min_value=-(2**63), max_value=2**63 - 1)
    stratify = serializers.CharField(
        required=False, allow_blank=True, max_length=100, help_text="source, tag, or a metadata key."
    )


class DrawResultSerializer(serializers.Serializer[Any]):
    round = RoundSerializer()
    drawn = serializers.IntegerField()
    population = serializers.IntegerField()
    created = serializers.BooleanField(help_text="False: the same draw was already made (nothing changed).")


class AssignRoundSerializer(serializers.Serializer[Any]):
    annotators = serializers.ListField(
        child=serializers.CharField(max_length=150), min_length=1, max_length=500
    )
    overlap = serializers.IntegerField(required=False, min_value=1, max_value=100)


class AssignResultSerializer(serializers.Serializer[Any]):
    created = serializers.IntegerField()
    moved = serializers.IntegerField()
    loads = serializers.DictField(child=serializers.IntegerField())
    open_loads = serializers.DictField(child=serializers.IntegerField())


class RoundProgressSerializer(serializers.Serializer[Any]):
    annotator = serializers.CharField()
    total = serializers.IntegerField()
    done = serializers.IntegerField()
    open = serializers.IntegerField()
    percent = serializers.IntegerField()
    median_seconds = serializers.IntegerField(allow_null=True)


class RoundDetailSerializer(RoundSerializer):
    progress = RoundProgressSerializer(many=True, read_only=True)

    class Meta(RoundSerializer.Meta):
        fields = [*RoundSerializer.Meta.fields, "progress"]


class ItemRefSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField()
    url = serializers.CharField()
    title = serializers.CharField(allow_blank=True)


class AssignmentSerializer(serializers.ModelSerializer[Assignment]):
    round = serializers.IntegerField(source="round.number", read_only=True)
    item = ItemRefSerializer(read_only=True)
    annotator = serializers.CharField(source="annotator.username", read_only=True)

    class Meta:
        model = Assignment
        fields = ["id", "round", "item", "annotator", "status", "position", "created_at", "submitted_at"]


class AssignmentFilterSerializer(serializers.Serializer[Any]):
    round = serializers.IntegerField(required=False, min_value=1)
    annotator = serializers.CharField(required=False, max_length=150)
    status = serializers.ChoiceField(choices=AssignmentStatus.choices, required=False)
    item = serializers.IntegerField(required=False, min_value=1)


@extend_schema_field(
    {
        "type": "object",
        "additionalProperties": {
            "oneOf": [{"type": "array", "items": {"type": "string"}}, {"type": "string", "enum": ["pending"]}]
        },
        "description": "dimension key → chosen category keys, or 'pending'.",
    }
)
class ValuesField(serializers.DictField):
    pass


class FindingSerializer(serializers.Serializer[Any]):
    values = ValuesField()


class AnnotationSerializer(serializers.Serializer[Any]):
    """An annotation's labels in the workbench's payload format."""

    assignment = serializers.IntegerField()
    item = serializers.IntegerField()
    round = serializers.IntegerField()
    annotator = serializers.CharField()
    findings = FindingSerializer(many=True)
    memo = serializers.CharField(allow_blank=True)
    codebook_version = serializers.IntegerField()
    submitted_at = serializers.DateTimeField(allow_null=True)
    updated_at = serializers.DateTimeField()
    seconds_spent = serializers.IntegerField(allow_null=True)


class SubmitSerializer(serializers.Serializer[Any]):
    """The labels to store. `codebook_version` is the version the labels were chosen on (from GET
    codebook/): when it is older than the current one and a label names a changed category, the
    submission is refused with 409 rather than mislabelled."""

    findings = serializers.ListField(
        child=serializers.DictField(),
        max_length=MAX_FINDINGS,
        help_text='[{"values": {dim: [keys] | "pending"}}]',
    )
    memo = serializers.CharField(
        required=False, allow_blank=True, max_length=MAX_MEMO_LENGTH, trim_whitespace=False
    )
    codebook_version = serializers.IntegerField(required=False, min_value=0)
    seconds_spent = serializers.IntegerField(required=False, min_value=0, max_value=10**7)


class SubmitResultSerializer(AnnotationSerializer):
    created = serializers.BooleanField(help_text="The first submission of this assignment.")
    changed = serializers.BooleanField(help_text="False: the same labels were already stored.")


_WHEN = serializers.DateTimeField()


def submit_result_data(body: dict[str, Any]) -> dict[str, Any]:
    """`SubmitResultSerializer(body).data`, built directly: the answer to every API submission. Making the
    serializer copies its twelve declared fields and the findings' own on every call (1.5-2 ms of a 10 ms
    submission on a two-core machine); tests/api/test_endpoints.py holds the two equal."""

    def when(value: Any) -> Any:
        return None if value is None else _WHEN.to_representation(value)

    return {
        "assignment": int(body["assignment"]),
        "item": int(body["item"]),
        "round": int(body["round"]),
        "annotator": str(body["annotator"]),
        "findings": [
            {"values": {str(key): value for key, value in finding["values"].items()}}
            for finding in body["findings"]
        ],
        "memo": str(body["memo"]),
        "codebook_version": int(body["codebook_version"]),
        "submitted_at": when(body["submitted_at"]),
        "updated_at": when(body["updated_at"]),
        "seconds_spent": None if body["seconds_spent"] is None else int(body["seconds_spent"]),
        "created": bool(body["created"]),
        "changed": bool(body["changed"]),
    }
