"""Input and output shapes of the accounts API (the error body every endpoint shares is `apps.core.api`'s)."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from .models import Invitation, Membership, Role, Study


class StudySerializer(serializers.ModelSerializer[Study]):
    class Meta:
        model = Study
        fields = ["slug", "name", "description", "overlap", "consolidation_rule", "created_at"]


class StudyRoleSerializer(serializers.Serializer[Any]):
    slug = serializers.SlugField()
    name = serializers.CharField()
    role = serializers.ChoiceField(choices=Role.choices)


SETTINGS_FLAGS = [
    "show_annotator_names",
    "require_rationale_on_override",
    "reveal_labels_after_decision",
    "discuss_after_reveal",
    "require_guidelines",
]


class StudyDetailSerializer(StudySerializer):
    role = serializers.ChoiceField(choices=Role.choices, help_text="The caller's role in the study.")
    archived = serializers.BooleanField(source="is_archived", help_text="Read-only until unarchived.")

    class Meta(StudySerializer.Meta):
        fields = [*StudySerializer.Meta.fields, *SETTINGS_FLAGS, "archived", "archived_at", "role"]


class StudySettingsSerializer(serializers.ModelSerializer[Study]):
    """PATCH of a study: any of its settings (leads and owners), and `archived` (owners only). `overlap`
    is the default of rounds assigned from now on; rounds already assigned keep theirs."""

    archived = serializers.BooleanField(required=False, help_text="Archive (true) or unarchive (false).")

    class Meta:
        model = Study
        fields = ["name", "description", "overlap", "consolidation_rule", *SETTINGS_FLAGS, "archived"]
        extra_kwargs = {"overlap": {"min_value": 1, "max_value": 100}}

    def validate_name(self, value: str) -> str:
        if not value.strip():
            raise serializers.ValidationError("A study needs a name.")
        return value.strip()


class StudyDeleteSerializer(serializers.Serializer[Any]):
    confirm = serializers.CharField(
        help_text="The study's slug, typed exactly (also accepted as the `confirm` query parameter)."
    )


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


class MemberRoleSerializer(serializers.Serializer[Any]):
    role = serializers.ChoiceField(choices=Role.choices)


class RemovalSerializer(serializers.Serializer[Any]):
    username = serializers.CharField()
    role = serializers.ChoiceField(choices=Role.choices, help_text="The role they had.")
    released = serializers.IntegerField(help_text="Their open assignments, returned to the pool.")


class InvitationSerializer(serializers.ModelSerializer[Invitation]):
    created_by = serializers.CharField(
        source="created_by.username",
        read_only=True,
        allow_null=True,
        default=None,
        help_text="null: the command line.",
    )
    status = serializers.CharField(read_only=True, help_text="pending, revoked, expired or used.")

    class Meta:
        model = Invitation
        fields = [
            "id",
            "email",
            "role",
            "max_uses",
            "uses",
            "expires_at",
            "created_at",
            "created_by",
            "status",
        ]


class IssuedInvitationSerializer(InvitationSerializer):
    link = serializers.CharField(read_only=True, help_text="The invitation's link: shown once, never stored.")
    mail_error = serializers.CharField(
        read_only=True, help_text="Why the e-mail could not be sent, or empty."
    )

    class Meta(InvitationSerializer.Meta):
        fields = [*InvitationSerializer.Meta.fields, "link", "mail_error"]


class CreateInvitationSerializer(serializers.Serializer[Any]):
    email = serializers.EmailField(required=False, allow_blank=True, help_text="Empty: a link to hand out.")
    role = serializers.ChoiceField(choices=Role.choices, default=Role.ANNOTATOR)
    expires_days = serializers.IntegerField(min_value=1, max_value=365, default=14)
    max_uses = serializers.IntegerField(
        min_value=1,
        required=False,
        allow_null=True,
        default=1,
        help_text="null: any number until it expires.",
    )


class AcceptInvitationSerializer(serializers.Serializer[Any]):
    token = serializers.CharField(max_length=200, help_text="The token at the end of the invitation's link.")
