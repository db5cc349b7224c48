"""Reads of the discussion threads: a thread's comments, and a user's inbox of unread threads.

Nothing here writes. A thread is read only after `services.threads.check_thread` allowed it; the inbox
lists only threads of revealed rounds where the user is an annotator of the item (leads: every thread of
their studies with comments).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, Exists, F, OuterRef, Q, QuerySet, Subquery

from apps.accounts.models import Role, Study, User
from apps.corpus.models import Item

from .models import Assignment, AssignmentStatus, Comment, Round, RoundPhase, ThreadRead


def thread_comments(round_: Round, item: Item) -> QuerySet[Comment]:
    return (
        Comment.objects.filter(round=round_, item=item)
        .select_related("author")
        .prefetch_related("mentions")
        .annotate(n_edits=Count("edits"))
        .order_by("created_at", "id")
    )


@dataclass(frozen=True)
class InboxRow:
    round: Round
    item: Item
    unread: int
    mentioned: bool


def inbox(study: Study, user: User) -> list[InboxRow]:
    """Threads with comments by others that `user` has not read (after their last visit), mentions
    first. An annotator's threads are those of items they submitted in a revealed round (after a forced
    reveal, an item still open to them has no thread for them yet); a lead's, all."""
    last_read = ThreadRead.objects.filter(round=OuterRef("round"), item=OuterRef("item"), user=user).values(
        "read_at"
    )
    comments = (
        Comment.objects.filter(round__study=study, deleted_at__isnull=True)
        .exclude(author=user)
        .annotate(seen=Subquery(last_read[:1]))
        .filter(Q(seen__isnull=True) | Q(created_at__gt=F("seen")))
    )
    lead = study.memberships.filter(user=user, role__in=[Role.LEAD, Role.OWNER]).exists()
    if not lead:
        held = Assignment.objects.filter(
            round=OuterRef("round"), item=OuterRef("item"), annotator=user, status=AssignmentStatus.SUBMITTED
        )
        comments = comments.filter(Exists(held)).exclude(round__phase=RoundPhase.BLIND)
    rows = (
        comments.values("round", "item")
        .annotate(n=Count("id", distinct=True), mentioned=Count("id", filter=Q(mentions=user)))
        .order_by()
    )
    found = list(rows)
    rounds = Round.objects.in_bulk([r["round"] for r in found])
    items = Item.objects.in_bulk([r["item"] for r in found])
    out = [InboxRow(rounds[r["round"]], items[r["item"]], r["n"], r["mentioned"] > 0) for r in found]
    return sorted(out, key=lambda r: (not r.mentioned, r.round.number, r.item.pk))
