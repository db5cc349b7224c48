"""The study-scoped API views every app builds on, and the accounts endpoints.

The API base (base view, errors, keyset pages, the bounded JSON parser, schema hooks) is core's
(`apps/core/api.py`); what needs a study is here. Every app's `api.py` builds its views on
`StudyAPIView`: the study in the URL is loaded through `permissions.access_study` in `initial()`, before
any handler runs, so a view cannot forget the check: anonymous → 401, outsider → 404 (a non-member cannot
learn that a study exists), annotator on a lead endpoint → 403. The same predicates guard the HTML pages,
so pages and API agree by construction.
"""

from __future__ import annotations

from typing import Any, ClassVar

from django.db.models import Model, QuerySet
from django.urls import path
from drf_spectacular.utils import extend_schema
from rest_framework import generics, status
from rest_framework.request import Request
from rest_framework.response import Response

from apps.core.api import APIBase, refuse

from . import services
from .models import Membership, Role, Study, User
from .permissions import access_study, archived_message
from .serializers import (
    AddMemberSerializer,
    MembershipSerializer,
    MeSerializer,
    StudyDeleteSerializer,
    StudyDetailSerializer,
    StudySerializer,
    StudySettingsSerializer,
)


def signed_in(request: Request) -> User:
    """The caller of an API view, once `IsAuthenticated` has let them in."""
    user = request.user
    assert isinstance(user, User)  # IsAuthenticated ran first
    return user


# --- the study-scoped base views ------------------------------------------------------------------


class StudyAPIMixin:
    """Loads ``self.study`` and ``self.role`` from the URL's ``slug`` before the handler runs.

    `lead_methods` lists the HTTP methods only leads and owners may use (every method: `lead_only`).
    An archived study refuses every method but GET, HEAD and OPTIONS (403 "unarchive it in Settings",
    `access_study`) except those in `archived_methods`: jobs that only read, the study's own settings.
    """

    lead_only: ClassVar[bool] = False
    lead_methods: ClassVar[frozenset[str]] = frozenset()
    archived_methods: ClassVar[frozenset[str]] = frozenset()
    study: Study
    role: str
    kwargs: dict[str, Any]

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)  # type: ignore[misc]  # authentication and permissions
        lead = self.lead_only or request.method in self.lead_methods
        archived_ok = request.method in self.archived_methods
        self.study, self.role = access_study(request.user, kwargs["slug"], lead=lead, archived_ok=archived_ok)

    @property
    def is_lead(self) -> bool:
        return self.role in (Role.LEAD, Role.OWNER)

    @property
    def user(self) -> User:
        return signed_in(self.request)  # type: ignore[attr-defined]  # the APIView's request


class StudyAPIView(StudyAPIMixin, APIBase):
    pass


class StudyListAPIView[M: Model](StudyAPIMixin, APIBase, generics.ListAPIView[M]):
    """A keyset-paginated list inside a study."""


# --- accounts endpoints ----------------------------------------------------------------------------


class MeView(APIBase):
    """Who the caller is, and their role in each study."""

    @extend_schema(responses=MeSerializer, operation_id="me")
    def get(self, request: Request) -> Response:
        user = signed_in(request)
        memberships = Membership.objects.filter(user=user).select_related("study").order_by("study__slug")
        data = {
            "username": user.username,
            "display_name": user.display_name,
            "studies": [{"slug": m.study.slug, "name": m.study.name, "role": m.role} for m in memberships],
        }
        return Response(MeSerializer(data).data)


class StudyList(APIBase, generics.ListAPIView[Study]):
    """The studies the caller belongs to (keyset pages by slug)."""

    serializer_class = StudySerializer
    cursor_ordering = "slug"

    def get_queryset(self) -> QuerySet[Study]:
        return Study.objects.visible_to(self.request.user)


class StudyDetail(StudyAPIView):
    """One study; any member. PATCH changes its settings (leads and owners; `archived`: owners only; an
    archived study takes only `{"archived": false}`). DELETE deletes it and everything in it (owners only)
    and needs the slug typed exactly as `confirm` (JSON body or query parameter): 204."""

    lead_methods = frozenset({"PATCH", "DELETE"})
    archived_methods = frozenset({"PATCH", "DELETE"})  # unarchiving; deleting an archived study

    def _detail(self) -> Response:
        self.study.role = self.role  # type: ignore[attr-defined]  # the serializer reads it
        return Response(StudyDetailSerializer(self.study).data)

    @extend_schema(responses=StudyDetailSerializer, operation_id="study_detail")
    def get(self, request: Request, slug: str) -> Response:
        return self._detail()

    @extend_schema(
        request=StudySettingsSerializer, responses=StudyDetailSerializer, operation_id="study_update"
    )
    def patch(self, request: Request, slug: str) -> Response:
        form = StudySettingsSerializer(self.study, data=request.data, partial=True)
        form.is_valid(raise_exception=True)
        changes = dict(form.validated_data)
        archived = changes.pop("archived", None)
        if self.study.is_archived and changes:  # only `archived` itself: unarchiving
            refuse(archived_message(self.study), status_code=status.HTTP_403_FORBIDDEN)
        try:
            if archived is not None:
                services.set_archived(self.study, archived, actor=self.user)
            services.update_study_settings(self.study, changes, actor=self.user)
        except services.MembershipRefused as exc:
            refuse(exc, status_code=status.HTTP_403_FORBIDDEN)
        except services.StudyError as exc:
            refuse(exc)
        return self._detail()

    @extend_schema(request=StudyDeleteSerializer, responses={204: None}, operation_id="study_delete")
    def delete(self, request: Request, slug: str) -> Response:
        if self.role != Role.OWNER:
            refuse("Only an owner of this study can delete it.", status_code=status.HTTP_403_FORBIDDEN)
        data = request.data if isinstance(request.data, dict) and request.data else request.query_params
        form = StudyDeleteSerializer(data={"confirm": data.get("confirm", "")})
        form.is_valid(raise_exception=True)
        try:
            services.delete_study(self.study, confirm=form.validated_data["confirm"], actor=self.user)
        except services.MembershipRefused as exc:
            refuse(exc, status_code=status.HTTP_403_FORBIDDEN)
        except services.StudyError as exc:
            refuse(exc)
        return Response(status=status.HTTP_204_NO_CONTENT)


class MemberList(StudyListAPIView[Membership]):
    """Members of a study (leads and owners). POST adds a member or changes a member's role: an existing
    user, or a new account when `password` is given (username and password validated). A lead adds
    annotators; only an owner gives or changes the lead and owner roles (403)."""

    serializer_class = MembershipSerializer
    lead_only = True
    cursor_ordering = "id"

    def get_queryset(self) -> QuerySet[Membership]:
        return Membership.objects.filter(study=self.study).select_related("user")

    @extend_schema(
        request=AddMemberSerializer, responses={201: MembershipSerializer, 200: MembershipSerializer}
    )
    def post(self, request: Request, slug: str) -> Response:
        form = AddMemberSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        try:
            membership, created = services.set_member_role(
                self.study,
                form.validated_data["username"].strip(),
                form.validated_data["role"],
                actor=self.user,
                password=form.validated_data.get("password") or "",
            )
        except services.UnknownUser as exc:
            refuse(f"{exc} Give a password to create the account.")
        except services.MembershipRefused as exc:
            refuse(exc, status_code=status.HTTP_403_FORBIDDEN)
        except services.StudyError as exc:
            refuse(exc)
        return Response(
            MembershipSerializer(membership).data,
            status=status.HTTP_201_CREATED if created else status.HTTP_200_OK,
        )


def _member_routes() -> list[Any]:
    from . import api_members as m  # it builds on the views above

    return [
        path(
            "studies/<slug:slug>/members/<str:username>/", m.MemberDetail.as_view(), name="api-member-detail"
        ),
        path("studies/<slug:slug>/invitations/", m.InvitationList.as_view(), name="api-invitation-list"),
        path(
            "studies/<slug:slug>/invitations/<int:pk>/",
            m.InvitationDetail.as_view(),
            name="api-invitation-detail",
        ),
        path("invitations/accept/", m.AcceptInvitation.as_view(), name="api-invitation-accept"),
    ]


urlpatterns = [
    path("me/", MeView.as_view(), name="api-me"),
    path("studies/", StudyList.as_view(), name="api-study-list"),
    path("studies/<slug:slug>/", StudyDetail.as_view(), name="api-study-detail"),
    path("studies/<slug:slug>/members/", MemberList.as_view(), name="api-member-list"),
    *_member_routes(),
]
