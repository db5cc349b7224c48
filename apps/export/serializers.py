"""Shapes of the export API: export jobs and the request that starts one."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from apps.adjudication.models import Provenance
from apps.core.jobs import display_status
from apps.corpus.models import Source

from .models import ExportFormat, ExportJob


class ExportJobSerializer(serializers.ModelSerializer[ExportJob]):
    status = serializers.SerializerMethodField(help_text="`stalled` when a running job's worker died.")
    percent = serializers.IntegerField(read_only=True, allow_null=True)
    created_by = serializers.CharField(
        source="created_by.username", read_only=True, allow_null=True, default=None
    )
    download = serializers.SerializerMethodField(
        help_text="The file's URL once the export succeeded, else null."
    )

    class Meta:
        model = ExportJob
        fields = [
            "id", "format", "options", "status", "progress_done", "progress_total", "percent", "message",
            "error", "file_size", "sha256", "row_count", "codebook_version", "created_by", "created_at",
            "finished_at", "download",
        ]  # fmt: skip

    def get_status(self, job: ExportJob) -> str:
        return display_status(job)

    def get_download(self, job: ExportJob) -> str | None:
        url: str | None = self.context.get("download_urls", {}).get(job.pk)
        return url


class ExportRequestSerializer(serializers.Serializer[Any]):
    """`zip` is the replication package (the whole study: no filter, no level)."""

    format = serializers.ChoiceField(choices=ExportFormat.choices)
    raw = serializers.BooleanField(default=False, help_text="Every annotator's labels too.")
    round = serializers.IntegerField(required=False, min_value=1)
    provenance = serializers.ChoiceField(choices=Provenance.choices, required=False)
    source = serializers.ChoiceField(choices=Source.choices, required=False)  # type: ignore[assignment]
    level = serializers.IntegerField(
        required=False, min_value=1, max_value=50, help_text="Tree depth of the labels."
    )
