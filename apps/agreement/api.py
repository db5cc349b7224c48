"""Agreement over the API (leads and owners, like the dashboard): the latest figures, a new computation,
and polling it. Computations go through `services` (`request_dashboard`, `command_snapshot`), so each is
recorded as an `AgreementSnapshot` with its codebook version, exactly as from the dashboard or the command.
"""

from __future__ import annotations

from django.db.models import QuerySet
from django.shortcuts import get_object_or_404
from django.urls import path
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from apps.accounts.api import StudyAPIView, StudyListAPIView
from apps.core.api import refuse
from apps.raters import alt_test

from . import services
from .models import AgreementSnapshot
from .serializers import ComputeSerializer, LatestSerializer, LevelSerializer, SnapshotSerializer


def _snapshots(study_id: int) -> QuerySet[AgreementSnapshot]:
    return AgreementSnapshot.objects.filter(study_id=study_id).select_related(
        "round", "dimension", "created_by"
    )


class Latest(StudyAPIView):
    """The latest dashboard figures at `level`, whether they are still fresh, and any computation running."""

    lead_only = True

    @extend_schema(parameters=[LevelSerializer], responses=LatestSerializer, operation_id="agreement_latest")
    def get(self, request: Request, slug: str) -> Response:
        form = LevelSerializer(data=request.query_params)
        form.is_valid(raise_exception=True)
        state = services.dashboard_state(self.study, form.validated_data.get("level"))
        ids = [s.pk for s in (state.snapshot, state.running) if s is not None]
        loaded = {s.pk: s for s in _snapshots(self.study.pk).filter(pk__in=ids)}
        body = {
            "snapshot": loaded.get(state.snapshot.pk) if state.snapshot else None,
            "running": loaded.get(state.running.pk) if state.running else None,
            "fresh": state.fresh,
        }
        return Response(LatestSerializer(body).data)


class SnapshotList(StudyListAPIView[AgreementSnapshot]):
    """Every agreement computation of the study, newest first. POST computes a new one: 201 with the
    result when it ran now, 202 when it runs in the background (poll its detail)."""

    serializer_class = SnapshotSerializer
    lead_only = True
    archived_methods = frozenset({"POST"})  # computing reads an archived study's labels
    cursor_ordering = "-id"

    def get_queryset(self) -> QuerySet[AgreementSnapshot]:
        return _snapshots(self.study.pk)

    @extend_schema(request=ComputeSerializer, responses={201: SnapshotSerializer, 202: SnapshotSerializer})
    def post(self, request: Request, slug: str) -> Response:
        form = ComputeSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = form.validated_data
        asked = ("dimension", "round", "phase", "raters", "alt_test")
        command = data["scope"] == "report" or any(name in data for name in asked)
        try:
            if command:
                snapshot = services.command_snapshot(
                    self.study,
                    dimension=data.get("dimension"),
                    round_number=data.get("round"),
                    level=data.get("level"),
                    bootstrap=data.get("bootstrap"),
                    seed=data.get("seed"),
                    phase=data.get("phase", "blind"),
                    raters=data.get("raters"),
                    alt_test_rater=data.get("alt_test"),
                    epsilon=data.get("epsilon", alt_test.DEFAULT_EPSILON),
                    q=data.get("q", alt_test.DEFAULT_Q),
                    include_assisted=data["include_assisted"],
                    actor=self.user,
                )
            else:
                snapshot = services.request_dashboard(self.study, data.get("level"), actor=self.user)
        except services.RatingsError as exc:
            refuse(exc)
        snapshot = _snapshots(self.study.pk).get(pk=snapshot.pk)
        finished = snapshot.is_finished
        return Response(
            SnapshotSerializer(snapshot).data,
            status=status.HTTP_201_CREATED if finished else status.HTTP_202_ACCEPTED,
        )


class SnapshotDetail(StudyAPIView):
    """One computation: status, progress and, once finished, its figures."""

    lead_only = True

    @extend_schema(responses=SnapshotSerializer, operation_id="agreement_snapshot")
    def get(self, request: Request, slug: str, pk: int) -> Response:
        return Response(SnapshotSerializer(get_object_or_404(_snapshots(self.study.pk), pk=pk)).data)


urlpatterns = [
    path("studies/<slug:slug>/agreement/", Latest.as_view(), name="api-agreement-latest"),
    path("studies/<slug:slug>/agreement/snapshots/", SnapshotList.as_view(), name="api-agreement-list"),
    path(
        "studies/<slug:slug>/agreement/snapshots/<int:pk>/",
        SnapshotDetail.as_view(),
        name="api-agreement-detail",
    ),
]
