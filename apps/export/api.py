"""Exports over the API (leads and owners: an export holds every annotator's labels): start, poll,
download. Requests go through `services.parse_options` and `services.submit_export`, as from the page and
the command; a file is served only when `services.is_downloadable` (complete and checksummed)."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.http import FileResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404
from django.urls import path, reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from apps.accounts.api import StudyAPIView, StudyListAPIView
from apps.core.api import Conflict, refuse
from apps.taxonomy.index import CodebookIndex

from . import services
from .items_jsonl import item_lines
from .models import ExportJob
from .serializers import ExportJobSerializer, ExportRequestSerializer

JSON_DATASET = {"type": "array", "items": {"type": "object"}, "description": "One object per item."}


def _jobs(study_id: int) -> QuerySet[ExportJob]:
    return ExportJob.objects.filter(study_id=study_id).select_related("study", "created_by")


def _context(request: Request, jobs: list[ExportJob]) -> dict[str, Any]:
    urls = {
        job.pk: request.build_absolute_uri(
            reverse("api-export-download", kwargs={"slug": job.study.slug, "pk": job.pk})
        )
        for job in jobs
        if services.is_downloadable(job)
    }
    return {"download_urls": urls}


class ExportList(StudyListAPIView[ExportJob]):
    """The study's exports, newest first (leads and owners). POST starts one (202): poll its detail until
    `status` is `succeeded`, then GET its `download` URL."""

    serializer_class = ExportJobSerializer
    lead_only = True
    archived_methods = frozenset({"POST"})  # an archived study is still exported
    cursor_ordering = "-id"

    def get_queryset(self) -> QuerySet[ExportJob]:
        return _jobs(self.study.pk)

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        page = self.paginate_queryset(self.get_queryset())
        assert page is not None
        return self.get_paginated_response(
            ExportJobSerializer(page, many=True, context=_context(request, page)).data
        )

    @extend_schema(request=ExportRequestSerializer, responses={202: ExportJobSerializer})
    def post(self, request: Request, slug: str) -> Response:
        form = ExportRequestSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = form.validated_data
        try:
            options = services.parse_options(
                self.study,
                format=data["format"],
                raw=data["raw"],
                round=data.get("round"),
                provenance=data.get("provenance"),
                source=data.get("source"),
                level=data.get("level"),
            )
        except services.ExportOptionError as exc:
            refuse(exc)
        job = services.submit_export(self.study, options, user=self.user)
        job = _jobs(self.study.pk).get(pk=job.pk)
        return Response(
            ExportJobSerializer(job, context=_context(request, [job])).data, status=status.HTTP_202_ACCEPTED
        )


class ExportDetail(StudyAPIView):
    """One export: status, progress, size, checksum and, once complete, its download URL."""

    lead_only = True

    @extend_schema(responses=ExportJobSerializer, operation_id="export_detail")
    def get(self, request: Request, slug: str, pk: int) -> Response:
        job = get_object_or_404(_jobs(self.study.pk), pk=pk)
        return Response(ExportJobSerializer(job, context=_context(request, [job])).data)


class ExportDownload(StudyAPIView):
    """The exported file (409 while the export is not complete). Its SHA-256 is the job's `sha256`."""

    lead_only = True
    extra_error_statuses = (409,)

    @extend_schema(
        responses={
            (200, media): JSON_DATASET if media == "application/json" else OpenApiTypes.BINARY
            for media in sorted(set(services.CONTENT_TYPES.values()))
        },
        operation_id="export_download",
    )
    def get(self, request: Request, slug: str, pk: int) -> FileResponse:
        job = get_object_or_404(_jobs(self.study.pk), pk=pk)
        if not services.is_downloadable(job):
            raise Conflict(f"Export {job.pk} is {job.status}: its file is not ready.")
        path = services.stored_path(job)
        assert path is not None  # is_downloadable checked it
        response = FileResponse(
            path.open("rb"),
            as_attachment=True,
            filename=services.file_name(job),
            content_type=services.CONTENT_TYPES[job.format],
        )
        response["X-Content-SHA256"] = job.sha256
        return response


class ItemsJsonl(StudyAPIView):
    """Every item of the study with its submitted labels and its current decision, one JSON object per
    line, streamed as it is read (leads and owners); `items_jsonl` describes the lines."""

    lead_only = True

    @extend_schema(
        responses={(200, "application/x-ndjson"): OpenApiTypes.STR}, operation_id="export_items_jsonl"
    )
    def get(self, request: Request, slug: str) -> StreamingHttpResponse:
        lines = item_lines(self.study, CodebookIndex.for_study(self.study))
        response = StreamingHttpResponse(lines, content_type="application/x-ndjson")
        response["Content-Disposition"] = f'attachment; filename="{self.study.slug}-items.jsonl"'
        return response


urlpatterns = [
    path("studies/<slug:slug>/export/items.jsonl", ItemsJsonl.as_view(), name="api-export-items-jsonl"),
    path("studies/<slug:slug>/exports/", ExportList.as_view(), name="api-export-list"),
    path("studies/<slug:slug>/exports/<int:pk>/", ExportDetail.as_view(), name="api-export-detail"),
    path(
        "studies/<slug:slug>/exports/<int:pk>/download/", ExportDownload.as_view(), name="api-export-download"
    ),
]
