"""Split a category, then reassign its labels in bulk."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods
from django_htmx.http import HttpResponseClientRedirect

from apps.accounts.models import Study
from apps.core.context import study_context
from apps.core.htmx import is_htmx, render_page
from apps.core.http import HtmxHttpRequest

from .. import services
from ..forms import ReassignFilterForm, ReassignForm, SplitForm, category_choices
from ..index import CodebookIndex
from ..models import Category, CategoryStatus
from ..services import CodebookEditError
from .common import changed, scoped_category, user_of
from .editor import done, lead_category


@login_required
@require_http_methods(["GET", "POST"])
def category_split(request: HtmxHttpRequest, slug: str, pk: int) -> HttpResponse:
    """Split an active category into new ones; then its labels wait on the reassign page."""
    study, role, category = lead_category(request, slug, pk)
    form = SplitForm(request.POST or None)
    status = 200
    if request.method == "POST":
        status = 422
        if form.is_valid():
            parts = [services.NewCategory(key, name, definition) for key, name, definition in form.parts()]
            try:
                created = services.split_category(category, parts, actor=user_of(request))
            except CodebookEditError as exc:
                form.add_error(None, str(exc))
            else:
                names = " and ".join(f"“{c.name}”" for c in created)
                labels, gold = services.label_count(category)
                if labels or gold:
                    messages.success(
                        request,
                        f"Split “{category.name}” into {names}. Now reassign its {labels + gold} label(s).",
                    )
                    url = reverse("taxonomy:category-reassign", args=[study.slug, category.pk])
                    if is_htmx(request):
                        return HttpResponseClientRedirect(url)
                    return redirect(url)
                return done(request, study, role, created[0], f"Split “{category.name}” into {names}.")
    labels, gold = services.label_count(category)
    ctx = study_context(study, role, "codebook", category=category, form=form, labels=labels, gold=gold)
    return render_page(request, "taxonomy/split.html", ctx, partial="#split-form", status=status)


REASSIGN_PAGE_SIZE = 100


@login_required
@require_http_methods(["GET", "POST"])
def category_reassign(request: HtmxHttpRequest, slug: str, pk: int) -> HttpResponse:
    """A category's labels (item, annotator, finding), filterable; the lead moves the chosen ones, or all
    that match the filter, to another category (after a split: one of its parts)."""
    study, role, category = lead_category(request, slug, pk)
    index = CodebookIndex.for_study(study)
    params = request.POST if request.method == "POST" else request.GET
    filters = ReassignFilterForm(params, annotators=services.annotators_of(category))
    annotator = q = ""
    kind = "all"
    if filters.is_valid():
        annotator, q = filters.cleaned_data["annotator"], filters.cleaned_data["q"].strip()
        kind = filters.cleaned_data["kind"] or "all"
    labels = services.labels_on(category, annotator=annotator, q=q) if kind in ("all", "labels") else None
    gold = services.gold_on(category, q=q) if kind in ("all", "gold") and not annotator else None
    targets = _reassign_targets(index, category)
    form = ReassignForm(request.POST or None, targets=targets)
    status = 200
    if request.method == "POST":
        status = 422
        if form.is_valid():
            data = form.cleaned_data
            label_ids, decision_ids = data["label"], data["decision"]
            if data["all_matching"]:
                label_ids = [r["id"] for r in labels] if labels is not None else []
                decision_ids = [r["id"] for r in gold] if gold is not None else []
            target = scoped_category(study, data["target"])
            assert target is not None  # the field is required
            try:
                moved = services.reassign_labels(
                    category,
                    target,
                    label_ids=label_ids,
                    decision_value_ids=decision_ids,
                    actor=user_of(request),
                )
            except CodebookEditError as exc:
                form.add_error(None, str(exc))
            else:
                message = _moved_message(moved, target)
                if not is_htmx(request):
                    messages.success(request, message)
                    return redirect(f"{request.path}?{filters_query(filters)}")
                form = ReassignForm(targets=targets)
                status = 200
                ctx = _reassign_context(
                    study, role, category, index, filters, form, labels, gold, request, message
                )
                return changed(render(request, "taxonomy/reassign.html#reassign-table", ctx))
    ctx = _reassign_context(study, role, category, index, filters, form, labels, gold, request, "")
    return render_page(request, "taxonomy/reassign.html", ctx, partial="#reassign-table", status=status)


def _reassign_targets(index: CodebookIndex, category: Category) -> list[tuple[int, str]]:
    """Where the category's labels may go: its split parts (active ones) first, then every other category
    of its dimension."""
    parts = services.split_parts(category)
    part_ids = {p.pk for p in parts}
    targets = [(p.pk, index.path(p.pk)) for p in parts if p.status == CategoryStatus.ACTIVE]
    targets += [
        choice for choice in category_choices(index, category.dimension.key, indent=False, exclude=part_ids)
    ]
    return [t for t in targets if t[0] != category.pk]


def _moved_message(moved: services.MovedLabels, target: Category) -> str:
    message = f"Moved {moved.labels} label(s) and {moved.decisions} gold label(s) to “{target.name}”."
    if moved.dropped_labels or moved.dropped_decisions:
        n = len(moved.dropped_labels) + len(moved.dropped_decisions)
        message += f" {n} duplicate(s) removed: their finding already had “{target.name}”."
    return message


def filters_query(filters: ReassignFilterForm) -> str:
    from urllib.parse import urlencode

    data = filters.cleaned_data if filters.is_valid() else {}
    return urlencode({k: v for k, v in data.items() if v})


def _reassign_context(
    study: Study,
    role: str,
    category: Category,
    index: CodebookIndex,
    filters: ReassignFilterForm,
    form: ReassignForm,
    labels: Any,
    gold: Any,
    request: HtmxHttpRequest,
    message: str,
) -> dict[str, Any]:
    page_number = request.GET.get("page") or 1
    label_page = Paginator(labels if labels is not None else [], REASSIGN_PAGE_SIZE).get_page(page_number)
    gold_rows = list(gold[:REASSIGN_PAGE_SIZE]) if gold is not None else []
    return study_context(
        study,
        role,
        "codebook",
        category=category,
        path=index.path(category.pk),
        filters=filters,
        form=form,
        label_page=label_page,
        gold_rows=gold_rows,
        gold_total=gold.count() if gold is not None else 0,
        query=filters_query(filters),
        message=message,
        parts=services.split_parts(category),
    )
