"""Export runs: the consolidated dataset and the replication package, built in the background."""

from __future__ import annotations

from django.contrib.auth.models import AnonymousUser
from django.db import models

from apps.accounts.models import Role, Study, User
from apps.core.models import Job


class ExportFormat(models.TextChoices):
    CSV = "csv", "CSV"
    JSON = "json", "JSON"
    JSONL = "jsonl", "JSON Lines"
    XLSX = "xlsx", "Excel (XLSX)"
    ZIP = "zip", "Replication package (zip)"


class ExportJobQuerySet(models.QuerySet["ExportJob"]):
    def for_lead(self, user: User | AnonymousUser) -> ExportJobQuerySet:
        if not user.is_authenticated:
            return self.none()
        return self.filter(
            study__memberships__user=user, study__memberships__role__in=[Role.LEAD, Role.OWNER]
        )


class ExportJob(Job):
    """A file is offered for download only once it is complete (written, then renamed into place)."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="export_jobs")
    created_by = models.ForeignKey(User, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    format = models.CharField(max_length=8, choices=ExportFormat.choices)
    options = models.JSONField(default=dict, blank=True)
    file_path = models.CharField(max_length=500, blank=True)
    file_size = models.PositiveBigIntegerField(null=True, blank=True)
    sha256 = models.CharField(max_length=64, blank=True)
    row_count = models.PositiveIntegerField(null=True, blank=True)
    codebook_version = models.PositiveIntegerField(default=0)

    objects = ExportJobQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"Export #{self.pk} ({self.format}) {self.status}"


class ReReview(models.Model):
    """A lead's "still right" on an item of the re-review worklist (docs/paper.md, "Codebook evolution"):
    its labels were checked against codebook version `codebook_version`, so changes up to that version no
    longer list it. The latest per item counts; earlier ones stay as history."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="rereviews")
    item = models.ForeignKey("corpus.Item", on_delete=models.CASCADE, related_name="rereviews")
    codebook_version = models.PositiveIntegerField()
    reviewed_by = models.ForeignKey(User, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    reviewed_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["study", "item"], name="rereview_study_item")]

    def __str__(self) -> str:
        return f"Re-review of item {self.item_id} at v{self.codebook_version}"
