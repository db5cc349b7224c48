"""The items grid and screening at speed: the pages, the bulk actions, saved views.

The grid's whole state is in its URL (`grid.GridForm`): a filter or sort change is an htmx GET that swaps
`#item-results` and pushes the URL. The bulk bar is outside the swapped region (its choices survive a
swap); it names the rows by `ids` (checkboxes, `form="bulk-form"`) or, with `scope=all`, by the filters in
its `query` field. Labelling columns (round, progress, decision) are shown to leads only.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from contextlib import suppress
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db import IntegrityError, transaction
from django.http import HttpResponse, QueryDict, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from apps.accounts.models import Study, User
from apps.accounts.permissions import LEAD_ROLES, access_study
from apps.core.context import study_context
from apps.core.htmx import is_htmx, render_page
from apps.core.http import HtmxHttpRequest

from . import grid
from .models import Item, ItemQuerySet, Relevance, SavedView
from .services import ensure_rendered
from .services.grid_writes import ScreeningError, screen
from .titles import place

SCREEN_REASON = "Excluded while screening"


def _user(request: HtmxHttpRequest) -> User | None:
    return request.user if isinstance(request.user, User) else None


def grid_state(params: QueryDict, *, lead: bool) -> tuple[grid.GridForm, dict[str, Any], grid.Sort]:
    """The form, its valid filters and the sort that a query string asks for."""
    form = grid.GridForm(params, lead=lead)
    return form, form.filters(), grid.parse_sort(params.get("sort", ""), lead=lead)


def selected_items(study: Study, params: QueryDict, *, lead: bool) -> ItemQuerySet:
    """The rows a bulk action applies to: the checked `ids`, or with `scope=all` every item that the
    filters in `query` (the grid's query string) match. Only items of `study`, whatever was sent."""
    if params.get("scope") == "all":
        _form, filters, _sort = grid_state(QueryDict(params.get("query", "")), lead=lead)
        return grid.filtered(study, filters)
    ids = [int(v) for v in params.getlist("ids") if v.isdigit()]
    return Item.objects.in_study(study).filter(pk__in=ids)


@login_required
@require_GET
def item_list(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    """The items grid: filtered, searched, sorted, one keyset page at a time (see `grid`)."""
    study, role = access_study(request.user, slug)
    lead = role in LEAD_ROLES
    form, filters, sort = grid_state(request.GET, lead=lead)
    items = grid.filtered(study, filters)
    cursor = grid.decode_cursor(request.GET.get("after", ""), sort)
    found = grid.page(study, grid.grid_fields(items), sort, cursor)
    total = grid.count_upto(items)
    query = request.GET.copy()
    query.pop("after", None)
    ctx = study_context(
        study,
        role,
        "items",
        form=form,
        rows=[(item, place(item.url)) for item in found.items],
        sort=sort,
        total=min(total, grid.COUNT_CAP),
        more=total > grid.COUNT_CAP,
        filtered=bool(filters),
        next_cursor=found.next_cursor,
        paged=cursor is not None,
        query=query.urlencode(),
        columns=[(key, label, _next_sort(sort, key)) for key, label in _columns(lead)],
        saved=list(SavedView.objects.of(request.user, study)),
        relevance=Relevance,
    )
    return render_page(request, "corpus/item_list.html", ctx, partial="#item-results", target="item-results")


def _next_sort(sort: grid.Sort, key: str) -> str:
    """A column header's link: ascending first, then descending."""
    return f"-{key}" if sort.column == key and not sort.descending else key


def _columns(lead: bool) -> list[tuple[str, str]]:
    columns = [
        ("title", "Title"),
        ("source", "Source"),
        ("place", "Repository or site"),
        ("created", "Created"),
    ]
    if lead:
        columns += [("round", "Round"), ("progress", "Labelling"), ("decision", "Decision")]
    return [*columns, ("screening", "Screening")]


@login_required
@require_POST
def items_bulk(request: HtmxHttpRequest, slug: str) -> HttpResponse | StreamingHttpResponse:
    """Screen in or out, back to unscreened, or export the selection (or the whole filtered result)."""
    study, _role = access_study(request.user, slug, lead=True)
    items = selected_items(study, request.POST, lead=True)
    action = request.POST.get("action", "")
    back = reverse("corpus:item-list", args=[study.slug]) + _query_suffix(request.POST.get("query", ""))
    if action == "export":
        return _export(study, items)
    decisions = {
        "include": Relevance.RELEVANT,
        "exclude": Relevance.IRRELEVANT,
        "unscreen": Relevance.UNSCREENED,
    }
    if action not in decisions:
        messages.error(request, f"Unknown bulk action {action!r}.")
        return redirect(back)
    try:
        with transaction.atomic():
            n = screen(items, decisions[action], reason=request.POST.get("reason", ""), actor=_user(request))
    except ScreeningError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(
            request, f"{n} item{'s' if n != 1 else ''} marked {Relevance(decisions[action]).label.lower()}."
        )
    return redirect(back)


def _query_suffix(query: str) -> str:
    return f"?{query}" if query else ""


def _export(study: Study, items: ItemQuerySet) -> StreamingHttpResponse:
    header = [
        "id",
        "url",
        "title",
        "source",
        "place",
        "created_at",
        "round",
        "progress",
        "decision",
        "screening",
    ]

    def rows() -> Iterator[list[Any]]:
        yield header
        for item in grid.grid_fields(items).order_by("id").iterator(chunk_size=2000):
            yield [
                item.pk, item.url, item.display_title, item.source, place(item.url),
                item.created_at.isoformat() if item.created_at else "", item.round_number or "",
                item.progress, item.decision, item.relevance,
            ]  # fmt: skip

    class Echo:
        def write(self, value: str) -> str:
            return value

    writer = csv.writer(Echo())
    response = StreamingHttpResponse((writer.writerow(row) for row in rows()), content_type="text/csv")
    response["Content-Disposition"] = f'attachment; filename="{study.slug}-items.csv"'
    return response


@login_required
@require_POST
def saved_view_save(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    """Save the grid's current filters and sort under a name (the user's own; the same name replaces)."""
    study, _role = access_study(request.user, slug)
    user = _user(request)
    assert user is not None  # login_required
    name = request.POST.get("name", "").strip()[:100]
    query = QueryDict(request.POST.get("query", "")).copy()
    query.pop("after", None)
    if not name:
        messages.error(request, "Give the view a name.")
    else:
        with suppress(IntegrityError):  # a twin request saved it first
            SavedView.objects.update_or_create(
                user=user, study=study, name=name, defaults={"query": query.urlencode()[:2000]}
            )
        messages.success(request, f"View “{name}” saved.")
    return redirect(reverse("corpus:item-list", args=[study.slug]) + _query_suffix(query.urlencode()))


@login_required
@require_POST
def saved_view_delete(request: HtmxHttpRequest, slug: str, pk: int) -> HttpResponse:
    study, _role = access_study(request.user, slug)
    view = get_object_or_404(SavedView.objects.of(request.user, study), pk=pk)
    view.delete()
    messages.success(request, f"View “{view.name}” deleted.")
    return redirect("corpus:item-list", slug=study.slug)


# --- screening at speed ---------------------------------------------------------------------------------


@login_required
@require_GET
def screen_page(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    """One item at a time with its body, for keyboard screening: the item `at`, or the first unscreened
    item of the grid's filters (in id order)."""
    study, role = access_study(request.user, slug, lead=True)
    ctx = _screen_context(study, role, request.GET)
    return render_page(request, "corpus/screen.html", ctx, partial="#screen-card", target="screen-card")


def _screen_context(study: Study, role: str, params: QueryDict, *, error: str = "") -> dict[str, Any]:
    _form, filters, _sort = grid_state(params, lead=True)
    filters.pop("screening", None)  # the page walks unscreened items; `at` may show a screened one
    items = grid.filtered(study, filters)
    at = params.get("at", "")
    item = None
    if at.isdigit():
        item = items.filter(pk=int(at)).first()
    if item is None:
        after = int(params.get("after", "0")) if params.get("after", "").isdigit() else 0
        item = items.filter(relevance=Relevance.UNSCREENED, pk__gt=after).order_by("id").first()
    if item is not None:
        ensure_rendered(item)
    query = params.copy()
    for key in ("at", "after", "sort"):
        query.pop(key, None)
    left = grid.count_upto(items.filter(relevance=Relevance.UNSCREENED))
    ids = items.values_list("id", flat=True)
    return study_context(
        study, role, "items", item=item, query=query.urlencode(), left=min(left, grid.COUNT_CAP),
        left_more=left > grid.COUNT_CAP, error=error, reason=SCREEN_REASON,
        next_id=ids.filter(pk__gt=item.pk).order_by("id").first() if item else None,
        prev_id=ids.filter(pk__lt=item.pk).order_by("-id").first() if item else None,
    )  # fmt: skip


@login_required
@require_POST
def screen_item(request: HtmxHttpRequest, slug: str, pk: int) -> HttpResponse:
    """Include or exclude one item, then show the next unscreened one (htmx swaps the card)."""
    study, role = access_study(request.user, slug, lead=True)
    item = get_object_or_404(Item.objects.in_study(study), pk=pk)
    decision = {"include": Relevance.RELEVANT, "exclude": Relevance.IRRELEVANT}.get(
        request.POST.get("decision", "")
    )
    params = QueryDict(request.POST.get("query", ""), mutable=True)
    error = ""
    try:
        if decision is None:
            raise ScreeningError("Choose include or exclude.")
        reason = request.POST.get("reason", "") or SCREEN_REASON
        with transaction.atomic():
            screen(Item.objects.filter(pk=item.pk), decision, reason=reason, actor=_user(request))
        params["after"] = str(item.pk)
    except ScreeningError as exc:
        error, params["at"] = str(exc), str(item.pk)
    ctx = _screen_context(study, role, params, error=error)
    if is_htmx(request):
        return render(request, "corpus/screen.html#screen-card", ctx)
    return redirect(reverse("corpus:screen", args=[study.slug]) + "?" + urlencode(params))
