"""The codebook over the API: every member reads it; leads and owners change it through the same services
as the editor (`services`, `loading.load_codebook`), so every change is recorded and versioned the same way.
Any member may propose a code, as from the workbench.
"""

from __future__ import annotations

from typing import Any

from django.shortcuts import get_object_or_404
from django.urls import path
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from apps.accounts.api import StudyAPIView
from apps.core.api import query_flag, refuse

from . import services
from .codebook_spec import CodebookError, codebook_from_data
from .index import CategoryInfo, CodebookIndex, UnknownDimensionError
from .loading import load_codebook
from .models import Category, Codebook, Dimension
from .serializers import (
    CATEGORY_ACTIONS,
    CategoryActionSerializer,
    CategoryRowSerializer,
    CodebookFileSerializer,
    CodebookSerializer,
    EditCategorySerializer,
    LoadResultSerializer,
    NewCategorySerializer,
    ProposalResultSerializer,
    ProposalSerializer,
)


def category_row(index: CodebookIndex, info: CategoryInfo, user_id: int) -> dict[str, Any]:
    parent = index.categories.get(info.parent_id) if info.parent_id is not None else None
    merged = index.categories.get(info.merged_into_id) if info.merged_into_id is not None else None
    return {
        "id": info.id,
        "key": info.key,
        "name": info.name,
        "parent": parent.key if parent else None,
        "depth": index.depth(info.id),
        "path": index.path(info.id),
        "status": info.status,
        "definition": info.definition,
        "include": info.include,
        "exclude": info.exclude,
        "examples": list(info.examples),
        "merged_into": merged.key if merged else None,
        "mine": info.is_proposed and info.proposed_by_id == user_id,
    }


def codebook_data(index: CodebookIndex, *, user_id: int, lead: bool) -> dict[str, Any]:
    """What the caller may see of the codebook: leads everything, annotators the active categories and
    their own open proposals (another annotator's proposal would hint at their labels)."""
    dimensions = []
    for dimension in index.all_dimensions if lead else index.dimensions:
        if lead:
            infos = index.categories_of(dimension.key, active_only=False)
        else:
            infos = [info for info, _depth in index.options(dimension.key, user_id)]
        dimensions.append(
            {
                "id": dimension.id,
                "key": dimension.key,
                "name": dimension.name,
                "description": dimension.description,
                "multiple": dimension.multiple,
                "applies_when": {
                    "dimension": dimension.applies_when[0],
                    "category": dimension.applies_when[1],
                }
                if dimension.applies_when
                else None,
                "retired": dimension.retired,
                "categories": [category_row(index, info, user_id) for info in infos],
            }
        )
    return {"name": index.name, "version": index.version, "dimensions": dimensions}


class CodebookView(StudyAPIView):
    """GET: the codebook (any member). PUT (leads and owners): make the codebook equal a §5 codebook file,
    recorded as codebook changes (`?dry_run=true` only lists them)."""

    lead_methods = frozenset({"PUT"})

    @extend_schema(responses=CodebookSerializer, operation_id="codebook")
    def get(self, request: Request, slug: str) -> Response:
        index = CodebookIndex.for_study(self.study)
        return Response(
            CodebookSerializer(codebook_data(index, user_id=self.user.pk, lead=self.is_lead)).data
        )

    @extend_schema(
        request=CodebookFileSerializer,
        responses=LoadResultSerializer,
        parameters=[OpenApiParameter("dry_run", bool, description="List the changes, write nothing.")],
        operation_id="codebook_load",
    )
    def put(self, request: Request, slug: str) -> Response:
        dry_run = query_flag(request, "dry_run")
        try:
            spec = codebook_from_data(request.data)
            result = load_codebook(
                self.study, spec, actor=self.user, dry_run=dry_run, note="loaded via the API"
            )
        except CodebookError as exc:
            refuse(exc.message if len(exc.problems) == 1 else "The codebook is not valid.",
                   [f"{p}: {m}" if p else m for p, m in exc.problems])  # fmt: skip
        except services.CodebookEditError as exc:
            refuse(exc)
        return Response(
            LoadResultSerializer(
                {
                    "version": result.version,
                    "changed": result.changed,
                    "dry_run": result.dry_run,
                    "changes": result.lines(),
                }
            ).data
        )


def _dimension(study_id: int, key: str) -> Dimension:
    return get_object_or_404(Dimension.objects.filter(codebook__study_id=study_id), key=key)


def _by_key(dimension_id: int, key: str, what: str) -> Category:
    category = Category.objects.filter(dimension_id=dimension_id, key=key.strip()).first()
    if category is None:
        refuse(f"The dimension has no category with the key {key!r} ({what}).")
    return category


def _row(category: Category, user_id: int) -> dict[str, Any]:
    index = CodebookIndex.for_study(category.dimension.codebook.study)
    return category_row(index, index.categories[category.pk], user_id)


class CategoryCreate(StudyAPIView):
    """Add an active category to a dimension, at the end of its siblings (leads and owners)."""

    lead_only = True

    @extend_schema(request=NewCategorySerializer, responses={201: CategoryRowSerializer})
    def post(self, request: Request, slug: str, key: str) -> Response:
        dimension = _dimension(self.study.pk, key)
        form = NewCategorySerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = form.validated_data
        parent = _by_key(dimension.pk, data["parent"], "parent") if data.get("parent") else None
        try:
            category = services.add_category(
                dimension,
                key=data["key"],
                name=data["name"],
                parent=parent,
                definition=data.get("definition", ""),
                include=data.get("include", ""),
                exclude=data.get("exclude", ""),
                examples=data.get("examples", ()),
                actor=self.user,
            )
        except services.CodebookEditError as exc:
            refuse(exc)
        return Response(
            CategoryRowSerializer(_row(category, self.user.pk)).data, status=status.HTTP_201_CREATED
        )


class CategoryDetail(StudyAPIView):
    """GET one category (a member sees what the codebook shows them); PATCH edits its name, definition,
    criteria and examples (leads and owners)."""

    lead_methods = frozenset({"PATCH"})

    def _category(self, pk: int) -> Category:
        return get_object_or_404(
            Category.objects.filter(dimension__codebook__study=self.study).select_related(
                "dimension__codebook__study"
            ),
            pk=pk,
        )

    @extend_schema(responses=CategoryRowSerializer, operation_id="category_detail")
    def get(self, request: Request, slug: str, pk: int) -> Response:
        category = self._category(pk)
        visible = self.is_lead or category.status == "active" or category.proposed_by_id == self.user.pk
        if not visible:
            return Response({"detail": "No such category."}, status=status.HTTP_404_NOT_FOUND)
        return Response(CategoryRowSerializer(_row(category, self.user.pk)).data)

    @extend_schema(request=EditCategorySerializer, responses=CategoryRowSerializer)
    def patch(self, request: Request, slug: str, pk: int) -> Response:
        category = self._category(pk)
        form = EditCategorySerializer(data=request.data)
        form.is_valid(raise_exception=True)
        try:
            category = services.edit_category(category, actor=self.user, **form.validated_data)
        except services.CodebookEditError as exc:
            refuse(exc)
        return Response(CategoryRowSerializer(_row(category, self.user.pk)).data)


class CategoryAction(StudyAPIView):
    """merge, move, retire, restore, accept (a proposal) or reject (a proposal) one category (leads and
    owners); the response is the category afterwards."""

    lead_only = True

    @extend_schema(
        request=CategoryActionSerializer,
        responses=CategoryRowSerializer,
        parameters=[OpenApiParameter("action", str, OpenApiParameter.PATH, enum=CATEGORY_ACTIONS)],
    )
    def post(self, request: Request, slug: str, pk: int, action: str) -> Response:
        if action not in CATEGORY_ACTIONS:
            return Response({"detail": f"Unknown action {action!r}."}, status=status.HTTP_404_NOT_FOUND)
        category = get_object_or_404(
            Category.objects.filter(dimension__codebook__study=self.study).select_related(
                "dimension__codebook__study"
            ),
            pk=pk,
        )
        form = CategoryActionSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = form.validated_data
        target = data.get("target", "").strip()
        note = data.get("note", "")
        try:
            if action == "merge":
                if not target:
                    refuse("Name the category to merge into: `target`.")
                services.merge_category(
                    category, _by_key(category.dimension_id, target, "target"), actor=self.user, note=note
                )
            elif action == "move":
                parent_key = data.get("parent", "").strip()
                parent = _by_key(category.dimension_id, parent_key, "parent") if parent_key else None
                services.move_category(category, parent, actor=self.user)
            elif action == "retire":
                services.retire_category(category, actor=self.user)
            elif action == "restore":
                services.restore_category(category, actor=self.user)
            elif action == "accept":
                services.accept_proposal(category, actor=self.user)
            else:
                into = _by_key(category.dimension_id, target, "target") if target else None
                services.reject_proposal(category, into, actor=self.user, note=note)
        except services.CodebookEditError as exc:
            refuse(exc)
        category.refresh_from_db()
        return Response(CategoryRowSerializer(_row(category, self.user.pk)).data)


class ProposalCreate(StudyAPIView):
    """Propose a new code (any member), as from the workbench: usable at once by its author, reviewed by a
    lead. Near-duplicate names come back as warnings."""

    @extend_schema(
        request=ProposalSerializer, responses={201: ProposalResultSerializer, 200: ProposalResultSerializer}
    )
    def post(self, request: Request, slug: str) -> Response:
        form = ProposalSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = form.validated_data
        if not Codebook.objects.filter(study=self.study).exists():
            refuse("This study has no codebook yet.")
        try:
            dimension = Dimension.objects.filter(
                codebook__study=self.study, key=data["dimension"].strip(), retired_at__isnull=True
            ).first()
            if dimension is None:
                raise UnknownDimensionError(f"This codebook has no active dimension {data['dimension']!r}.")
            parent = _by_key(dimension.pk, data["parent"], "parent") if data.get("parent") else None
            proposal = services.propose_category(
                dimension, data["name"], parent, data.get("reason", ""), self.user
            )
        except (services.CodebookEditError, UnknownDimensionError) as exc:
            refuse(str(exc.args[0]) if exc.args else str(exc))
        body = {
            "category": _row(proposal.category, self.user.pk),
            "created": proposal.created,
            "warnings": list(proposal.warnings),
        }
        return Response(
            ProposalResultSerializer(body).data,
            status=status.HTTP_201_CREATED if proposal.created else status.HTTP_200_OK,
        )


urlpatterns = [
    path("studies/<slug:slug>/codebook/", CodebookView.as_view(), name="api-codebook"),
    path(
        "studies/<slug:slug>/codebook/dimensions/<slug:key>/categories/",
        CategoryCreate.as_view(),
        name="api-category-create",
    ),
    path("studies/<slug:slug>/codebook/categories/<int:pk>/", CategoryDetail.as_view(), name="api-category"),
    path(
        "studies/<slug:slug>/codebook/categories/<int:pk>/<slug:action>/",
        CategoryAction.as_view(),
        name="api-category-action",
    ),
    path("studies/<slug:slug>/codebook/proposals/", ProposalCreate.as_view(), name="api-proposal-create"),
]
