"""An item's discussion thread over the API: GET its comments in a round, POST a comment.

The same rule as the page (`services.threads.check_thread`): the round's annotators of the item once the
round is revealed (403 with the reason while it is blind), and the study's leads; anyone else 404.
"""

from __future__ import annotations

from typing import Any

from django.shortcuts import get_object_or_404
from django.urls import path
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from apps.accounts.api import StudyAPIView
from apps.core.api import refuse
from apps.corpus.models import Item

from .models import Round
from .services import threads as service
from .services.common import AnnotationError
from .threads import thread_comments


class ThreadCommentSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField()
    author = serializers.CharField()
    body = serializers.CharField(allow_blank=True, help_text="Markdown; empty once deleted.")
    body_html = serializers.CharField(allow_blank=True, help_text="The Markdown, sanitized.")
    mentions = serializers.ListField(child=serializers.CharField())
    created_at = serializers.DateTimeField()
    edited_at = serializers.DateTimeField(allow_null=True)
    deleted = serializers.BooleanField()


class ThreadSerializer(serializers.Serializer[Any]):
    item = serializers.IntegerField()
    round = serializers.IntegerField()
    comments = ThreadCommentSerializer(many=True)


class PostCommentSerializer(serializers.Serializer[Any]):
    body = serializers.CharField(max_length=service.MAX_COMMENT)


class ItemThread(StudyAPIView):
    """GET the item's thread in round `number` (`?round=N`, default: the item's latest round); POST a
    comment (`body`, Markdown)."""

    def _thread(self, item_id: int) -> tuple[Round, Item]:
        item = get_object_or_404(Item.objects.filter(study=self.study), pk=item_id)
        number = self.request.query_params.get("round")
        rounds = Round.objects.filter(study=self.study, round_items__item=item).select_related("study")
        round_ = (
            get_object_or_404(rounds, number=int(number)) if number and number.isdigit() else None
        ) or rounds.order_by("-number").first()
        if round_ is None:
            refuse("This item is in no round: it has no thread.", status_code=404)
        try:
            service.check_thread(round_, item, self.user)
        except service.NotInThread:
            refuse("No such thread.", status_code=404)
        except service.ThreadClosed as exc:
            refuse(exc, status_code=403)
        return round_, item

    def _body(self, round_: Round, item: Item) -> dict[str, Any]:
        return {
            "item": item.pk,
            "round": round_.number,
            "comments": [
                {"id": c.pk, "author": c.author.username, "body": c.body, "body_html": c.body_html,
                 "mentions": [m.username for m in c.mentions.all()], "created_at": c.created_at,
                 "edited_at": c.edited_at, "deleted": c.deleted_at is not None}
                for c in thread_comments(round_, item)
            ],
        }  # fmt: skip

    @extend_schema(responses=ThreadSerializer, operation_id="item_thread")
    def get(self, request: Request, slug: str, pk: int) -> Response:
        round_, item = self._thread(pk)
        service.mark_read(round_, item, self.user)
        return Response(ThreadSerializer(self._body(round_, item)).data)

    @extend_schema(request=PostCommentSerializer, responses={201: ThreadSerializer})
    def post(self, request: Request, slug: str, pk: int) -> Response:
        round_, item = self._thread(pk)
        form = PostCommentSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        try:
            service.add_comment(round_, item, self.user, form.validated_data["body"])
        except AnnotationError as exc:
            refuse(exc)
        return Response(ThreadSerializer(self._body(round_, item)).data, status=status.HTTP_201_CREATED)


urlpatterns = [
    path("studies/<slug:slug>/items/<int:pk>/thread/", ItemThread.as_view(), name="api-item-thread"),
]
