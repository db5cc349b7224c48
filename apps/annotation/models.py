"""Rounds, who labels what, and the labels themselves.

Blindness is a query rule: an annotator reads annotations only through
`Annotation.objects.for_annotator(user)`; leads read through `for_lead(user)`.
"""

from __future__ import annotations

from django.contrib.auth.models import AnonymousUser
from django.db import models
from django.db.models import Q
from django.utils import timezone

from apps.accounts.models import Role, Study, User
from apps.corpus.models import Item
from apps.taxonomy.models import Category, Dimension


class SampleMethod(models.TextChoices):
    UNIFORM = "uniform", "Uniform random"
    STRATIFIED = "stratified", "Stratified random"
    MANUAL = "manual", "Chosen by hand"
    FILTER = "filter", "By filter"
    IMPORTED = "imported", "Imported labels"


class RoundPhase(models.TextChoices):
    """Where a round stands: blind labelling, then (after the reveal) discussion, then adjudication.
    `apps/annotation/phases.py` is the one place that answers "is this round still blind?"."""

    BLIND = "blind", "Blind labelling"
    DISCUSSION = "discussion", "Discussion"
    ADJUDICATION = "adjudication", "Adjudication"


class RoundKind(models.TextChoices):
    """What a round's labels are for. A reliability round measures agreement: no model output ever reaches
    its annotators (docs/models.md, "Suggestions"). A labelling round only labels: a lead may switch on a
    model's suggestions in its workbench, and the annotations made with them are marked assisted. A training
    round holds gold checks only (docs/quality.md, "Training rounds"): after each submission its annotator
    sees the gold answer, and its pass mark, when set, keeps the study's other rounds locked for them."""

    RELIABILITY = "reliability", "Reliability"
    LABELLING = "labelling", "Labelling"
    TRAINING = "training", "Training"


class Round(models.Model):
    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="rounds")
    number = models.PositiveIntegerField()
    name = models.CharField(max_length=200, blank=True)
    method = models.CharField(max_length=16, choices=SampleMethod.choices, default=SampleMethod.UNIFORM)
    seed = models.BigIntegerField(null=True, blank=True)
    requested_size = models.PositiveIntegerField(null=True, blank=True)
    stratify_field = models.CharField(max_length=100, blank=True)
    params = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    created_by = models.ForeignKey(User, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    phase = models.CharField(max_length=16, choices=RoundPhase.choices, default=RoundPhase.BLIND)
    discussion = models.BooleanField(
        null=True,
        blank=True,
        help_text="Whether the reveal opens a discussion (None: the study's `discuss_after_reveal`).",
    )
    revealed_at = models.DateTimeField(null=True, blank=True)
    revealed_by = models.ForeignKey(User, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    kind = models.CharField(
        max_length=16,
        choices=RoundKind.choices,
        default=RoundKind.RELIABILITY,
        db_default=RoundKind.RELIABILITY,
    )
    pass_mark = models.PositiveSmallIntegerField(
        null=True,
        blank=True,
        help_text="A training round's pass mark in percent: until an annotator's score reaches it, the "
        "study's other rounds stay locked for them (None: no pass mark).",
    )

    class Meta:
        ordering = ["study", "number"]
        constraints = [
            models.UniqueConstraint(fields=["study", "number"], name="round_unique_number"),
            models.CheckConstraint(
                condition=Q(pass_mark__isnull=True) | Q(pass_mark__gte=1, pass_mark__lte=100),
                name="round_pass_mark_percent",
            ),
        ]

    def __str__(self) -> str:
        return Round.display_name(self.name, self.number)

    @staticmethod
    def display_name(name: str, number: int) -> str:
        """A round's name as pages show it: its own, else "Round N" (for rows read as columns)."""
        return name or f"Round {number}"

    @property
    def assigned_overlap(self) -> int | None:
        """The overlap (annotators per item) the round was assigned with, None when it was not recorded
        (an imported round): then the study's overlap holds."""
        return overlap_of(self.params)


def overlap_of(params: object) -> int | None:
    """The overlap recorded in a round's `params` by `assign_round`, or None."""
    assignment = params.get("assignment") if isinstance(params, dict) else None
    value = assignment.get("overlap") if isinstance(assignment, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


class RoundItem(models.Model):
    round = models.ForeignKey(Round, on_delete=models.CASCADE, related_name="round_items")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="round_items")
    position = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["round", "position"]
        constraints = [models.UniqueConstraint(fields=["round", "item"], name="round_item_unique")]


class AssignmentStatus(models.TextChoices):
    OPEN = "open", "Open"
    SUBMITTED = "submitted", "Submitted"


class AssignmentQuerySet(models.QuerySet["Assignment"]):
    def for_annotator(self, user: User | AnonymousUser) -> AssignmentQuerySet:
        """The user's own assignments: the only ones an annotator may open."""
        if not user.is_authenticated:
            return self.none()
        return self.filter(annotator=user)

    def for_lead(self, user: User | AnonymousUser) -> AssignmentQuerySet:
        if not user.is_authenticated:
            return self.none()
        return self.filter(
            study__memberships__user=user, study__memberships__role__in=[Role.LEAD, Role.OWNER]
        )

    def open(self) -> AssignmentQuerySet:
        return self.filter(status=AssignmentStatus.OPEN)

    def submitted(self) -> AssignmentQuerySet:
        return self.filter(status=AssignmentStatus.SUBMITTED)

    def reliability(self) -> AssignmentQuerySet:
        """Not gold checks: the assignments whose labels are consolidated and count in agreement."""
        return self.filter(gold=False)


class Assignment(models.Model):
    """One item of one round, given to one annotator."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="assignments")
    round = models.ForeignKey(Round, on_delete=models.CASCADE, related_name="assignments")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="assignments")
    annotator = models.ForeignKey(User, on_delete=models.PROTECT, related_name="assignments")
    status = models.CharField(max_length=16, choices=AssignmentStatus.choices, default=AssignmentStatus.OPEN)
    position = models.PositiveIntegerField(default=0, help_text="Order in the annotator's queue.")
    created_at = models.DateTimeField(default=timezone.now)
    submitted_at = models.DateTimeField(null=True, blank=True)
    gold = models.BooleanField(
        default=False,
        db_default=False,
        help_text="A gold check: the item's decision is the answer. Its labels are recorded, never "
        "consolidated, and never count in agreement (docs/quality.md).",
    )

    objects = AssignmentQuerySet.as_manager()

    class Meta:
        ordering = ["round", "position", "id"]
        constraints = [
            models.UniqueConstraint(fields=["round", "item", "annotator"], name="assignment_unique"),
        ]
        indexes = [
            models.Index(fields=["annotator", "status", "round", "position"], name="assignment_queue"),
            # An annotator's progress in a round (done / total on every workbench page): an index-only count.
            models.Index(fields=["annotator", "round", "status"], name="assignment_progress"),
            models.Index(fields=["study", "status"], name="assignment_study_status"),
            models.Index(fields=["item", "status"], name="assignment_item_status"),
            # An annotator's latest submissions (the queue's "submitted" list): a backward range scan, not a
            # sort of every submission of theirs (18 ms for 16,000 at 100,000 items).
            models.Index(fields=["annotator", "status", "submitted_at"], name="assignment_recent"),
        ]

    def __str__(self) -> str:
        return f"{self.item_id} → {self.annotator_id} (round {self.round_id})"


class GoldItem(models.Model):
    """A decided item a lead marked as a gold check: its current decision is the answer that gold checks
    seeded into later rounds, and training rounds, are scored against (docs/quality.md)."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="gold_items")
    item = models.OneToOneField(Item, on_delete=models.CASCADE, related_name="gold_item")
    marked_by = models.ForeignKey(User, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    marked_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["study", "item"]

    def __str__(self) -> str:
        return f"Gold check: {self.item_id}"


class AnnotationQuerySet(models.QuerySet["Annotation"]):
    def for_annotator(self, user: User | AnonymousUser) -> AnnotationQuerySet:
        if not user.is_authenticated:
            return self.none()
        return self.filter(assignment__annotator=user)

    def for_lead(self, user: User | AnonymousUser) -> AnnotationQuerySet:
        if not user.is_authenticated:
            return self.none()
        return self.filter(
            assignment__study__memberships__user=user,
            assignment__study__memberships__role__in=[Role.LEAD, Role.OWNER],
        )

    def submitted(self) -> AnnotationQuerySet:
        return self.filter(submitted_at__isnull=False)


class Annotation(models.Model):
    """An annotator's labels for one assignment: one per assignment, enforced by the database.

    A draft (autosaved, not submitted) has `submitted_at` null and its work in `draft`.
    """

    assignment = models.OneToOneField(Assignment, on_delete=models.CASCADE, related_name="annotation")
    memo = models.TextField(blank=True)
    draft = models.JSONField(default=dict, blank=True)
    codebook_version = models.PositiveIntegerField(default=0)
    started_at = models.DateTimeField(default=timezone.now)
    submitted_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(default=timezone.now)
    seconds_spent = models.PositiveIntegerField(null=True, blank=True)
    imported = models.BooleanField(default=False, help_text="Came from a labels file, not the workbench.")
    suggestion_shown = models.BooleanField(
        default=False,
        db_default=False,
        help_text="A model's suggestion was shown in the workbench: agreement with models leaves it out.",
    )

    objects = AnnotationQuerySet.as_manager()

    class Meta:
        indexes = [models.Index(fields=["submitted_at"], name="annotation_submitted")]

    def __str__(self) -> str:
        return f"Annotation of {self.assignment}"


class SendBack(models.Model):
    """A lead sent an annotator's submitted labels back to be labelled again, because the codebook changed
    under them (docs/paper.md, the re-review worklist): the annotation became a draft holding those labels
    (`labels_before`), the item's decision was withdrawn, and the assignment is in the annotator's queue
    again. It is open while the annotation is unsubmitted; submitting it closes it, with no write of its
    own on the submission path."""

    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, related_name="send_backs")
    reason = models.TextField()
    labels_before = models.JSONField(default=list)
    memo_before = models.TextField(blank=True)
    codebook_version = models.PositiveIntegerField(help_text="The codebook version it was sent back at.")
    sent_by = models.ForeignKey(User, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    sent_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [models.Index(fields=["assignment", "sent_at"], name="sendback_assignment")]

    def __str__(self) -> str:
        return f"Sent back: {self.assignment}"


class Finding(models.Model):
    """One fault (or question) reported by a post; a post may report several."""

    annotation = models.ForeignKey(Annotation, on_delete=models.CASCADE, related_name="findings")
    number = models.PositiveSmallIntegerField(default=1)

    class Meta:
        ordering = ["annotation", "number"]
        constraints = [
            models.UniqueConstraint(fields=["annotation", "number"], name="finding_unique_number"),
            models.CheckConstraint(condition=Q(number__gte=1), name="finding_number_positive"),
        ]


class LabelValue(models.Model):
    """A chosen category for one dimension of one finding, or *pending* (undecided).

    Several rows for one (finding, dimension) make a multi-choice value. After a merge `category`
    points to the target and `original_category` keeps what the annotator chose.
    """

    finding = models.ForeignKey(Finding, on_delete=models.CASCADE, related_name="values")
    dimension = models.ForeignKey(Dimension, on_delete=models.PROTECT, related_name="+")
    category = models.ForeignKey(
        Category, null=True, blank=True, on_delete=models.PROTECT, related_name="labels"
    )
    original_category = models.ForeignKey(
        Category, null=True, blank=True, on_delete=models.PROTECT, related_name="original_labels"
    )
    pending = models.BooleanField(default=False)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=(Q(pending=True) & Q(category__isnull=True))
                | (Q(pending=False) & Q(category__isnull=False)),
                name="labelvalue_category_xor_pending",
            ),
            models.UniqueConstraint(
                fields=["finding", "dimension", "category"], name="labelvalue_unique_category"
            ),
            models.UniqueConstraint(
                fields=["finding", "dimension"], condition=Q(pending=True), name="labelvalue_unique_pending"
            ),
        ]
        indexes = [models.Index(fields=["category"], name="labelvalue_category")]


class BlindRecord(models.Model):
    """One submitted annotation as it stood when its round was revealed: the round's blind record.

    Written once by `services.reveal_round` and never updated or deleted while the round exists, so the
    blind agreement of a revealed round never changes (docs/labelling.md, "Discussion")."""

    round = models.ForeignKey(Round, on_delete=models.CASCADE, related_name="blind_records")
    assignment = models.OneToOneField(Assignment, on_delete=models.CASCADE, related_name="blind_record")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="+")
    annotator = models.ForeignKey(User, on_delete=models.PROTECT, related_name="+")
    memo = models.TextField(blank=True)
    labels = models.JSONField(default=list, help_text="The findings as {dimension key: [category keys]}.")
    submitted_at = models.DateTimeField(null=True, blank=True)
    frozen_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [models.Index(fields=["round", "item"], name="blindrecord_round_item")]


class BlindValue(models.Model):
    """One label value of a blind record (category null: *pending*), read by agreement's blind phase."""

    record = models.ForeignKey(BlindRecord, on_delete=models.CASCADE, related_name="values")
    finding = models.PositiveSmallIntegerField(default=1)
    dimension = models.ForeignKey(Dimension, on_delete=models.PROTECT, related_name="+")
    category = models.ForeignKey(Category, null=True, blank=True, on_delete=models.PROTECT, related_name="+")


class Revision(models.Model):
    """An annotator's change of their own labels during discussion: what they were and what they became.
    Append-only; the blind record keeps what they were at the reveal."""

    annotation = models.ForeignKey(Annotation, on_delete=models.CASCADE, related_name="revisions")
    revised_at = models.DateTimeField(default=timezone.now)
    labels_before = models.JSONField(default=list)
    memo_before = models.TextField(blank=True)
    labels_after = models.JSONField(default=list)
    memo_after = models.TextField(blank=True)
    imported = models.BooleanField(default=False)

    class Meta:
        ordering = ["annotation", "revised_at", "id"]


class Comment(models.Model):
    """One comment of an item's discussion thread in a round (the thread is the (round, item) pair).

    `body` is the author's Markdown; `body_html` its rendering through corpus's sanitizer. An edit keeps
    the previous text in `CommentEdit`; a delete blanks the comment (kept, with its history), never
    removes the row, so replies keep their place."""

    round = models.ForeignKey(Round, on_delete=models.CASCADE, related_name="comments")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="thread_comments")
    author = models.ForeignKey(User, on_delete=models.PROTECT, related_name="+")
    body = models.TextField()
    body_html = models.TextField(blank=True)
    mentions = models.ManyToManyField(User, blank=True, related_name="mentioned_in")
    created_at = models.DateTimeField(default=timezone.now)
    edited_at = models.DateTimeField(null=True, blank=True)
    deleted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["round", "item", "created_at", "id"]
        indexes = [models.Index(fields=["round", "item", "created_at"], name="comment_thread")]


class CommentEdit(models.Model):
    """A comment's text before an edit or a delete: the comment's history."""

    comment = models.ForeignKey(Comment, on_delete=models.CASCADE, related_name="edits")
    body = models.TextField()
    edited_at = models.DateTimeField(default=timezone.now)
    deleted = models.BooleanField(default=False)

    class Meta:
        ordering = ["comment", "edited_at", "id"]


class ThreadRead(models.Model):
    """When a user last read a thread: comments after it by others are unread."""

    round = models.ForeignKey(Round, on_delete=models.CASCADE, related_name="+")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="+")
    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="+")
    read_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["round", "item", "user"], name="threadread_unique"),
        ]


class Cause(models.Model):
    """One cause a disagreement can have, in the study's editable list (docs/labelling.md, "Causes"): the
    five defaults (`DEFAULT_CAUSES`) are made with the list's first use; a lead adds, renames or retires
    causes. A retired cause stays on the disagreements that carry it."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="causes")
    key = models.SlugField(max_length=50)
    name = models.CharField(max_length=100)
    position = models.PositiveIntegerField(default=0)
    retired = models.BooleanField(default=False)

    class Meta:
        ordering = ["study", "position", "id"]
        constraints = [models.UniqueConstraint(fields=["study", "key"], name="cause_unique_key")]

    def __str__(self) -> str:
        return self.name


DEFAULT_CAUSES = (
    ("codebook_gap", "Codebook gap"),
    ("ambiguous_item", "Ambiguous item"),
    ("slip", "Slip or misreading"),
    ("guideline_unclear", "Guideline unclear"),
    ("other", "Other"),
)
CODEBOOK_GAP = "codebook_gap"


class DisagreementCause(models.Model):
    """Why the annotators of an item in a revealed round disagreed: a cause of the study's list, a note,
    and, for a codebook gap, the category (a proposal, or the code the codebook gained or changed) it led
    to, so the codebook's trail shows why it changed. One per (round, item); the last word stands."""

    round = models.ForeignKey(Round, on_delete=models.CASCADE, related_name="disagreement_causes")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="disagreement_causes")
    cause = models.ForeignKey(Cause, on_delete=models.PROTECT, related_name="disagreements")
    note = models.TextField(blank=True)
    category = models.ForeignKey(
        Category, null=True, blank=True, on_delete=models.SET_NULL, related_name="disagreement_causes"
    )
    set_by = models.ForeignKey(User, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    set_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["round", "item"], name="disagreementcause_unique")]
