"""Users, studies and who may do what in which study."""

from __future__ import annotations

import hashlib
import secrets
from typing import TYPE_CHECKING, Any

from django.contrib.auth.models import AbstractUser
from django.core.validators import MinValueValidator
from django.db import models
from django.db.models import Q
from django.utils import timezone

if TYPE_CHECKING:
    from django.contrib.auth.models import AnonymousUser


class User(AbstractUser):
    """Custom user from day one (cookiecutter-django); nothing extra yet."""

    display_name = models.CharField(max_length=150, blank=True)

    def __str__(self) -> str:
        return self.display_name or self.username


class Role(models.TextChoices):
    ANNOTATOR = "annotator", "Annotator"
    LEAD = "lead", "Lead"
    OWNER = "owner", "Owner"


class ConsolidationRule(models.TextChoices):
    UNANIMOUS = "unanimous", "Unanimous only"
    MAJORITY = "majority", "Strict majority (k ≥ 3)"


class StudyQuerySet(models.QuerySet["Study"]):
    def visible_to(self, user: User | AnonymousUser) -> StudyQuerySet:
        """Studies the user is a member of; none for anonymous users."""
        if not user.is_authenticated:
            return self.none()
        return self.filter(memberships__user=user).distinct()

    def led_by(self, user: User | AnonymousUser) -> StudyQuerySet:
        """Studies where the user is a lead or an owner."""
        if not user.is_authenticated:
            return self.none()
        return self.filter(memberships__user=user, memberships__role__in=[Role.LEAD, Role.OWNER]).distinct()

    def owned_by(self, user: User | AnonymousUser) -> StudyQuerySet:
        if not user.is_authenticated:
            return self.none()
        return self.filter(memberships__user=user, memberships__role=Role.OWNER).distinct()


class Study(models.Model):
    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    overlap = models.PositiveSmallIntegerField(
        default=2, validators=[MinValueValidator(1)], help_text="How many annotators label each item (k)."
    )
    consolidation_rule = models.CharField(
        max_length=16, choices=ConsolidationRule.choices, default=ConsolidationRule.UNANIMOUS
    )
    show_annotator_names = models.BooleanField(
        default=True, help_text="Show annotators' names to the lead when adjudicating."
    )
    require_rationale_on_override = models.BooleanField(
        default=True, help_text="A rationale is required when the decision differs from every annotator."
    )
    reveal_labels_after_decision = models.BooleanField(
        default=False, help_text="Once an item is decided, its annotators may see each other's labels."
    )
    discuss_after_reveal = models.BooleanField(
        default=False,
        help_text="Rounds open a discussion between their annotators when revealed (else: straight to "
        "adjudication).",
    )
    require_guidelines = models.BooleanField(
        default=False,
        help_text="Annotators must read and acknowledge the current guidelines before they label.",
    )
    archived_at = models.DateTimeField(
        null=True, blank=True, help_text="When the study was archived: read-only until unarchived."
    )
    is_demo = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=timezone.now)
    created_by = models.ForeignKey(
        "accounts.User", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    objects = StudyQuerySet.as_manager()

    class Meta:
        verbose_name_plural = "studies"
        ordering = ["name"]
        constraints = [models.CheckConstraint(condition=Q(overlap__gte=1), name="study_overlap_positive")]

    def __str__(self) -> str:
        return self.name

    @property
    def is_archived(self) -> bool:
        return self.archived_at is not None


class MembershipQuerySet(models.QuerySet["Membership"]):
    def annotators(self) -> MembershipQuerySet:
        return self.filter(role=Role.ANNOTATOR)


class Membership(models.Model):
    """A user's role in one study. Leads and owners may also annotate when assigned."""

    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="memberships")
    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, choices=Role.choices)
    created_at = models.DateTimeField(default=timezone.now)

    objects = MembershipQuerySet.as_manager()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "study"], name="membership_unique_user_study")]
        ordering = ["study", "role", "user__username"]

    def __str__(self) -> str:
        return f"{self.user} — {self.role} in {self.study}"


def hash_token(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


class ApiTokenQuerySet(models.QuerySet["ApiToken"]):
    def active(self) -> ApiTokenQuerySet:
        return self.filter(revoked_at__isnull=True)


class ApiToken(models.Model):
    """A personal API token. Only its SHA-256 is stored; the raw token is shown once, at creation."""

    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=12, help_text="The first characters, to recognise a token.")
    key_hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    objects = ApiTokenQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @classmethod
    def issue(cls, user: User, name: str, **extra: Any) -> tuple[ApiToken, str]:
        raw = "tx_" + secrets.token_urlsafe(32)
        token = cls.objects.create(user=user, name=name, prefix=raw[:10], key_hash=hash_token(raw), **extra)
        return token, raw


class InvitationQuerySet(models.QuerySet["Invitation"]):
    def pending(self) -> InvitationQuerySet:
        """Invitations that can still be accepted: not revoked, not expired, not used up."""
        return self.filter(revoked_at__isnull=True, expires_at__gt=timezone.now()).filter(
            Q(max_uses__isnull=True) | Q(uses__lt=models.F("max_uses"))
        )


class Invitation(models.Model):
    """An invitation to join a study with a role: sent to an e-mail address, or a link a lead hands out.

    Only the SHA-256 of its token is stored (`hash_token`); the raw token is in the link, shown once or
    e-mailed. `max_uses` None means any number of people until it expires; a single-use link has 1."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="invitations")
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.ANNOTATOR)
    email = models.EmailField(blank=True, help_text="Empty for a link the lead hands out.")
    token_hash = models.CharField(max_length=64, unique=True)
    max_uses = models.PositiveIntegerField(null=True, blank=True, validators=[MinValueValidator(1)])
    uses = models.PositiveIntegerField(default=0)
    expires_at = models.DateTimeField()
    created_by = models.ForeignKey(User, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    objects = InvitationQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(max_uses__isnull=True) | Q(uses__lte=models.F("max_uses")),
                name="invitation_uses_within_max",
            ),
            models.CheckConstraint(
                condition=Q(max_uses__isnull=True) | Q(max_uses__gte=1), name="invitation_max_uses_positive"
            ),
        ]
        indexes = [models.Index(fields=["study", "revoked_at", "expires_at"], name="invitation_pending")]

    def __str__(self) -> str:
        return f"{self.role} in {self.study} for {self.email or 'a link'}"

    @property
    def status(self) -> str:
        """pending, revoked, expired or used (up)."""
        if self.revoked_at is not None:
            return "revoked"
        if self.expires_at <= timezone.now():
            return "expired"
        if self.max_uses is not None and self.uses >= self.max_uses:
            return "used"
        return "pending"
