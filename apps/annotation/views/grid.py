"""The items grid's "Add to round" bulk action (the grid is corpus's; rounds are annotation's)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from apps.accounts.permissions import access_study
from apps.core.http import HtmxHttpRequest
from apps.corpus.grid_views import selected_items

from .. import services
from ..models import SampleMethod
from .common import request_user

MAX_ADD = 100_000


@login_required
@require_POST
def add_from_grid(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    """Put the grid's checked items, or every item its filters match, into round `round` (created if
    missing); items screened irrelevant or already in it are skipped and counted."""
    study, _role = access_study(request.user, slug, lead=True)
    query = request.POST.get("query", "")
    back = reverse("corpus:item-list", args=[study.slug]) + (f"?{query}" if query else "")
    number = request.POST.get("round", "")
    if not number.isdigit():
        messages.error(request, f"Round: {number!r} is not a round number.")
        return redirect(back)
    items = selected_items(study, request.POST, lead=True)
    ids = list(items.order_by("id").values_list("pk", flat=True)[:MAX_ADD])
    try:
        result = services.add_items_to_round(
            study, int(number), ids, method=SampleMethod.MANUAL, actor=request_user(request),
            description={"from": "items grid", "query": query[:500]},
        )  # fmt: skip
    except services.RoundError as exc:
        messages.error(request, str(exc))
        return redirect(back)
    skipped = [f"{result.already_in_round} already in it"] if result.already_in_round else []
    if result.irrelevant:
        skipped.append(f"{result.irrelevant} screened irrelevant")
    note = f" (skipped: {', '.join(skipped)})" if skipped else ""
    messages.success(request, f"Added {result.added} items to {result.round}{note}.")
    return redirect(back)
