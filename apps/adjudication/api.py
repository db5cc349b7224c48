"""Adjudication over the API: the study's status (any member), and for leads and owners the disagreement
queue, an item's labels side by side, decisions (list and decide) and an item's decision history.

Reads go through `queries` and `status`; a decision through `services.decide`, the page's own service, so
two leads deciding at once get one decision and a 409 with the winner for the other.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from django.db.models import QuerySet
from django.shortcuts import get_object_or_404
from django.urls import path
from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.utils.urls import replace_query_param

from apps.accounts.api import StudyAPIView, StudyListAPIView
from apps.accounts.models import Study, User
from apps.annotation.models import Round
from apps.core.api import Conflict, refuse
from apps.corpus.models import Item
from apps.taxonomy.index import CodebookIndex

from . import queries, services
from .forms import decode_cursor, encode_cursor
from .models import Decision
from .serializers import (
    DecideSerializer,
    DecisionFilterSerializer,
    DecisionSerializer,
    ItemLabelsSerializer,
    QueueFilterSerializer,
    QueuePageSerializer,
    StatusSerializer,
)
from .status import status_for


def _values(index: CodebookIndex, findings: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Findings of category ids as the API's `[{"values": {dimension: [keys] | "pending"}}]`."""
    out = []
    for finding in findings:
        values: dict[str, Any] = {}
        for dimension, ids in finding.items():
            if isinstance(ids, str):  # consolidation's PENDING
                values[dimension] = ids
            else:
                values[dimension] = sorted(index.categories[c].key for c in ids if c in index.categories)
        out.append({"values": values})
    return out


def _item_ref(item: Item) -> dict[str, Any]:
    return {"id": item.pk, "url": item.url, "title": item.title}


def decision_data(decision: Decision, index: CodebookIndex) -> dict[str, Any]:
    return {
        "id": decision.pk,
        "item": _item_ref(decision.item),
        "round": decision.round.number if decision.round else None,
        "provenance": decision.provenance,
        "findings": _values(index, queries.decision_findings(decision)),
        "rationale": decision.rationale,
        "decided_by": decision.decided_by.username if decision.decided_by else None,
        "decided_at": decision.decided_at,
        "is_current": decision.is_current,
        "supersedes": decision.supersedes_id,
        "codebook_version": decision.codebook_version,
    }


def _decisions(study_id: int) -> QuerySet[Decision]:
    return Decision.objects.filter(study_id=study_id).select_related("item", "round", "decided_by")


class StatusView(StudyAPIView):
    """The study's counts (what `study_status --format json` prints); any member. For annotators
    `decisions` and `disagreements_open` are null: they move with the other annotators' labels."""

    @extend_schema(responses=StatusSerializer, operation_id="study_status")
    def get(self, request: Request, slug: str) -> Response:
        return Response(StatusSerializer(status_for(self.study, self.role)).data)


def _queue_filters(study: Study, data: Mapping[str, Any]) -> queries.QueueFilters:
    """The queue's filters from the validated query: a round number and an annotator's name become ids
    (refused with a 400 naming them when the study has no such round or there is no such user)."""
    round_id = None
    if data.get("round") is not None:
        round_id = (
            Round.objects.filter(study=study, number=data["round"]).values_list("pk", flat=True).first()
        )
        if round_id is None:
            refuse(f"The study has no round {data['round']}.")
    annotators: tuple[int, ...] = ()
    if data.get("annotator"):
        user_id = User.objects.filter(username=data["annotator"]).values_list("pk", flat=True).first()
        if user_id is None:
            refuse(f"No user named {data['annotator']!r}.")
        annotators = (user_id,)
    return queries.QueueFilters(
        round_id=round_id, dimension=data.get("dimension") or None, annotators=annotators, sort=data["sort"]
    )


def _queue_row(row: queries.QueueRow, study: Study, now: datetime) -> dict[str, Any]:
    """One open disagreement as the API lists it; annotators anonymised when the study says so."""
    names = [
        str(user.username) if study.show_annotator_names else f"Annotator {n}"
        for n, user in enumerate(row.annotators, start=1)
    ]
    claimed = row.claimer(now)
    return {
        "item": {"id": row.item_id, "url": row.url, "title": row.title},
        "round": row.round_number,
        "disagreeing_dimensions": row.dimensions,
        "annotators": names,
        "updated_at": row.updated_at,
        "claimed_by": claimed.username if claimed else None,
    }


class QueueView(StudyAPIView):
    """Open disagreements (leads and owners), filtered and sorted like the queue page, keyset pages of 50:
    follow `next`."""

    lead_only = True

    @extend_schema(
        parameters=[QueueFilterSerializer], responses=QueuePageSerializer, operation_id="disagreements"
    )
    def get(self, request: Request, slug: str) -> Response:
        form = QueueFilterSerializer(data=request.query_params)
        form.is_valid(raise_exception=True)
        data = form.validated_data
        after = decode_cursor(data.get("cursor", ""), data["sort"])
        if data.get("cursor") and after is None:
            refuse("The cursor is not valid: start again without it.")
        rows, next_cursor = queries.queue_rows(self.study, _queue_filters(self.study, data), after)
        now = timezone.now()
        results = [_queue_row(row, self.study, now) for row in rows]
        next_url = (
            replace_query_param(request.build_absolute_uri(), "cursor", encode_cursor(next_cursor))
            if next_cursor is not None
            else None
        )
        return Response(QueuePageSerializer({"next": next_url, "previous": None, "results": results}).data)


class ItemLabelsView(StudyAPIView):
    """An item's labels side by side (leads and owners): every submitted annotation of its latest round
    with memo, the current decision and the decision history."""

    lead_only = True

    @extend_schema(responses=ItemLabelsSerializer, operation_id="item_labels")
    def get(self, request: Request, slug: str, item_id: int) -> Response:
        item = get_object_or_404(Item.objects.in_study(self.study), pk=item_id)
        index = CodebookIndex.for_study(self.study)
        labels = queries.item_labels(item)
        annotations = []
        for n, (annotation, findings) in enumerate(
            zip(labels.annotations, labels.findings, strict=True), start=1
        ):
            user = annotation.assignment.annotator
            annotations.append(
                {
                    "annotator": user.username if self.study.show_annotator_names else f"Annotator {n}",
                    "findings": _values(index, findings),
                    "memo": annotation.memo,
                    "submitted_at": annotation.submitted_at,
                }
            )
        history = queries.history(item)
        current = next((d for d in history if d.is_current), None)
        round_number = (
            Round.objects.filter(pk=labels.round_id).values_list("number", flat=True).first()
            if labels.round_id is not None
            else None
        )
        body = {
            "item": _item_ref(item),
            "round": round_number,
            "expected": labels.k,
            "submitted": labels.submitted,
            "annotations": annotations,
            "current_decision": decision_data(current, index) if current else None,
            "history": [decision_data(d, index) for d in history],
        }
        return Response(ItemLabelsSerializer(body).data)


@extend_schema(parameters=[DecisionFilterSerializer])
class DecisionList(StudyListAPIView[Decision]):
    """Current decisions (gold labels) of the study, newest first (leads and owners). POST decides an item
    (provenance `adjudicated`), superseding its current decision."""

    serializer_class = DecisionSerializer
    lead_only = True
    cursor_ordering = "-id"
    extra_error_statuses = (409,)

    def get_queryset(self) -> QuerySet[Decision]:
        form = DecisionFilterSerializer(data=self.request.query_params)
        form.is_valid(raise_exception=True)
        rows = _decisions(self.study.pk).filter(is_current=True)
        if form.validated_data.get("provenance"):
            rows = rows.filter(provenance=form.validated_data["provenance"])
        if form.validated_data.get("round") is not None:
            rows = rows.filter(round__number=form.validated_data["round"])
        return rows

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        page = self.paginate_queryset(self.get_queryset())
        assert page is not None
        index = CodebookIndex.for_study(self.study)
        return self.get_paginated_response(
            DecisionSerializer([decision_data(d, index) for d in page], many=True).data
        )

    @extend_schema(request=DecideSerializer, responses={201: DecisionSerializer})
    def post(self, request: Request, slug: str) -> Response:
        form = DecideSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = form.validated_data
        item = get_object_or_404(Item.objects.in_study(self.study).select_related("study"), pk=data["item"])
        findings = []
        for finding in data["findings"]:
            values = finding.get("values", finding)
            if not isinstance(values, dict):
                refuse('Each finding is {"values": {dimension: [category keys]}}.')
            findings.append(
                {
                    str(k): v if isinstance(v, str) else [str(x) for x in v]
                    for k, v in values.items()
                    if isinstance(v, str | list)
                }
            )
        try:
            decision = services.decide(
                item,
                findings,
                actor=self.user,
                rationale=data.get("rationale", ""),
                expected_decision_id=data["expected_decision"],
            )
        except services.DecisionConflict as exc:
            raise Conflict(exc.message) from exc
        except services.AdjudicationError as exc:
            refuse(exc.message, exc.problems)
        index = CodebookIndex.for_study(self.study)
        decision = _decisions(self.study.pk).get(pk=decision.pk)
        return Response(
            DecisionSerializer(decision_data(decision, index)).data, status=status.HTTP_201_CREATED
        )


urlpatterns = [
    path("studies/<slug:slug>/status/", StatusView.as_view(), name="api-study-status"),
    path("studies/<slug:slug>/disagreements/", QueueView.as_view(), name="api-disagreements"),
    path("studies/<slug:slug>/items/<int:item_id>/labels/", ItemLabelsView.as_view(), name="api-item-labels"),
    path("studies/<slug:slug>/decisions/", DecisionList.as_view(), name="api-decision-list"),
]
