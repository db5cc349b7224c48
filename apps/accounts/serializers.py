"""Input and output shapes of the accounts API (the error body every endpoint shares is `apps.core.api`'s)."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from .models import Membership, Role, Study


class StudySerializer(serializers.ModelSerializer[Study]):
    class Meta:
        model = Study
        fields = ["slug", "name", "description", "overlap", "consolidation_rule", "created_at"]


class StudyRoleSerializer(serializers.Serializer[Any]):
    slug = serializers.SlugField()
    name = serializers.CharField()
    role = serializers.ChoiceField(choices=Role.choices)


class StudyDetailSerializer(StudySerializer):
    role = serializers.ChoiceField(choices=Role.choices, help_text="The caller's role in the study.")

    class Meta(StudySerializer.Meta):
        fields = [*StudySerializer.Meta.fields, "role"]


class MeSerializer(serializers.Serializer[Any]):
    username = serializers.CharField()
    display_name = serializers.CharField(allow_blank=True)
    studies = StudyRoleSerializer(many=True)


class MembershipSerializer(serializers.ModelSerializer[Membership]):
    username = serializers.CharField(source="user.username", read_only=True)

    class Meta:
        model = Membership
        fields = ["username", "role", "created_at"]


class AddMemberSerializer(serializers.Serializer[Any]):
    username = serializers.CharField(max_length=150)
    role = serializers.ChoiceField(choices=Role.choices, default=Role.ANNOTATOR)
    password = serializers.CharField(
        required=False,
        allow_blank=True,
        write_only=True,
        max_length=256,
        help_text="Only to create a new account; checked by the password validators.",
    )
