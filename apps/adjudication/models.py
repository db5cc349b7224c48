"""Gold labels: decisions per item, with provenance, rationale and an append-only history."""

from __future__ import annotations

from django.contrib.auth.models import AnonymousUser
from django.db import models
from django.db.models import Q
from django.utils import timezone

from apps.accounts.models import Role, Study, User
from apps.annotation.models import Annotation, Round
from apps.corpus.models import Item
from apps.taxonomy.models import Category, Dimension


class Provenance(models.TextChoices):
    UNANIMOUS = "unanimous", "Unanimous"
    MAJORITY = "majority", "Majority"
    DISCUSSED = "discussed", "Resolved by discussion"
    ADJUDICATED = "adjudicated", "Adjudicated"
    IMPORTED = "imported", "Imported"


class DecisionQuerySet(models.QuerySet["Decision"]):
    def current(self) -> DecisionQuerySet:
        return self.filter(is_current=True)

    def for_lead(self, user: User | AnonymousUser) -> DecisionQuerySet:
        if not user.is_authenticated:
            return self.none()
        return self.filter(
            study__memberships__user=user, study__memberships__role__in=[Role.LEAD, Role.OWNER]
        )

    def visible_to(self, user: User | AnonymousUser) -> DecisionQuerySet:
        if not user.is_authenticated:
            return self.none()
        return self.filter(study__memberships__user=user)


class Decision(models.Model):
    """The gold labels of one item. A reversal adds a new current decision and keeps the old one.

    At most one current decision per item (partial unique constraint): two leads saving at once
    cannot both win.
    """

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="decisions")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="decisions")
    round = models.ForeignKey(Round, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    provenance = models.CharField(max_length=16, choices=Provenance.choices)
    rationale = models.TextField(blank=True)
    decided_by = models.ForeignKey(User, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    decided_at = models.DateTimeField(default=timezone.now)
    is_current = models.BooleanField(default=True)
    supersedes = models.OneToOneField(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="superseded_by"
    )
    source_annotations = models.ManyToManyField(Annotation, blank=True, related_name="decisions")
    changes = models.JSONField(default=dict, blank=True, help_text="What differs from each annotator.")
    codebook_version = models.PositiveIntegerField(default=0)

    objects = DecisionQuerySet.as_manager()

    class Meta:
        ordering = ["-decided_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["item"], condition=Q(is_current=True), name="decision_one_current"
            ),
        ]
        indexes = [models.Index(fields=["study", "provenance", "is_current"], name="decision_provenance")]

    def __str__(self) -> str:
        return f"Decision on {self.item_id} ({self.provenance})"


class DecisionFinding(models.Model):
    decision = models.ForeignKey(Decision, on_delete=models.CASCADE, related_name="findings")
    number = models.PositiveSmallIntegerField(default=1)

    class Meta:
        ordering = ["decision", "number"]
        constraints = [
            models.UniqueConstraint(fields=["decision", "number"], name="decisionfinding_unique_number"),
        ]


class DecisionValue(models.Model):
    finding = models.ForeignKey(DecisionFinding, on_delete=models.CASCADE, related_name="values")
    dimension = models.ForeignKey(Dimension, on_delete=models.PROTECT, related_name="+")
    category = models.ForeignKey(Category, on_delete=models.PROTECT, related_name="gold_labels")
    original_category = models.ForeignKey(
        Category, null=True, blank=True, on_delete=models.PROTECT, related_name="original_gold_labels"
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["finding", "dimension", "category"], name="decisionvalue_unique_category"
            ),
        ]


class ReviewState(models.TextChoices):
    ANNOTATING = "annotating", "Being annotated"
    DISAGREEMENT = "disagreement", "Disagreement open"
    DECIDED = "decided", "Decided"


class ReviewQuerySet(models.QuerySet["Review"]):
    def open_disagreements(self) -> ReviewQuerySet:
        return self.filter(state=ReviewState.DISAGREEMENT)


class Review(models.Model):
    """Where an item stands in consolidation: denormalised so the queue is one indexed query."""

    item = models.OneToOneField(Item, on_delete=models.CASCADE, related_name="review")
    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="reviews")
    round = models.ForeignKey(Round, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    state = models.CharField(max_length=16, choices=ReviewState.choices, default=ReviewState.ANNOTATING)
    disagreeing_dimensions = models.JSONField(default=list, blank=True)
    updated_at = models.DateTimeField(default=timezone.now)
    claimed_by = models.ForeignKey(User, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    claimed_at = models.DateTimeField(null=True, blank=True)

    objects = ReviewQuerySet.as_manager()

    class Meta:
        indexes = [
            models.Index(fields=["study", "state", "updated_at"], name="review_queue"),
            # The queue's count per round reads this index alone (no table rows).
            models.Index(fields=["study", "state", "round"], name="review_state_round"),
        ]
