"""The members and invitations endpoints: change a role, remove a member, invite, revoke, accept.

Leads and owners (`lead_only`), under the same rules as the members page (the services'); accepting is
for any signed-in person who holds the link's token.
"""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import generics, status
from rest_framework.request import Request
from rest_framework.response import Response

from apps.core.api import APIBase, refuse

from . import invitations, services
from .api import StudyAPIView, StudyListAPIView, signed_in
from .models import Invitation, Membership
from .serializers import (
    AcceptInvitationSerializer,
    CreateInvitationSerializer,
    InvitationSerializer,
    IssuedInvitationSerializer,
    MemberRoleSerializer,
    MembershipSerializer,
    RemovalSerializer,
)


class MemberDetail(StudyAPIView):
    """One member. PATCH changes their role (a lead manages annotators only; only an owner gives or takes
    the lead and owner roles; the last owner stays). DELETE removes them: their submitted labels stay,
    their open assignments return to the pool (assign the round again to hand them out)."""

    lead_only = True

    def _membership(self, username: str) -> Membership:
        return get_object_or_404(
            Membership.objects.filter(study=self.study).select_related("user"), user__username=username
        )

    @extend_schema(request=MemberRoleSerializer, responses=MembershipSerializer, operation_id="member_role")
    def patch(self, request: Request, slug: str, username: str) -> Response:
        membership = self._membership(username)
        form = MemberRoleSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        try:
            changed, _ = services.set_member_role(
                self.study, membership.user.username, form.validated_data["role"], actor=self.user
            )
        except services.MembershipRefused as exc:
            refuse(exc, status_code=status.HTTP_403_FORBIDDEN)
        except services.StudyError as exc:
            refuse(exc)
        return Response(MembershipSerializer(changed).data)

    @extend_schema(responses=RemovalSerializer, operation_id="member_remove")
    def delete(self, request: Request, slug: str, username: str) -> Response:
        membership = self._membership(username)
        try:
            removal = services.remove_member(self.study, membership.user, actor=self.user)
        except services.MembershipRefused as exc:
            refuse(exc, status_code=status.HTTP_403_FORBIDDEN)
        except services.StudyError as exc:
            refuse(exc)
        data = {"username": removal.username, "role": removal.role, "released": removal.released}
        return Response(RemovalSerializer(data).data)


class InvitationList(StudyListAPIView[Invitation]):
    """The study's pending invitations (leads and owners). POST invites an address (the link is e-mailed,
    single use) or creates a link (`max_uses`: 1, more, or null for any number until it expires); the
    answer holds the link, the only time it is shown."""

    serializer_class = InvitationSerializer
    lead_only = True
    cursor_ordering = "-id"

    def get_queryset(self):  # type: ignore[no-untyped-def]
        return Invitation.objects.filter(study=self.study).pending().select_related("created_by")

    @extend_schema(request=CreateInvitationSerializer, responses={201: IssuedInvitationSerializer})
    def post(self, request: Request, slug: str) -> Response:
        form = CreateInvitationSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = form.validated_data
        try:
            issued = invitations.create_invitation(
                self.study,
                role=data["role"],
                actor=self.user,
                email=data.get("email") or "",
                expires_days=data["expires_days"],
                max_uses=data.get("max_uses"),
            )
        except services.MembershipRefused as exc:
            refuse(exc, status_code=status.HTTP_403_FORBIDDEN)
        except services.StudyError as exc:
            refuse(exc)
        invitation = issued.invitation
        invitation.link = issued.link  # type: ignore[attr-defined]  # the serializer reads them
        invitation.mail_error = issued.mail_error  # type: ignore[attr-defined]
        return Response(IssuedInvitationSerializer(invitation).data, status=status.HTTP_201_CREATED)


class InvitationDetail(StudyAPIView):
    """DELETE revokes an invitation: its link stops working at once."""

    lead_only = True

    @extend_schema(responses=InvitationSerializer, operation_id="invitation_revoke")
    def delete(self, request: Request, slug: str, pk: int) -> Response:
        invitation = get_object_or_404(
            Invitation.objects.filter(study=self.study).select_related("study"), pk=pk
        )
        try:
            invitations.revoke(invitation, actor=self.user)
        except services.MembershipRefused as exc:
            refuse(exc, status_code=status.HTTP_403_FORBIDDEN)
        return Response(InvitationSerializer(invitation).data)


class AcceptInvitation(APIBase, generics.GenericAPIView[Membership]):
    """Accept an invitation as the caller: they join its study with its role (or keep a higher one)."""

    serializer_class = AcceptInvitationSerializer

    @extend_schema(
        request=AcceptInvitationSerializer, responses=MembershipSerializer, operation_id="invitation_accept"
    )
    def post(self, request: Request) -> Response:
        form = AcceptInvitationSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        try:
            membership = invitations.accept(form.validated_data["token"], signed_in(request))
        except invitations.InvitationUnusable as exc:
            refuse(
                exc,
                status_code=status.HTTP_404_NOT_FOUND if exc.reason == "unknown" else status.HTTP_410_GONE,
            )
        data = MembershipSerializer(membership).data
        return Response({**data, "study": membership.study.slug})
