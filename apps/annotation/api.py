"""Rounds, assignments and labels over the API.

Leads and owners draw and assign rounds and read every assignment and annotation of their study. Every
member reads their own queue and annotations and submits labels for their own assignments only:
assignments are fetched through `Assignment.objects.for_annotator(user)`, so another annotator's
assignment is a 404, and the lead-wide lists are 403 for annotators. Labels are written by
`services.submit_annotation`, the workbench's own service.
"""

from __future__ import annotations

from typing import Any

from django.db.models import CharField, Count, Q, QuerySet, Value
from django.db.models.functions import Cast, Concat, LPad
from django.http import Http404
from django.shortcuts import get_object_or_404
from django.urls import path
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from apps.accounts.api import StudyAPIView, StudyListAPIView
from apps.accounts.models import User
from apps.core.api import Conflict, Refused, refuse
from apps.taxonomy import guidelines

from . import api_threads, decided, services
from .models import Annotation, AnnotationQuerySet, Assignment, BlindRecord, Revision, Round, RoundPhase
from .serializers import (
    AnnotationSerializer,
    AssignmentFilterSerializer,
    AssignmentSerializer,
    AssignResultSerializer,
    AssignRoundSerializer,
    DrawResultSerializer,
    DrawRoundSerializer,
    RevealRequestSerializer,
    RevealSerializer,
    RevisionHistorySerializer,
    RoundDetailSerializer,
    RoundSerializer,
    SubmitResultSerializer,
    SubmitSerializer,
    submit_result_data,
)
from .services import gold


def annotation_data(annotation: Annotation, book: services.LoadedCodebook) -> dict[str, Any]:
    """An annotation as `AnnotationSerializer` data; the caller fetched it through a scoped query."""
    assignment = annotation.assignment
    findings = [
        {"values": {dim: (v if v == "pending" else list(v)) for dim, v in values.items()}}
        for values in services.stored_labels(annotation, book)
    ]
    return {
        "assignment": assignment.pk,
        "item": assignment.item_id,
        "round": assignment.round.number,
        "annotator": assignment.annotator.username,
        "findings": findings,
        "memo": annotation.memo,
        "codebook_version": annotation.codebook_version,
        "submitted_at": annotation.submitted_at,
        "updated_at": annotation.updated_at,
        "seconds_spent": annotation.seconds_spent,
    }


# --- rounds (leads and owners) -----------------------------------------------------------------------


def _rounds(study_id: int) -> QuerySet[Round]:
    return Round.objects.filter(study_id=study_id).annotate(n_items=Count("round_items"))


class RoundList(StudyListAPIView[Round]):
    """The study's rounds (leads and owners). POST draws a round: a seeded random sample (stratified when
    `stratify` is given) of the items in no round and not screened out; the same draw twice changes
    nothing."""

    serializer_class = RoundSerializer
    lead_only = True
    cursor_ordering = "number"

    def get_queryset(self) -> QuerySet[Round]:
        return _rounds(self.study.pk)

    @extend_schema(
        request=DrawRoundSerializer, responses={201: DrawResultSerializer, 200: DrawResultSerializer}
    )
    def post(self, request: Request, slug: str) -> Response:
        form = DrawRoundSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = form.validated_data
        try:
            result = services.draw_round(
                self.study,
                number=data["number"],
                size=data["size"],
                seed=data["seed"],
                stratify_field=data.get("stratify", ""),
                actor=self.user,
            )
        except services.RoundError as exc:
            refuse(exc)
        body = {
            "round": _rounds(self.study.pk).get(pk=result.round.pk),
            "drawn": result.drawn,
            "population": result.population,
            "created": result.created,
        }
        return Response(
            DrawResultSerializer(body).data,
            status=status.HTTP_201_CREATED if result.created else status.HTTP_200_OK,
        )


class RoundDetail(StudyAPIView):
    """One round with each annotator's progress (leads and owners)."""

    lead_only = True

    @extend_schema(responses=RoundDetailSerializer, operation_id="round_detail")
    def get(self, request: Request, slug: str, number: int) -> Response:
        round_ = get_object_or_404(_rounds(self.study.pk), number=number)
        round_.progress = [row for row in services.round_progress(self.study) if row["round_id"] == round_.pk]  # type: ignore[attr-defined]
        return Response(RoundDetailSerializer(round_).data)


class RoundAssign(StudyAPIView):
    """Give each item of the round to `overlap` (default: the study's) of the annotators named, balanced;
    run again to complete and rebalance open work (leads and owners)."""

    lead_only = True

    @extend_schema(request=AssignRoundSerializer, responses=AssignResultSerializer)
    def post(self, request: Request, slug: str, number: int) -> Response:
        form = AssignRoundSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        get_object_or_404(Round.objects.filter(study=self.study), number=number)
        try:
            result = services.assign_round(
                self.study,
                number,
                form.validated_data["annotators"],
                overlap=form.validated_data.get("overlap"),
                actor=self.user,
            )
        except services.RoundError as exc:
            refuse(exc)
        return Response(
            AssignResultSerializer(
                {
                    "created": result.created,
                    "moved": result.moved,
                    "loads": dict(result.loads),
                    "open_loads": dict(result.open_loads),
                }
            ).data
        )


class RoundReveal(StudyAPIView):
    """GET where the round stands (its phase, when it was revealed, the blind records frozen): any member.
    POST reveals it (leads and owners): `force` is needed while assignments are open (409 says how many);
    idempotent."""

    lead_methods = frozenset({"POST"})
    extra_error_statuses = (409,)

    def _body(self, round_: Round) -> dict[str, Any]:
        return {
            "round": round_.number,
            "phase": round_.phase,
            "revealed_at": round_.revealed_at,
            "blind_records": round_.blind_records.count(),
            "open_assignments": services.open_assignment_count(round_),
        }

    @extend_schema(responses=RevealSerializer, operation_id="round_reveal")
    def get(self, request: Request, slug: str, number: int) -> Response:
        round_ = get_object_or_404(Round.objects.filter(study=self.study), number=number)
        return Response(RevealSerializer(self._body(round_)).data)

    @extend_schema(request=RevealRequestSerializer, responses=RevealSerializer)
    def post(self, request: Request, slug: str, number: int) -> Response:
        form = RevealRequestSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        get_object_or_404(Round.objects.filter(study=self.study), number=number)
        try:
            result = services.reveal_round(
                self.study,
                number,
                force=form.validated_data.get("force", False),
                actor=self.user,
                discussion=form.validated_data.get("discussion"),
            )
        except services.OpenAssignments as exc:
            raise Conflict(str(exc)) from exc
        except services.RoundError as exc:
            refuse(exc)
        return Response(RevealSerializer(self._body(result.round)).data)


# --- assignments ------------------------------------------------------------------------------------


def _refuse_locked(user: Any, assignment: Assignment) -> None:
    """403 with the reason while a training round's pass mark locks the assignment's round for its
    annotator (docs/quality.md), as the workbench refuses it."""
    try:
        gold.refuse_if_locked(user, assignment)
    except gold.TrainingLocked as exc:
        refuse(exc, status_code=403)


def _with_refs(assignments: QuerySet[Assignment]) -> QuerySet[Assignment]:
    return assignments.select_related("item", "round", "annotator").only(
        "id", "status", "position", "created_at", "submitted_at", "round__number", "item__id", "item__url",
        "item__title", "annotator__username", "study_id", "round_id", "item_id", "annotator_id",
    )  # fmt: skip


@extend_schema(parameters=[AssignmentFilterSerializer])
class AssignmentList(StudyListAPIView[Assignment]):
    """Every assignment of the study, filtered (leads and owners). No labels: see annotations/."""

    serializer_class = AssignmentSerializer
    lead_only = True

    def get_queryset(self) -> QuerySet[Assignment]:
        filters = AssignmentFilterSerializer(data=self.request.query_params)
        filters.is_valid(raise_exception=True)
        data = filters.validated_data
        rows = Assignment.objects.for_lead(self.user).filter(study=self.study)
        if data.get("round") is not None:
            rows = rows.filter(round__number=data["round"])
        if data.get("annotator"):
            rows = rows.filter(annotator__username=data["annotator"])
        if data.get("status"):
            rows = rows.filter(status=data["status"])
        if data.get("item") is not None:
            rows = rows.filter(item_id=data["item"])
        return _with_refs(rows)


def _padded(field: str, width: int) -> LPad:
    return LPad(Cast(field, CharField()), width, Value("0"))


class MyQueue(StudyListAPIView[Assignment]):
    """The caller's open assignments in queue order (round, then position), decided items left out."""

    serializer_class = AssignmentSerializer
    # One unique key in queue order (round number, position, id, zero-padded): DRF's cursor keeps the value
    # of the first ordering column only and pages through its ties by an offset it caps at 1,000, so with
    # the round number first, every page past 1,500 open assignments of a round was the same page, forever.
    cursor_ordering = "queue_key"
    cursor_position_pattern = r"[0-9]{39}"

    def get_queryset(self) -> QuerySet[Assignment]:
        mine = Assignment.objects.for_annotator(self.user).filter(study=self.study).open()
        mine = mine.exclude(
            Q(gold=False) & decided.reader().review_decided("item__")
        )  # gold: docs/quality.md
        key = Concat(
            _padded("round__number", 10), _padded("position", 10), _padded("id", 19), output_field=CharField()
        )
        return _with_refs(mine).annotate(queue_key=key)


class AssignmentDetail(StudyAPIView):
    """One assignment: the caller's own, or any of the study for a lead or owner."""

    @extend_schema(responses=AssignmentSerializer, operation_id="assignment_detail")
    def get(self, request: Request, slug: str, pk: int) -> Response:
        scope = (
            Assignment.objects.for_lead(self.user)
            if self.is_lead
            else Assignment.objects.for_annotator(self.user)
        )
        assignment = get_object_or_404(_with_refs(scope.filter(study=self.study)), pk=pk)
        if not self.is_lead:
            _refuse_locked(self.user, assignment)
        return Response(AssignmentSerializer(assignment).data)


# --- annotations ------------------------------------------------------------------------------------


def _annotations(scope: AnnotationQuerySet, study_id: int) -> AnnotationQuerySet:
    return scope.filter(assignment__study_id=study_id).select_related(
        "assignment__round", "assignment__annotator"
    )


class AnnotationList(StudyListAPIView[Annotation]):
    """Every submitted annotation of the study with its labels (leads and owners), filtered like
    assignments/. Pages of 20 by default."""

    serializer_class = AnnotationSerializer
    lead_only = True

    def get_queryset(self) -> QuerySet[Annotation]:
        filters = AssignmentFilterSerializer(data=self.request.query_params)
        filters.is_valid(raise_exception=True)
        data = filters.validated_data
        rows = _annotations(Annotation.objects.for_lead(self.user), self.study.pk).submitted()
        if data.get("round") is not None:
            rows = rows.filter(assignment__round__number=data["round"])
        if data.get("annotator"):
            rows = rows.filter(assignment__annotator__username=data["annotator"])
        if data.get("item") is not None:
            rows = rows.filter(assignment__item_id=data["item"])
        return rows

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return _annotation_page(self)

    @extend_schema(parameters=[AssignmentFilterSerializer])
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().get(request, *args, **kwargs)


class MyAnnotations(StudyListAPIView[Annotation]):
    """The caller's own submitted annotations with their labels, newest id first."""

    serializer_class = AnnotationSerializer
    cursor_ordering = "-id"

    def get_queryset(self) -> QuerySet[Annotation]:
        return _annotations(Annotation.objects.for_annotator(self.user), self.study.pk).submitted()

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return _annotation_page(self)


def _annotation_page(view: StudyListAPIView[Annotation]) -> Response:
    page = view.paginate_queryset(view.get_queryset())
    assert page is not None  # the view is paginated
    book = services.load_codebook(view.study)
    data = [annotation_data(a, book) for a in page]
    return view.get_paginated_response(AnnotationSerializer(data, many=True).data)


class AssignmentAnnotation(StudyAPIView):
    """GET the labels of an assignment (the caller's own; a lead or owner any of the study): 404 until
    submitted. POST submits the caller's labels for their own assignment, with the workbench's checks;
    the same labels twice store one annotation (`changed` false)."""

    extra_error_statuses = (409,)

    @extend_schema(responses=AnnotationSerializer, operation_id="assignment_annotation")
    def get(self, request: Request, slug: str, pk: int) -> Response:
        scope = (
            Annotation.objects.for_lead(self.user)
            if self.is_lead
            else Annotation.objects.for_annotator(self.user)
        )
        annotation = get_object_or_404(_annotations(scope, self.study.pk).submitted(), assignment_id=pk)
        return Response(
            AnnotationSerializer(annotation_data(annotation, services.load_codebook(self.study))).data
        )

    @extend_schema(
        request=SubmitSerializer, responses={201: SubmitResultSerializer, 200: SubmitResultSerializer}
    )
    def post(self, request: Request, slug: str, pk: int) -> Response:
        if (version := guidelines.to_read(self.study, self.user, self.role)) is not None:
            refuse(guidelines.refusal(self.study, version), status_code=status.HTTP_403_FORBIDDEN)
        if gold.training_lock(self.user, self.study) is not None:  # one query; the round only when locked
            _refuse_locked(
                self.user,
                get_object_or_404(
                    Assignment.objects.for_annotator(self.user)
                    .filter(study=self.study)
                    .select_related("round"),
                    pk=pk,
                ),
            )
        # The service loads the assignment under its lock and refuses another annotator's or another
        # study's (NotYourAssignment: the 404 of a scoped fetch); a refused body is checked against the
        # scoped fetch first, so that it too is a 404 for an assignment that is not the caller's.
        form = SubmitSerializer(data=request.data)
        if not form.is_valid():
            get_object_or_404(Assignment.objects.for_annotator(self.user).filter(study=self.study), pk=pk)
            form.is_valid(raise_exception=True)
        data = form.validated_data
        version = data.get("codebook_version")
        payload = {"findings": data["findings"], "memo": data.get("memo", "")}
        try:
            result = services.submit_annotation(
                Assignment(pk=pk),
                payload,
                self.user,
                codebook_version=services.load_codebook(self.study).version if version is None else version,
                seconds_spent=data.get("seconds_spent"),
                study=self.study,
            )
        except services.StaleCodebook as exc:
            raise Refused(str(exc), [str(p) for p in exc.problems], status_code=409) from exc
        except services.AlreadyDecided as exc:
            if Round.objects.filter(assignments__pk=pk, phase=RoundPhase.DISCUSSION).exists():
                raise Conflict(f"{exc} In discussion, POST the revision to .../revision/.") from exc
            raise Conflict(str(exc)) from exc
        except services.InvalidLabels as exc:
            refuse("These labels cannot be saved.", exc.problems)
        except services.NotYourAssignment as exc:
            raise Http404(NOT_FOUND_ASSIGNMENT) from exc
        return Response(
            submit_result_data(_submitted(result, self.user, self.study.pk)),
            status=status.HTTP_201_CREATED if result.created else status.HTTP_200_OK,
        )


# get_object_or_404's message for an assignment, which a submission refused by the service repeats.
NOT_FOUND_ASSIGNMENT = "No Assignment matches the given query."


def _submitted(result: services.SubmitResult, annotator: User, study_id: int) -> dict[str, Any]:
    """`annotation_data` of a submission just stored by `annotator`, its labels from the service (what the
    store now holds, in the same form) instead of read back: two queries and the codebook load less. The
    short path's annotation holds every column as written, with its round number; the ORM path's is read
    back with its round."""
    assert result.labels is not None  # every submission returns its labels
    annotation, round_number = result.annotation, result.round_number
    if round_number is None:
        scope = Annotation.objects.for_annotator(annotator)
        annotation = _annotations(scope, study_id).get(pk=result.annotation.pk)
        round_number = annotation.assignment.round.number
    assignment = annotation.assignment
    return {
        "assignment": assignment.pk,
        "item": assignment.item_id,
        "round": round_number,
        "annotator": annotator.username,
        "findings": [
            {"values": {dim: (v if v == "pending" else list(dict.fromkeys(v))) for dim, v in values.items()}}
            for values in result.labels.findings
        ],
        "memo": annotation.memo,
        "codebook_version": annotation.codebook_version,
        "submitted_at": annotation.submitted_at,
        "updated_at": annotation.updated_at,
        "seconds_spent": annotation.seconds_spent,
        "created": result.created,
        "changed": result.changed,
    }


class AssignmentRevision(StudyAPIView):
    """GET the history of an assignment's labels (the caller's own; a lead or owner any of the study): the
    blind record frozen at the reveal (null before it) and every revision since. POST revises the caller's
    own submitted labels during the round's discussion; 409 with the reason before the reveal, after the
    discussion or once the item is decided."""

    extra_error_statuses = (409,)

    @extend_schema(responses=RevisionHistorySerializer, operation_id="assignment_revisions")
    def get(self, request: Request, slug: str, pk: int) -> Response:
        scope = (
            Assignment.objects.for_lead(self.user)
            if self.is_lead
            else Assignment.objects.for_annotator(self.user)
        )
        assignment = get_object_or_404(scope.filter(study=self.study).select_related("round"), pk=pk)
        record = BlindRecord.objects.filter(assignment=assignment).first()
        revisions = Revision.objects.filter(annotation__assignment=assignment).order_by("revised_at", "pk")
        body = {
            "assignment": assignment.pk,
            "phase": assignment.round.phase,
            "blind": None if record is None else {"findings": record.labels, "memo": record.memo},
            "revisions": [
                {"revised_at": r.revised_at, "before": r.labels_before, "memo_before": r.memo_before,
                 "after": r.labels_after, "memo_after": r.memo_after}
                for r in revisions
            ],
        }  # fmt: skip
        return Response(RevisionHistorySerializer(body).data)

    @extend_schema(
        request=SubmitSerializer, responses=SubmitResultSerializer, operation_id="assignment_revise"
    )
    def post(self, request: Request, slug: str, pk: int) -> Response:
        assignment = get_object_or_404(
            Assignment.objects.for_annotator(self.user)
            .filter(study=self.study)
            .select_related("round", "study"),
            pk=pk,
        )
        _refuse_locked(self.user, assignment)
        form = SubmitSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        payload = {"findings": form.validated_data["findings"], "memo": form.validated_data.get("memo", "")}
        try:
            result = services.revise_annotation(assignment, payload, self.user, study=self.study)
        except services.InvalidLabels as exc:
            refuse("These labels cannot be saved.", exc.problems)
        except services.NotYourAssignment as exc:  # fetched through for_annotator: cannot happen
            refuse(exc, status_code=403)
        except services.AnnotationError as exc:
            raise Conflict(str(exc)) from exc
        annotation = _annotations(Annotation.objects.for_annotator(self.user), self.study.pk).get(
            pk=result.annotation.pk
        )
        body = {**annotation_data(annotation, services.load_codebook(self.study)), "created": False,
                "changed": result.changed}  # fmt: skip
        return Response(SubmitResultSerializer(body).data)


urlpatterns = [
    path("studies/<slug:slug>/rounds/", RoundList.as_view(), name="api-round-list"),
    path("studies/<slug:slug>/rounds/<int:number>/", RoundDetail.as_view(), name="api-round-detail"),
    path("studies/<slug:slug>/rounds/<int:number>/assign/", RoundAssign.as_view(), name="api-round-assign"),
    path("studies/<slug:slug>/rounds/<int:number>/reveal/", RoundReveal.as_view(), name="api-round-reveal"),
    path(
        "studies/<slug:slug>/assignments/<int:pk>/revision/",
        AssignmentRevision.as_view(),
        name="api-assignment-revision",
    ),
    path("studies/<slug:slug>/assignments/", AssignmentList.as_view(), name="api-assignment-list"),
    path(
        "studies/<slug:slug>/assignments/<int:pk>/", AssignmentDetail.as_view(), name="api-assignment-detail"
    ),
    path(
        "studies/<slug:slug>/assignments/<int:pk>/annotation/",
        AssignmentAnnotation.as_view(),
        name="api-assignment-annotation",
    ),
    path("studies/<slug:slug>/annotations/", AnnotationList.as_view(), name="api-annotation-list"),
    path("studies/<slug:slug>/my/queue/", MyQueue.as_view(), name="api-my-queue"),
    path("studies/<slug:slug>/my/annotations/", MyAnnotations.as_view(), name="api-my-annotations"),
]

urlpatterns += api_threads.urlpatterns  # the item's discussion thread
