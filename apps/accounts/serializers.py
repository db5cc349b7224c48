from __future__ import annotations

from rest_framework import serializers

from .models import Membership, Study


class StudySerializer(serializers.ModelSerializer[Study]):
    class Meta:
        model = Study
        fields = ["slug", "name", "description", "overlap", "consolidation_rule", "created_at"]


class MembershipSerializer(serializers.ModelSerializer[Membership]):
    username = serializers.CharField(source="user.username", read_only=True)

    class Meta:
        model = Membership
        fields = ["username", "role", "created_at"]
