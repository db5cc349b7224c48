"""Studies and members over the API: the same scoping as the pages."""

from __future__ import annotations

from django.urls import path
from rest_framework import generics
from rest_framework.request import Request

from .models import Membership, Study
from .permissions import access_study
from .serializers import MembershipSerializer, StudySerializer


class StudyList(generics.ListAPIView[Study]):
    """The studies the caller belongs to."""

    serializer_class = StudySerializer
    ordering = "slug"

    def get_queryset(self):  # type: ignore[no-untyped-def]
        return Study.objects.visible_to(self.request.user).order_by("slug")


class StudyDetail(generics.RetrieveAPIView[Study]):
    serializer_class = StudySerializer

    def get_object(self) -> Study:
        study, _ = access_study(self.request.user, self.kwargs["slug"])
        return study


class MemberList(generics.ListAPIView[Membership]):
    """Members of a study (leads and owners only)."""

    serializer_class = MembershipSerializer
    ordering = "id"

    def get_queryset(self):  # type: ignore[no-untyped-def]
        request: Request = self.request
        study, _ = access_study(request.user, self.kwargs["slug"], lead=True)
        return Membership.objects.filter(study=study).select_related("user").order_by("id")


urlpatterns = [
    path("studies/", StudyList.as_view(), name="api-study-list"),
    path("studies/<slug:slug>/", StudyDetail.as_view(), name="api-study-detail"),
    path("studies/<slug:slug>/members/", MemberList.as_view(), name="api-member-list"),
]
