"""Model raters: an LLM behind an OpenAI-compatible endpoint, a local baseline, or labels made elsewhere,
and the answers each gave (docs/models.md).

A rater stores the *name* of the environment variable that holds its API key, never the key: nothing
in this app reads the variable except the client that calls the server, and nothing writes its value.

Model answers are not annotations: they never count toward a round's overlap or its consolidation, and
the one annotator-facing read of them, a labelling round's suggestions, goes through the gate of
`apps.annotation.suggestions`.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from django.db import models
from django.db.models import Q
from django.utils import timezone

from apps.accounts.models import Study, User
from apps.annotation.models import Round
from apps.core.models import Job
from apps.corpus.models import Item
from apps.taxonomy.models import Category, Dimension


def public_netloc(url: str) -> str:
    """The host and port of a URL, without the user and password it may carry ("" for none)."""
    if not url:
        return ""
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        port = None
    host = parts.hostname or ""
    host = f"[{host}]" if ":" in host else host
    return f"{host}:{port}" if port else host


class RaterKind(models.TextChoices):
    OPENAI = "openai", "OpenAI-compatible endpoint"
    BASELINE = "baseline", "Local baseline (TF-IDF + linear classifier)"
    IMPORTED = "imported", "Imported labels"


class ModelRaterQuerySet(models.QuerySet["ModelRater"]):
    def of_study(self, study: Study) -> ModelRaterQuerySet:
        return self.filter(study=study).order_by("name")


class ModelRater(models.Model):
    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="model_raters")
    name = models.CharField(max_length=64)
    kind = models.CharField(max_length=16, choices=RaterKind.choices)
    base_url = models.URLField(max_length=500, blank=True)
    model = models.CharField(max_length=200, blank=True)
    api_key_env = models.CharField(
        max_length=100, blank=True, help_text="The name of the environment variable holding the API key."
    )
    temperature = models.FloatField(default=0.0)
    samples = models.PositiveSmallIntegerField(default=1)
    concurrency = models.PositiveSmallIntegerField(default=4)
    timeout = models.FloatField(default=60.0, help_text="Seconds per request.")
    prompt_template = models.TextField(blank=True)
    prompt_version = models.PositiveIntegerField(default=1)
    price_input = models.DecimalField(
        max_digits=12, decimal_places=6, null=True, blank=True, help_text="Price per million input tokens."
    )
    price_output = models.DecimalField(
        max_digits=12, decimal_places=6, null=True, blank=True, help_text="Price per million output tokens."
    )
    created_at = models.DateTimeField(default=timezone.now)
    created_by = models.ForeignKey(User, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")

    objects = ModelRaterQuerySet.as_manager()

    class Meta:
        ordering = ["study", "name"]
        constraints = [
            models.UniqueConstraint(fields=["study", "name"], name="model_rater_unique_name"),
            models.CheckConstraint(
                condition=Q(samples__gte=1) & Q(concurrency__gte=1) & Q(timeout__gt=0),
                name="model_rater_positive_settings",
            ),
            models.CheckConstraint(
                condition=~Q(kind="openai") | (~Q(base_url="") & ~Q(model="")),
                name="model_rater_endpoint_complete",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def host(self) -> str:
        """The server's host and port (what the pages and the replication package show: never the user
        and password a URL may carry, never a path)."""
        return public_netloc(self.base_url)


class AnswerStatus(models.TextChoices):
    VALID = "valid", "Valid"
    REFUSED = "refused", "Refused"


class ModelAnswer(models.Model):
    """One answer of a rater about one item (one of its k samples).

    ``round`` is None for labels that apply to the item wherever it is (an imported file without
    rounds). A refused answer (malformed JSON, an unknown category, a value for a dimension that does
    not apply, a missing dimension) keeps its ``reason`` and ``raw_text`` and has no labels.
    """

    rater = models.ForeignKey(ModelRater, on_delete=models.CASCADE, related_name="answers")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="+")
    round = models.ForeignKey(Round, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    sample = models.PositiveSmallIntegerField(default=0)
    prompt_hash = models.CharField(max_length=64, blank=True)
    codebook_version = models.PositiveIntegerField(default=0)
    model_id = models.CharField(max_length=200, blank=True, help_text="The model id the server reported.")
    params = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=8, choices=AnswerStatus.choices, default=AnswerStatus.VALID)
    reason = models.TextField(blank=True)
    raw_text = models.TextField(blank=True)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["rater", "item", "sample", "pk"]
        constraints = [
            # An answer is keyed by (item, round, prompt hash, sample); the parameters and model are the
            # rater's, so a rater's changed settings make a new prompt hash (`prompts.prompt_hash`).
            models.UniqueConstraint(
                fields=["rater", "item", "sample", "prompt_hash"],
                condition=Q(round__isnull=True),
                name="model_answer_unique_key",
            ),
            models.UniqueConstraint(
                fields=["rater", "item", "round", "sample", "prompt_hash"],
                condition=Q(round__isnull=False),
                name="model_answer_unique_round_key",
            ),
            models.CheckConstraint(
                condition=Q(status="valid") | ~Q(reason=""), name="model_answer_refusal_has_reason"
            ),
        ]
        indexes = [models.Index(fields=["rater", "item"], name="model_answer_rater_item")]


class ModelLabel(models.Model):
    """One category an answer chose in one dimension (several for a multi-choice dimension)."""

    answer = models.ForeignKey(ModelAnswer, on_delete=models.CASCADE, related_name="labels")
    finding = models.PositiveSmallIntegerField(default=1)
    dimension = models.ForeignKey(Dimension, on_delete=models.PROTECT, related_name="+")
    category = models.ForeignKey(Category, on_delete=models.PROTECT, related_name="+")

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["answer", "finding", "dimension", "category"], name="model_label_unique"
            )
        ]


class RunScope(models.TextChoices):
    ROUND = "round", "A round"
    SAMPLE = "sample", "A seeded sample"
    UNLABELLED = "unlabelled", "Items nobody labelled yet"


class ModelRun(Job):
    """One run of a rater over a round, a seeded sample, or the items nobody labelled yet: a job with
    progress, cancellable (``cancel_requested``), resumable (answers it already has are not asked again).

    Counts: ``asked`` requests answered, ``reused`` answers found from an earlier run, ``refused`` invalid
    answers (stored as refusals), ``failed`` items the server gave no answer for after the retries
    (nothing stored; a rerun asks again). ``model_ids`` are the model ids the server reported, in the
    order first seen (more than one: the model changed during the run).
    """

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="model_runs")
    rater = models.ForeignKey(ModelRater, on_delete=models.CASCADE, related_name="runs")
    scope = models.CharField(max_length=16, choices=RunScope.choices)
    round = models.ForeignKey(Round, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    sample_size = models.PositiveIntegerField(null=True, blank=True)
    seed = models.BigIntegerField(null=True, blank=True)
    limit = models.PositiveIntegerField(null=True, blank=True)
    cancel_requested = models.BooleanField(default=False)
    asked = models.PositiveIntegerField(default=0)
    reused = models.PositiveIntegerField(default=0)
    refused = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)
    input_tokens = models.PositiveBigIntegerField(default=0)
    output_tokens = models.PositiveBigIntegerField(default=0)
    cost = models.DecimalField(max_digits=14, decimal_places=6, null=True, blank=True)
    model_ids = models.JSONField(default=list, blank=True)
    created_by = models.ForeignKey(User, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["study", "-created_at"], name="model_run_recent")]

    def __str__(self) -> str:
        return f"Run #{self.pk} of {self.rater_id}"


class RoundSuggestions(models.Model):
    """A lead's switch: the workbench of a labelling round shows this rater's labels as suggestions
    (`raters/suggestions.py`; the gate is `annotation/suggestions.may_suggest`). One rater per round."""

    round = models.OneToOneField(Round, on_delete=models.CASCADE, related_name="+")
    rater = models.ForeignKey(ModelRater, on_delete=models.CASCADE, related_name="+")
    switched_on_at = models.DateTimeField(default=timezone.now)
    switched_on_by = models.ForeignKey(
        User, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    def __str__(self) -> str:
        return f"Suggestions of {self.rater_id} in round {self.round_id}"
