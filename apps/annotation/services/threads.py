"""Discussion threads: one per item of a round, for the round's annotators of that item and the leads.

A thread opens with the round's reveal: while the round is blind (`phases.is_blind`) an annotator may
neither read nor write it (a comment would tell what the others chose). Comments are Markdown rendered
through corpus's sanitizer (`corpus.rendering.render_markdown`); ``@username`` mentions a participant.
An author edits or deletes their own comment; each keeps the previous text (`CommentEdit`).
"""

from __future__ import annotations

import logging
import re

from django.conf import settings
from django.core.mail import send_mass_mail
from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from apps.accounts.models import Membership, Role, Study, User
from apps.corpus.models import Item
from apps.corpus.rendering import render_markdown

from ..models import Assignment, AssignmentStatus, Comment, CommentEdit, Round, ThreadRead
from ..phases import is_blind
from .common import AnnotationError

logger = logging.getLogger(__name__)

MAX_COMMENT = 20_000
_MENTION = re.compile(r"(?<![\w@])@([A-Za-z0-9_.+-]{1,150})")


class ThreadClosed(AnnotationError):
    """The thread is not open to this user (yet): the reason says why."""


class NotInThread(AnnotationError):
    """The user takes no part in this thread (another item, another round): answered as not found."""


def is_lead(study: Study, user: User) -> bool:
    return Membership.objects.filter(study=study, user=user, role__in=[Role.LEAD, Role.OWNER]).exists()


def participants(round_: Round, item: Item) -> list[User]:
    """The round's annotators of the item and the study's leads and owners, by username."""
    annotators = Assignment.objects.filter(round=round_, item=item).values("annotator")
    leads = Membership.objects.filter(study=round_.study, role__in=[Role.LEAD, Role.OWNER]).values("user")
    return list(
        User.objects.filter(pk__in=annotators).union(User.objects.filter(pk__in=leads)).order_by("username")
    )


def _readers(round_: Round, item: Item) -> set[int]:
    """Who may read the thread now (`check_thread`'s rule): the leads, and once the round is revealed the
    round's annotators who submitted the item."""
    leads = Membership.objects.filter(study=round_.study, role__in=[Role.LEAD, Role.OWNER])
    readers = set(leads.values_list("user_id", flat=True))
    if not is_blind(round_):
        submitted = Assignment.objects.filter(round=round_, item=item, status=AssignmentStatus.SUBMITTED)
        readers |= set(submitted.values_list("annotator_id", flat=True))
    return readers


def check_thread(round_: Round, item: Item, user: User) -> None:
    """Refuse a user the thread of `item` in `round_`: NotInThread when they are neither a lead nor one of
    its annotators, ThreadClosed while the round is blind or, after a forced reveal, while their own
    assignment of the item is still open (the thread would tell them what the others chose)."""
    if is_lead(round_.study, user):
        return
    status = (
        Assignment.objects.filter(round=round_, item=item, annotator=user)
        .values_list("status", flat=True)
        .first()
    )
    if status is None:
        raise NotInThread("No such thread.")
    if is_blind(round_):
        raise ThreadClosed(f"{round_} is still blind: its threads open when a lead reveals it.")
    if status != AssignmentStatus.SUBMITTED:
        raise ThreadClosed(
            "Submit your own labels on this item first: its thread opens to you once you have, so that it "
            "cannot tell you what the others chose."
        )


def _clean(body: str) -> str:
    text = body.strip()
    if not text:
        raise AnnotationError("Write something first: the comment is empty.")
    if len(text) > MAX_COMMENT:
        raise AnnotationError(f"A comment holds at most {MAX_COMMENT:,} characters (this one {len(text):,}).")
    return text


def _mentioned(round_: Round, item: Item, text: str) -> list[User]:
    names = set(_MENTION.findall(text))
    return [u for u in participants(round_, item) if u.username in names] if names else []


def add_comment(round_: Round, item: Item, user: User, body: str) -> Comment:
    """Post a comment to the thread (checked by `check_thread`); its mentions are the participants named."""
    check_thread(round_, item, user)
    text = _clean(body)
    with transaction.atomic():
        comment = Comment.objects.create(
            round=round_, item=item, author=user, body=text, body_html=render_markdown(text)
        )
        mentioned = _mentioned(round_, item, text)
        comment.mentions.set(mentioned)
        mark_read(round_, item, user)
        if settings.EMAIL_NOTIFICATIONS:
            transaction.on_commit(lambda: _notify(comment, mentioned))
    return comment


def _notify(comment: Comment, mentioned: list[User]) -> None:
    """E-mail (where e-mail is configured) the people a comment mentions and those it answers: the
    thread's earlier authors. Only those who may read the thread now (never an annotator whose assignment
    of the item is still open), never the author, only those with an address; a mail server that fails
    is logged and the comment stands."""
    earlier = Comment.objects.filter(
        round=comment.round, item=comment.item, created_at__lt=comment.created_at
    )
    answered = User.objects.filter(pk__in=earlier.values("author"))
    allowed = _readers(comment.round, comment.item)
    people = {
        u.pk: u for u in [*mentioned, *answered] if u.pk in allowed and u.pk != comment.author_id and u.email
    }
    if not people:
        return
    link = settings.SITE_URL + reverse(
        "annotation:thread", args=[comment.round.study.slug, comment.round.number, comment.item_id]
    )
    title = " ".join((comment.item.title or comment.item.url).split())  # no line break in a subject
    messages = []
    for user in people.values():
        what = "mentioned you" if user in mentioned else "replied"
        subject = f"[Taxonomist] {comment.author.username} {what}: {title}"[:200]
        body = (
            f"{comment.author.username} wrote in the discussion of “{title}” ({comment.round}):\n\n"
            f"{comment.body}\n\nReply: {link}\n"
        )
        messages.append((subject, body, settings.DEFAULT_FROM_EMAIL, [user.email]))
    try:
        send_mass_mail(messages)
    except Exception:  # the comment is saved: a mail that cannot go is logged, never the request's failure
        logger.exception("Could not e-mail the notifications of comment %s", comment.pk)


def _own(comment: Comment, user: User) -> Comment:
    locked = Comment.objects.select_for_update().select_related("round__study", "item").get(pk=comment.pk)
    if locked.author_id != user.pk:
        raise NotInThread("No such comment.")
    check_thread(locked.round, locked.item, user)
    if locked.deleted_at is not None:
        raise ThreadClosed("This comment was deleted.")
    return locked


def edit_comment(comment: Comment, user: User, body: str) -> Comment:
    """The author changes their comment; the previous text goes to its history."""
    with transaction.atomic():
        locked = _own(comment, user)
        text = _clean(body)
        if text == locked.body:
            return locked
        CommentEdit.objects.create(comment=locked, body=locked.body)
        locked.body, locked.body_html, locked.edited_at = text, render_markdown(text), timezone.now()
        locked.save(update_fields=["body", "body_html", "edited_at"])
        locked.mentions.set(_mentioned(locked.round, locked.item, text))
    return locked


def delete_comment(comment: Comment, user: User) -> Comment:
    """The author deletes their comment: its text is blanked (kept in its history), the row stays."""
    with transaction.atomic():
        locked = _own(comment, user)
        CommentEdit.objects.create(comment=locked, body=locked.body, deleted=True)
        locked.body, locked.body_html, locked.deleted_at = "", "", timezone.now()
        locked.save(update_fields=["body", "body_html", "deleted_at"])
        locked.mentions.clear()
    return locked


def mark_read(round_: Round, item: Item, user: User) -> None:
    ThreadRead.objects.update_or_create(
        round=round_, item=item, user=user, defaults={"read_at": timezone.now()}
    )
