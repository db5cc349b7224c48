"""The codebook: dimensions, each with a tree of categories, and the record of every change.

Categories are never deleted once used: they are retired (hidden from the picker, kept in history and
exports) or merged (labels point to the target, `LabelValue.original_category` keeps the source).
"""

from __future__ import annotations

from django.db import models
from django.db.models import F, Q
from django.utils import timezone

from apps.accounts.models import Study, User


class Codebook(models.Model):
    study = models.OneToOneField(Study, on_delete=models.CASCADE, related_name="codebook")
    name = models.CharField(max_length=200, blank=True)
    version = models.PositiveIntegerField(default=0, help_text="Raised by one for each applied change set.")
    updated_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"{self.name or self.study} v{self.version}"


class DimensionQuerySet(models.QuerySet["Dimension"]):
    def active(self) -> DimensionQuerySet:
        return self.filter(retired_at__isnull=True)


class Dimension(models.Model):
    """One question asked of every finding (issue type, symptom, fix pattern, ...)."""

    codebook = models.ForeignKey(Codebook, on_delete=models.CASCADE, related_name="dimensions")
    key = models.SlugField(max_length=64)
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    multiple = models.BooleanField(default=False, help_text="Several categories may be chosen.")
    position = models.PositiveIntegerField(default=0)
    applies_when_category = models.ForeignKey(
        "Category",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="enables_dimensions",
        help_text="The dimension applies only when this category (of another dimension) is chosen.",
    )
    retired_at = models.DateTimeField(null=True, blank=True)

    objects = DimensionQuerySet.as_manager()

    class Meta:
        ordering = ["codebook", "position", "id"]
        constraints = [
            models.UniqueConstraint(fields=["codebook", "key"], name="dimension_unique_key"),
        ]

    def __str__(self) -> str:
        return self.name


class CategoryStatus(models.TextChoices):
    ACTIVE = "active", "Active"
    PROPOSED = "proposed", "Proposed"
    RETIRED = "retired", "Retired"
    MERGED = "merged", "Merged"
    REJECTED = "rejected", "Rejected"


class CategoryQuerySet(models.QuerySet["Category"]):
    def pickable_by(self, user: User) -> CategoryQuerySet:
        """What an annotator may choose: active categories plus their own open proposals."""
        return self.filter(
            Q(status=CategoryStatus.ACTIVE) | Q(status=CategoryStatus.PROPOSED, proposed_by=user)
        )

    def active(self) -> CategoryQuerySet:
        return self.filter(status=CategoryStatus.ACTIVE)

    def proposals(self) -> CategoryQuerySet:
        return self.filter(status=CategoryStatus.PROPOSED)


class Category(models.Model):
    dimension = models.ForeignKey(Dimension, on_delete=models.CASCADE, related_name="categories")
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="children"
    )
    key = models.SlugField(max_length=100)
    name = models.CharField(max_length=200)
    definition = models.TextField(blank=True)
    include = models.TextField(blank=True, help_text="When to use this category.")
    exclude = models.TextField(blank=True, help_text="When not to use it.")
    examples = models.JSONField(default=list, blank=True, help_text="Text examples or item URLs.")
    position = models.PositiveIntegerField(default=0)
    status = models.CharField(max_length=16, choices=CategoryStatus.choices, default=CategoryStatus.ACTIVE)
    merged_into = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="merged_from"
    )
    proposed_by = models.ForeignKey(User, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    proposal_reason = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    objects = CategoryQuerySet.as_manager()

    class Meta:
        ordering = ["dimension", "position", "id"]
        verbose_name_plural = "categories"
        constraints = [
            models.UniqueConstraint(fields=["dimension", "key"], name="category_unique_key_per_dimension"),
            models.CheckConstraint(condition=~Q(parent=F("id")), name="category_not_own_parent"),
            models.CheckConstraint(
                condition=~Q(status="merged") | Q(merged_into__isnull=False),
                name="category_merged_has_target",
            ),
        ]

    def __str__(self) -> str:
        return self.name


class ChangeKind(models.TextChoices):
    ADD = "add", "Added"
    RENAME = "rename", "Renamed"
    EDIT = "edit", "Definition edited"
    MOVE = "move", "Moved"
    REORDER = "reorder", "Reordered"
    MERGE = "merge", "Merged"
    SPLIT = "split", "Split"
    RETIRE = "retire", "Retired"
    RESTORE = "restore", "Restored"
    PROPOSE = "propose", "Proposed"
    ACCEPT = "accept", "Proposal accepted"
    REJECT = "reject", "Proposal rejected"
    REASSIGN = "reassign", "Labels reassigned"
    ADD_DIMENSION = "add_dimension", "Dimension added"
    EDIT_DIMENSION = "edit_dimension", "Dimension edited"
    RETIRE_DIMENSION = "retire_dimension", "Dimension retired"


class CodebookChange(models.Model):
    """Who changed what, when, from what to what. Append-only."""

    codebook = models.ForeignKey(Codebook, on_delete=models.CASCADE, related_name="changes")
    version = models.PositiveIntegerField(help_text="The codebook version this change produced.")
    kind = models.CharField(max_length=32, choices=ChangeKind.choices)
    actor = models.ForeignKey(User, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    at = models.DateTimeField(default=timezone.now)
    dimension = models.ForeignKey(
        Dimension, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    category = models.ForeignKey(Category, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    before = models.JSONField(default=dict, blank=True)
    after = models.JSONField(default=dict, blank=True)
    note = models.TextField(blank=True)

    class Meta:
        ordering = ["codebook", "version", "id"]
        indexes = [models.Index(fields=["codebook", "version"], name="cbchange_version")]

    def __str__(self) -> str:
        return f"v{self.version} {self.kind}"


class CodebookVersion(models.Model):
    """The whole codebook as it was at one version (the §5 file format), for history and exports."""

    codebook = models.ForeignKey(Codebook, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    snapshot = models.JSONField()
    created_at = models.DateTimeField(default=timezone.now)
    created_by = models.ForeignKey(User, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")

    class Meta:
        ordering = ["codebook", "number"]
        constraints = [
            models.UniqueConstraint(fields=["codebook", "number"], name="codebook_version_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.codebook} @ v{self.number}"


class GuidelinesVersionQuerySet(models.QuerySet["GuidelinesVersion"]):
    def for_study(self, study: Study) -> GuidelinesVersionQuerySet:
        return self.filter(study=study).order_by("-number")


class GuidelinesVersion(models.Model):
    """One published version of a study's guidelines: the lead's introduction (Markdown, rendered through
    the sanitizer) and the codebook version whose definitions, criteria and examples it shows. Kept
    forever; the newest is the current one. Written by `services.guidelines` only."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="guidelines_versions")
    number = models.PositiveIntegerField()
    introduction = models.TextField(blank=True)
    codebook_version = models.PositiveIntegerField(
        help_text="The codebook version the guidelines were written against (its snapshot is shown)."
    )
    note = models.CharField(max_length=300, blank=True, help_text="What changed, in a line.")
    published_at = models.DateTimeField(default=timezone.now)
    published_by = models.ForeignKey(User, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")

    objects = GuidelinesVersionQuerySet.as_manager()

    class Meta:
        ordering = ["study", "number"]
        constraints = [
            models.UniqueConstraint(fields=["study", "number"], name="guidelines_version_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.study} guidelines v{self.number}"


class GuidelinesAcknowledgement(models.Model):
    """A member's statement that they read one version of the guidelines, and when."""

    version = models.ForeignKey(GuidelinesVersion, on_delete=models.CASCADE, related_name="acknowledgements")
    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="+")
    acknowledged_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["version", "acknowledged_at"]
        constraints = [
            models.UniqueConstraint(fields=["version", "user"], name="guidelines_ack_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.user} read {self.version}"
