"""Items and imports over the API: any member reads items; leads and owners start and poll imports.

An import goes through the page's own forms (`forms.IMPORT_FORMS`) and `services.submit_import`, so the
API accepts exactly the options the page does and an upload is checked (extension, size) the same way.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Q, QuerySet
from django.shortcuts import get_object_or_404
from django.urls import path
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from apps.accounts.api import StudyAPIView, StudyListAPIView
from apps.core.api import BoundedJSONParser, refuse

from .forms import IMPORT_FORMS
from .models import ImportJob, Item
from .serializers import (
    ImportJobSerializer,
    ImportRequestSerializer,
    ItemFilterSerializer,
    ItemSerializer,
    ItemSummarySerializer,
)
from .services import ensure_rendered, submit_import


@extend_schema(parameters=[ItemFilterSerializer])
class ItemList(StudyListAPIView[Item]):
    """The study's items in id order, filtered (`q` searches title and URL), keyset pages."""

    serializer_class = ItemSummarySerializer

    def get_queryset(self) -> QuerySet[Item, dict[str, Any]]:  # type: ignore[override]  # rows as dicts
        filters = ItemFilterSerializer(data=self.request.query_params)
        filters.is_valid(raise_exception=True)
        data = filters.validated_data
        # rows as dicts (the cursor pagination reads their `id`): building 50 models cost 1-1.5 ms a page
        items: QuerySet[Item, dict[str, Any]] = Item.objects.in_study(self.study).values(*SUMMARY_FIELDS)
        if data.get("q"):
            items = items.filter(Q(title__icontains=data["q"]) | Q(url__icontains=data["q"]))
        if data.get("source"):
            items = items.filter(source=data["source"])
        if data.get("relevance"):
            items = items.filter(relevance=data["relevance"])
        if data.get("round") is not None:
            items = items.filter(
                round_items__round__study=self.study, round_items__round__number=data["round"]
            )
        if data.get("roundless"):
            items = items.filter(round_items__isnull=True)
        return items

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        page = self.paginate_queryset(self.get_queryset())
        assert page is not None  # the view is paginated
        return self.get_paginated_response([_summary(row) for row in page])


_TIMESTAMP = serializers.DateTimeField()
SUMMARY_FIELDS = ("id", "url", "title", "source", "external_id", "relevance", "created_at", "tags")


def _summary(item: dict[str, Any]) -> dict[str, Any]:
    """`ItemSummarySerializer(item).data` of a row of `SUMMARY_FIELDS`, built directly: a page of 50
    through the serializer's fields cost 2-3 ms, most of a list request (issue 25: a page <= 5 ms)."""
    created = item["created_at"]
    return {**item, "created_at": None if created is None else _TIMESTAMP.to_representation(created)}


class ItemDetail(StudyAPIView):
    """One item with its comments or answers; `body_html` is sanitized. No labels: those are scoped
    by the annotation and adjudication endpoints."""

    @extend_schema(responses=ItemSerializer, operation_id="item_detail")
    def get(self, request: Request, slug: str, pk: int) -> Response:
        item = get_object_or_404(
            Item.objects.in_study(self.study).prefetch_related("comments", "links"), pk=pk
        )
        ensure_rendered(item)
        return Response(ItemSerializer(item).data)


def form_data(data: Any) -> dict[str, Any]:
    """Request data as the import forms read it: a JSON list becomes one line per entry."""
    out: dict[str, Any] = {}
    for key in data:
        value = data.getlist(key) if hasattr(data, "getlist") else [data[key]]
        value = value[-1] if len(value) == 1 else value
        if isinstance(value, list):
            value = "\n".join(str(v) for v in value)
        elif value is None:
            value = ""
        out[str(key)] = value
    return out


class ImportList(StudyListAPIView[ImportJob]):
    """The study's imports, newest first (leads and owners). POST starts one (202): poll its `url`."""

    serializer_class = ImportJobSerializer
    lead_only = True
    cursor_ordering = "-id"
    parser_classes = [BoundedJSONParser, MultiPartParser, FormParser]

    def get_queryset(self) -> QuerySet[ImportJob]:
        return ImportJob.objects.filter(study=self.study).select_related("created_by")

    @extend_schema(
        request={"application/json": ImportRequestSerializer, "multipart/form-data": ImportRequestSerializer},
        responses={202: ImportJobSerializer},
    )
    def post(self, request: Request, slug: str) -> Response:
        if not hasattr(request.data, "get"):
            refuse("Send an object with `kind` and the import's options.")
        kind = str(request.data.get("kind") or "")
        if kind not in IMPORT_FORMS:
            refuse(f"Unknown import kind {kind!r}; choose one of: {', '.join(IMPORT_FORMS)}.")
        form = IMPORT_FORMS[kind](form_data(request.data), request.FILES)
        if not form.is_valid():
            problems = [
                f"{name}: {message}" if name != "__all__" else str(message)
                for name, messages in form.errors.items()
                for message in messages
            ]
            refuse("The import options are not valid.", problems)
        upload = form.upload()
        try:
            job = submit_import(
                self.study,
                form.params(),
                user=self.user,
                upload_name=upload.name if upload else None,
                chunks=upload.chunks() if upload else None,
            )
        except ValueError as exc:
            refuse(exc)
        job.refresh_from_db()
        return Response(ImportJobSerializer(job).data, status=status.HTTP_202_ACCEPTED)


class ImportDetail(StudyAPIView):
    """One import: status, progress, counts and row-level errors (leads and owners)."""

    lead_only = True

    @extend_schema(
        responses=ImportJobSerializer,
        operation_id="import_detail",
        parameters=[OpenApiParameter("pk", int, OpenApiParameter.PATH)],
    )
    def get(self, request: Request, slug: str, pk: int) -> Response:
        job = get_object_or_404(
            ImportJob.objects.filter(study=self.study).select_related("created_by"), pk=pk
        )
        return Response(ImportJobSerializer(job).data)


urlpatterns = [
    path("studies/<slug:slug>/items/", ItemList.as_view(), name="api-item-list"),
    path("studies/<slug:slug>/items/<int:pk>/", ItemDetail.as_view(), name="api-item-detail"),
    path("studies/<slug:slug>/imports/", ImportList.as_view(), name="api-import-list"),
    path("studies/<slug:slug>/imports/<int:pk>/", ImportDetail.as_view(), name="api-import-detail"),
]
