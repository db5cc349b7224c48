"""Shapes of the adjudication API: the study's status, the disagreement queue, an item's labels side by side,
decisions and their history. Every label here is for leads and owners only (the views are lead-only)."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from apps.annotation.serializers import FindingSerializer, ItemRefSerializer

from .models import Provenance


class CountsSerializer(serializers.Serializer[Any]):
    open = serializers.IntegerField()
    submitted = serializers.IntegerField()


class DecisionCountsSerializer(serializers.Serializer[Any]):
    unanimous = serializers.IntegerField()
    majority = serializers.IntegerField()
    discussed = serializers.IntegerField(help_text="Agreed after the round's reveal, by discussion.")
    adjudicated = serializers.IntegerField()
    imported = serializers.IntegerField()


class StatusSerializer(serializers.Serializer[Any]):
    """What `manage.py study_status --format json` prints (docs/design.md §4)."""

    items = serializers.IntegerField()
    rounds = serializers.IntegerField()
    assignments = CountsSerializer()
    decisions = DecisionCountsSerializer(
        allow_null=True, help_text="Null for annotators: it moves with the other annotators' labels."
    )
    disagreements_open = serializers.IntegerField(
        allow_null=True, help_text="Null for annotators: it moves with the other annotators' labels."
    )
    codebook_version = serializers.IntegerField()


class QueueFilterSerializer(serializers.Serializer[Any]):
    round = serializers.IntegerField(required=False, min_value=1, help_text="Round number.")
    dimension = serializers.CharField(
        required=False, max_length=64, help_text="Disagreeing on this dimension."
    )
    annotator = serializers.CharField(required=False, max_length=150, help_text="Username.")
    sort = serializers.ChoiceField(choices=["oldest", "category"], default="oldest")
    cursor = serializers.CharField(
        required=False, max_length=500, help_text="From the previous page's `next`."
    )


class QueueRowSerializer(serializers.Serializer[Any]):
    item = ItemRefSerializer()
    round = serializers.IntegerField(allow_null=True)
    disagreeing_dimensions = serializers.ListField(child=serializers.CharField())
    annotators = serializers.ListField(child=serializers.CharField())
    updated_at = serializers.DateTimeField()
    claimed_by = serializers.CharField(allow_null=True)


class QueuePageSerializer(serializers.Serializer[Any]):
    next = serializers.CharField(allow_null=True)
    previous = serializers.CharField(allow_null=True)
    results = QueueRowSerializer(many=True)


class DecisionSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField()
    item = ItemRefSerializer()
    round = serializers.IntegerField(allow_null=True)
    provenance = serializers.ChoiceField(choices=Provenance.choices)
    findings = FindingSerializer(many=True)
    rationale = serializers.CharField(allow_blank=True)
    decided_by = serializers.CharField(allow_null=True)
    decided_at = serializers.DateTimeField()
    is_current = serializers.BooleanField()
    supersedes = serializers.IntegerField(allow_null=True)
    codebook_version = serializers.IntegerField()


class AnnotatorLabelsSerializer(serializers.Serializer[Any]):
    annotator = serializers.CharField(help_text="Name, or 'Annotator N' when the study hides names.")
    findings = FindingSerializer(many=True)
    memo = serializers.CharField(allow_blank=True)
    submitted_at = serializers.DateTimeField(allow_null=True)


class ItemLabelsSerializer(serializers.Serializer[Any]):
    item = ItemRefSerializer()
    round = serializers.IntegerField(allow_null=True)
    expected = serializers.IntegerField(help_text="Annotations the round expects (k).")
    submitted = serializers.IntegerField()
    annotations = AnnotatorLabelsSerializer(many=True)
    current_decision = DecisionSerializer(allow_null=True)
    history = DecisionSerializer(many=True)


class DecideSerializer(serializers.Serializer[Any]):
    """`expected_decision` is the id of the current decision you based yours on (null if none): when
    another decision became current meanwhile, nothing is saved and the answer is 409."""

    item = serializers.IntegerField(min_value=1)
    findings = serializers.ListField(child=serializers.DictField(), min_length=1, max_length=50)
    rationale = serializers.CharField(required=False, allow_blank=True, max_length=20_000)
    expected_decision = serializers.IntegerField(allow_null=True, min_value=1)


class DecisionFilterSerializer(serializers.Serializer[Any]):
    provenance = serializers.ChoiceField(choices=Provenance.choices, required=False)
    round = serializers.IntegerField(required=False, min_value=1)
