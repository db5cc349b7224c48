"""An item's discussion thread in a round (polled by htmx), comment edits and deletes, and the inbox."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from apps.accounts.models import User
from apps.accounts.permissions import access_study
from apps.core.context import study_context
from apps.core.htmx import is_htmx, render_page
from apps.core.http import HtmxHttpRequest
from apps.corpus.models import Item
from apps.taxonomy.models import Category, CategoryStatus

from ..models import Comment, DisagreementCause, Round
from ..services import causes
from ..services import threads as service
from ..services.common import AnnotationError
from ..threads import inbox as inbox_rows
from ..threads import thread_comments
from .common import request_user


def _thread(request: HtmxHttpRequest, slug: str, number: int, item_id: int) -> tuple[Round, Item]:
    study, _ = access_study(request.user, slug)
    round_ = get_object_or_404(Round.objects.filter(study=study).select_related("study"), number=number)
    item = get_object_or_404(Item.objects.filter(study=study), pk=item_id)
    try:
        service.check_thread(round_, item, request_user(request))
    except service.NotInThread as exc:
        raise Http404("No such thread.") from exc
    except service.ThreadClosed as exc:
        raise PermissionDeniedWithReason(str(exc)) from exc
    return round_, item


class PermissionDeniedWithReason(Exception):
    pass


@login_required
@require_http_methods(["GET", "POST"])
def thread(request: HtmxHttpRequest, slug: str, number: int, item_id: int) -> HttpResponse:
    """The thread (page, or its comments for htmx polling); POST adds a comment. Reading marks it read."""
    try:
        round_, item = _thread(request, slug, number, item_id)
    except PermissionDeniedWithReason as exc:
        return HttpResponse(str(exc), status=403, content_type="text/plain; charset=utf-8")
    user = request_user(request)
    error = ""
    if request.method == "POST":
        try:
            service.add_comment(round_, item, user, request.POST.get("body", ""))
        except AnnotationError as exc:
            error = str(exc)
        if not error and not is_htmx(request):
            return redirect("annotation:thread", slug=slug, number=number, item_id=item_id)
    service.mark_read(round_, item, user)
    study, role = round_.study, access_study(request.user, slug)[1]
    ctx = study_context(
        study, role, "queue", round=round_, item=item, comments=list(thread_comments(round_, item)),
        error=error, participants=service.participants(round_, item), **_cause_context(round_, item, user),
    )  # fmt: skip
    return render_page(
        request,
        "annotation/thread.html",
        ctx,
        partial="#thread",
        target="thread",
        status=422 if error else 200,
    )


def _cause_context(round_: Round, item: Item, user: User) -> dict[str, object]:
    """The item's cause of disagreement in the round, the study's causes, and the categories a codebook gap
    may link to: for a lead every active or proposed one, for an annotator the active ones and their own
    proposals (never another annotator's)."""
    categories = (
        Category.objects.all() if service.is_lead(round_.study, user) else Category.objects.pickable_by(user)
    )
    return {
        "cause": DisagreementCause.objects.filter(round=round_, item=item)
        .select_related("cause", "category", "set_by")
        .first(),
        "causes": causes.study_causes(round_.study),
        "gap_categories": categories.filter(
            dimension__codebook__study=round_.study,
            status__in=[CategoryStatus.PROPOSED, CategoryStatus.ACTIVE],
        )
        .select_related("dimension")
        .order_by("dimension__position", "name")[:1000],
    }


@login_required
@require_POST
def cause(request: HtmxHttpRequest, slug: str, number: int, item_id: int) -> HttpResponse:
    """Say why the item was disagreed on (`cause`, `note`, for a codebook gap `category`), or `clear` it."""
    try:
        round_, item = _thread(request, slug, number, item_id)
    except PermissionDeniedWithReason as exc:
        return HttpResponse(str(exc), status=403, content_type="text/plain; charset=utf-8")
    user = request_user(request)
    category = request.POST.get("category", "")
    try:
        if category and not (category.isascii() and category.isdigit()):
            raise AnnotationError(f"No category {category!r}: pick one from the list.")
        if request.POST.get("clear"):
            causes.clear_cause(round_, item, user)
        else:
            causes.set_cause(
                round_,
                item,
                user,
                request.POST.get("cause", ""),
                note=request.POST.get("note", ""),
                category_id=int(category) if category else None,
            )
    except AnnotationError as exc:
        messages.error(request, str(exc))
    return redirect(reverse("annotation:thread", args=[slug, number, item_id]) + "#cause")


@login_required
@require_POST
def comment(request: HtmxHttpRequest, slug: str, pk: int) -> HttpResponse:
    """Edit (`body`) or delete (`delete`) my own comment; its history keeps the previous text."""
    study, _ = access_study(request.user, slug)
    found = get_object_or_404(Comment.objects.filter(round__study=study).select_related("round"), pk=pk)
    user = request_user(request)
    try:
        if request.POST.get("delete"):
            service.delete_comment(found, user)
        else:
            service.edit_comment(found, user, request.POST.get("body", ""))
    except service.NotInThread as exc:
        raise Http404("No such comment.") from exc
    except AnnotationError as exc:
        messages.error(request, str(exc))
    return redirect("annotation:thread", slug=slug, number=found.round.number, item_id=found.item_id)


@login_required
@require_GET
def inbox(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    """Threads awaiting my reply ("3 items await your reply"), with their unread counts."""
    study, role = access_study(request.user, slug)
    rows = inbox_rows(study, request_user(request))
    ctx = study_context(study, role, "queue", rows=rows)
    return render_page(request, "annotation/inbox.html", ctx, partial="#inbox-badge", target="inbox-badge")
