"""Stored agreement computations, each tied to the codebook version it was computed on."""

from __future__ import annotations

from django.db import models

from apps.accounts.models import Study, User
from apps.annotation.models import Round
from apps.core.models import Job
from apps.taxonomy.models import Dimension


class AgreementSnapshot(Job):
    """One run of the §6 coefficients for a study, optionally narrowed to a round and a dimension."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="agreement_snapshots")
    round = models.ForeignKey(Round, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    dimension = models.ForeignKey(
        Dimension, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    level = models.PositiveSmallIntegerField(null=True, blank=True, help_text="Tree depth; empty = leaf.")
    codebook_version = models.PositiveIntegerField(default=0)
    params = models.JSONField(default=dict, blank=True)
    result = models.JSONField(default=dict, blank=True)
    created_by = models.ForeignKey(User, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["study", "-created_at"], name="agreement_recent")]

    def __str__(self) -> str:
        return f"Agreement #{self.pk} of {self.study_id}"
