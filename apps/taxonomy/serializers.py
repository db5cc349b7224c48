"""Shapes of the codebook API: the codebook as annotators and leads see it, and the lead's edits.

Codebook text (names, definitions, criteria, examples) is written by people and returned as plain JSON
strings: clients must escape it (the pages do, through Django's autoescape).
"""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from .models import CategoryStatus

PARENT = "The parent's key."
PARENT_TOP = "The parent's key; null at the top level."


class CategoryRowSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField()
    key = serializers.CharField()
    name = serializers.CharField()
    parent = serializers.CharField(allow_null=True, help_text=PARENT_TOP)  # type: ignore[assignment]
    depth = serializers.IntegerField(help_text="1 for a top-level category.")
    path = serializers.CharField(help_text="Names from the top, joined by ' > '.")
    status = serializers.ChoiceField(choices=CategoryStatus.choices)
    definition = serializers.CharField(allow_blank=True)
    include = serializers.CharField(allow_blank=True)
    exclude = serializers.CharField(allow_blank=True)
    examples = serializers.ListField(child=serializers.CharField(allow_blank=True))
    merged_into = serializers.CharField(allow_null=True, help_text="Key of the merge target, if merged.")
    mine = serializers.BooleanField(help_text="An open proposal of the caller.")


class ConditionSerializer(serializers.Serializer[Any]):
    dimension = serializers.CharField()
    category = serializers.CharField()


class DimensionSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField()
    key = serializers.CharField()
    name = serializers.CharField()
    description = serializers.CharField(allow_blank=True)
    multiple = serializers.BooleanField()
    applies_when = ConditionSerializer(allow_null=True)
    retired = serializers.BooleanField()
    categories = CategoryRowSerializer(many=True)


class CodebookSerializer(serializers.Serializer[Any]):
    """Annotators get the active categories and their own proposals; leads every category and retired
    dimensions too, each with its status."""

    name = serializers.CharField(allow_blank=True)
    version = serializers.IntegerField()
    dimensions = DimensionSerializer(many=True)


class CodebookFileSerializer(serializers.Serializer[Any]):
    """The docs/design.md §5 codebook file, as JSON: `{"name", "dimensions": [...]}`."""

    name = serializers.CharField(allow_blank=True, required=False)
    dimensions = serializers.ListField(child=serializers.DictField())


class LoadResultSerializer(serializers.Serializer[Any]):
    version = serializers.IntegerField()
    changed = serializers.BooleanField()
    dry_run = serializers.BooleanField()
    changes = serializers.ListField(child=serializers.CharField(), help_text="One line per change.")


class NewCategorySerializer(serializers.Serializer[Any]):
    key = serializers.CharField(max_length=100)
    name = serializers.CharField(max_length=200)
    parent = serializers.CharField(required=False, allow_blank=True, help_text=PARENT)  # type: ignore[assignment]
    definition = serializers.CharField(required=False, allow_blank=True, max_length=20_000)
    include = serializers.CharField(required=False, allow_blank=True, max_length=20_000)
    exclude = serializers.CharField(required=False, allow_blank=True, max_length=20_000)
    examples = serializers.ListField(
        child=serializers.CharField(max_length=2_000), required=False, max_length=200
    )


class EditCategorySerializer(serializers.Serializer[Any]):
    """Fields left out stay as they are."""

    name = serializers.CharField(required=False, max_length=200)
    definition = serializers.CharField(required=False, allow_blank=True, max_length=20_000)
    include = serializers.CharField(required=False, allow_blank=True, max_length=20_000)
    exclude = serializers.CharField(required=False, allow_blank=True, max_length=20_000)
    examples = serializers.ListField(
        child=serializers.CharField(max_length=2_000), required=False, max_length=200
    )


CATEGORY_ACTIONS = ("merge", "move", "retire", "restore", "accept", "reject")


class CategoryActionSerializer(serializers.Serializer[Any]):
    """`merge`: `target` (key, required). `move`: `parent` (key; empty for the top level). `reject`:
    `target` receives the proposal's labels (required when it has some). `note` is kept in the history."""

    target = serializers.CharField(required=False, allow_blank=True)
    parent = serializers.CharField(required=False, allow_blank=True)  # type: ignore[assignment]
    note = serializers.CharField(required=False, allow_blank=True, max_length=2_000)


class ProposalSerializer(serializers.Serializer[Any]):
    dimension = serializers.CharField(help_text="The dimension's key.")
    name = serializers.CharField(max_length=200)
    parent = serializers.CharField(required=False, allow_blank=True, help_text=PARENT)  # type: ignore[assignment]
    reason = serializers.CharField(required=False, allow_blank=True, max_length=5_000)


class ProposalResultSerializer(serializers.Serializer[Any]):
    category = CategoryRowSerializer()
    created = serializers.BooleanField(help_text="False: you had already proposed this code.")
    warnings = serializers.ListField(child=serializers.CharField())
