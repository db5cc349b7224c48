"""The lead's editor: the category panel and its actions, adding categories, and dimensions."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_http_methods, require_POST

from apps.accounts.models import Study, User
from apps.accounts.permissions import access_study
from apps.core.context import study_context
from apps.core.htmx import is_htmx, render_page
from apps.core.http import HtmxHttpRequest

from .. import services
from ..forms import (
    AddCategoryForm,
    AddDimensionForm,
    CategoryFieldsForm,
    DimensionForm,
    MergeForm,
    MoveForm,
    ReorderForm,
    category_choices,
    condition_choices,
)
from ..index import CodebookIndex
from ..models import Category, CategoryStatus, CodebookChange, Dimension
from ..services import CodebookEditError
from .common import changed, described, scoped_category, study_categories, user_of


def _panel_context(
    study: Study, role: str, category: Category | None, *, forms_: dict[str, forms.Form] | None = None
) -> dict[str, Any]:
    ctx = study_context(study, role, "codebook", category=category, message="")
    if category is None:
        return ctx
    index = CodebookIndex.for_study(study)
    info = index.category(category.pk)
    dimension = index.dimension(info.dimension_id)
    tree = index.tree(dimension.key, active_only=False)
    below = {category.pk, *tree.descendants(category.pk)}
    labels, gold = services.label_count(category)
    given = forms_ or {}
    fields_initial = {
        "name": info.name,
        "definition": info.definition,
        "include": info.include,
        "exclude": info.exclude,
        "examples": "\n".join(info.examples),
    }
    parents = category_choices(index, dimension.key, exclude=below)
    ctx.update(
        info=info,
        dimension=dimension,
        path=index.path(info.id),
        labels=labels,
        gold=gold,
        edit_form=given.get("edit") or CategoryFieldsForm(initial=fields_initial, prefix="edit"),
        move_form=given.get("move")
        or MoveForm(parents=parents, initial={"parent": info.parent_id or ""}, prefix="move"),
        merge_form=given.get("merge")
        or MergeForm(targets=category_choices(index, dimension.key, exclude=below)),
        action_error=given["action"].non_field_errors() if "action" in given else [],
        merged_into=index.path(info.merged_into_id) if info.merged_into_id else "",
        proposed_by=category.proposed_by if info.is_proposed else None,
        changes=described(
            CodebookChange.objects.filter(category=category)
            .select_related("actor", "dimension", "category")
            .order_by("-id")[:10],
            counts=True,
        ),
        split_parts=services.split_parts(category) if info.status == CategoryStatus.RETIRED else [],
    )
    return ctx


def _panel(
    request: HtmxHttpRequest,
    study: Study,
    role: str,
    category: Category | None,
    *,
    forms_: dict[str, forms.Form] | None = None,
    status: int = 200,
    message: str = "",
) -> HttpResponse:
    ctx = _panel_context(study, role, category, forms_=forms_)
    ctx["message"] = message
    return render_page(request, "taxonomy/category.html", ctx, partial="#panel", status=status)


def done(
    request: HtmxHttpRequest, study: Study, role: str, category: Category | None, message: str
) -> HttpResponse:
    """After a successful change: the refreshed panel (htmx) or a redirect with a message."""
    if category is not None:
        category = (
            study_categories(study).select_related("dimension", "proposed_by").filter(pk=category.pk).first()
        )
    if not is_htmx(request):
        messages.success(request, message)
        if category is None:
            return redirect("taxonomy:codebook", study.slug)
        return redirect("taxonomy:category", study.slug, category.pk)
    return changed(_panel(request, study, role, category, message=message))


def lead_category(request: HtmxHttpRequest, slug: str, pk: int) -> tuple[Study, str, Category]:
    study, role = access_study(request.user, slug, lead=True)
    category = get_object_or_404(study_categories(study).select_related("dimension", "proposed_by"), pk=pk)
    return study, role, category


def _act(
    request: HtmxHttpRequest,
    study: Study,
    role: str,
    category: Category,
    key: str,
    form: forms.Form,
    action: Callable[[dict[str, Any]], tuple[Category | None, str]],
) -> HttpResponse:
    """Validate the form, run the service; on a refusal re-render the panel with the message (422)."""
    if form.is_valid():
        try:
            shown, message = action(form.cleaned_data)
        except CodebookEditError as exc:
            form.add_error(None, str(exc))
        else:
            return done(request, study, role, shown, message)
    return _panel(request, study, role, category, forms_={key: form}, status=422)


@login_required
@require_http_methods(["GET", "POST"])
def category_detail(request: HtmxHttpRequest, slug: str, pk: int) -> HttpResponse:
    """GET: the category's panel (htmx) or page. POST: rename and edit its definition, criteria, examples."""
    study, role, category = lead_category(request, slug, pk)
    if request.method == "GET":
        return _panel(request, study, role, category)
    form = CategoryFieldsForm(request.POST, prefix="edit")

    def act(data: dict[str, Any]) -> tuple[Category, str]:
        before = category.name
        services.edit_category(
            category,
            name=data["name"],
            definition=data["definition"],
            include=data["include"],
            exclude=data["exclude"],
            examples=data["examples"],
            actor=user_of(request),
        )
        renamed = f" (renamed from “{before}”)" if before != data["name"].strip() else ""
        return category, f"Saved “{data['name'].strip()}”{renamed}."

    return _act(request, study, role, category, "edit", form, act)


@login_required
@require_POST
def category_move(request: HtmxHttpRequest, slug: str, pk: int) -> HttpResponse:
    study, role, category = lead_category(request, slug, pk)
    index = CodebookIndex.for_study(study)
    form = MoveForm(request.POST, parents=category_choices(index, category.dimension.key), prefix="move")

    def act(data: dict[str, Any]) -> tuple[Category, str]:
        parent = scoped_category(study, data["parent"])
        services.move_category(category, parent, actor=user_of(request))
        return category, f"Moved “{category.name}” under {parent.name if parent else 'the top level'}."

    return _act(request, study, role, category, "move", form, act)


@login_required
@require_POST
def category_reorder(request: HtmxHttpRequest, slug: str, pk: int) -> HttpResponse:
    study, role, category = lead_category(request, slug, pk)
    form = ReorderForm(request.POST)

    def act(data: dict[str, Any]) -> tuple[Category, str]:
        services.reorder_category(category, data["direction"], actor=user_of(request))
        return category, f"Moved “{category.name}” {data['direction']}."

    return _act(request, study, role, category, "action", form, act)


@login_required
@require_POST
def category_merge(request: HtmxHttpRequest, slug: str, pk: int) -> HttpResponse:
    study, role, category = lead_category(request, slug, pk)
    index = CodebookIndex.for_study(study)
    form = MergeForm(request.POST, targets=category_choices(index, category.dimension.key))

    def act(data: dict[str, Any]) -> tuple[Category | None, str]:
        target = scoped_category(study, data["target"])
        assert target is not None  # the field is required
        moved = services.merge_category(category, target, actor=user_of(request))
        return target, (
            f"Merged “{category.name}” into “{target.name}”: {moved.labels} label(s) and "
            f"{moved.decisions} gold label(s) moved."
        )

    return _act(request, study, role, category, "merge", form, act)


def _simple_action(
    service: Callable[[Category, User], object], message: str, *, show_after: bool = True
) -> Callable[..., HttpResponse]:
    """A POST without fields (retire, restore, delete, accept) on one category."""

    @login_required
    @require_POST
    def view(request: HtmxHttpRequest, slug: str, pk: int) -> HttpResponse:
        study, role, category = lead_category(request, slug, pk)

        def act(_: dict[str, Any]) -> tuple[Category | None, str]:
            service(category, user_of(request))
            return (category if show_after else None), message.format(name=category.name)

        return _act(request, study, role, category, "action", forms.Form(request.POST), act)

    view.__doc__ = f"POST: {message}"
    return view


category_retire = _simple_action(
    lambda c, user: services.retire_category(c, actor=user),
    "Retired “{name}” (and its subcategories): hidden from pickers, kept in history and exports.",
)


category_restore = _simple_action(
    lambda c, user: services.restore_category(c, actor=user), "Restored “{name}”."
)


category_delete = _simple_action(
    lambda c, user: services.delete_category(c, actor=user), "Deleted “{name}”.", show_after=False
)


@login_required
@require_http_methods(["GET", "POST"])
def category_add(request: HtmxHttpRequest, slug: str, pk: int) -> HttpResponse:
    """Add a category to dimension `pk` (``?parent=ID`` preselects its parent)."""
    study, role = access_study(request.user, slug, lead=True)
    dimension = get_object_or_404(
        Dimension.objects.filter(codebook__study=study, retired_at__isnull=True), pk=pk
    )
    index = CodebookIndex.for_study(study)
    parents = category_choices(index, dimension.key)
    if request.method == "POST":
        form = AddCategoryForm(request.POST, parents=parents)
        if form.is_valid():
            data = form.cleaned_data
            try:
                category = services.add_category(
                    dimension,
                    key=data["key"],
                    name=data["name"],
                    parent=scoped_category(study, data["parent"]),
                    definition=data["definition"],
                    include=data["include"],
                    exclude=data["exclude"],
                    examples=data["examples"],
                    actor=user_of(request),
                )
            except CodebookEditError as exc:
                form.add_error(None, str(exc))
            else:
                return done(request, study, role, category, f"Added “{category.name}”.")
        status = 422
    else:
        form = AddCategoryForm(parents=parents, initial={"parent": request.GET.get("parent", "")})
        status = 200
    ctx = study_context(study, role, "codebook", dimension=dimension, form=form)
    return render_page(request, "taxonomy/category_add.html", ctx, partial="#add-form", status=status)


def _lead_dimension(request: HtmxHttpRequest, slug: str, pk: int) -> tuple[Study, str, Dimension]:
    study, role = access_study(request.user, slug, lead=True)
    dimension = get_object_or_404(
        Dimension.objects.filter(codebook__study=study).select_related("applies_when_category"), pk=pk
    )
    return study, role, dimension


def _dimension_panel(
    request: HtmxHttpRequest,
    study: Study,
    role: str,
    dimension: Dimension,
    form: forms.Form | None = None,
    *,
    status: int = 200,
    message: str = "",
    error: str = "",
) -> HttpResponse:
    index = CodebookIndex.for_study(study)
    initial = {
        "name": dimension.name,
        "description": dimension.description,
        "multiple": dimension.multiple,
        "applies_when": dimension.applies_when_category_id or "",
    }
    ctx = study_context(
        study,
        role,
        "codebook",
        dimension=dimension,
        form=form
        or DimensionForm(
            initial=initial, conditions=condition_choices(index, exclude_dimension=dimension.pk)
        ),
        message=message,
        error=error,
    )
    return render_page(request, "taxonomy/dimension.html", ctx, partial="#dimension-panel", status=status)


@login_required
@require_http_methods(["GET", "POST"])
def dimension_add(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    study, role = access_study(request.user, slug, lead=True)
    index = CodebookIndex.for_study(study)
    form = AddDimensionForm(request.POST or None, conditions=condition_choices(index))
    status = 200
    if request.method == "POST":
        status = 422
        if form.is_valid():
            data = form.cleaned_data
            try:
                book = services.get_or_create_codebook(study)
                dimension = services.add_dimension(
                    book,
                    key=data["key"],
                    name=data["name"],
                    multiple=data["multiple"],
                    applies_when=scoped_category(study, data["applies_when"]),
                    description=data["description"],
                    actor=user_of(request),
                )
            except CodebookEditError as exc:
                form.add_error(None, str(exc))
            else:
                message = f"Added the dimension {dimension.name}."
                if not is_htmx(request):
                    messages.success(request, message)
                    return redirect("taxonomy:codebook", study.slug)
                return changed(_dimension_panel(request, study, role, dimension, message=message))
    ctx = study_context(study, role, "codebook", form=form)
    return render_page(
        request, "taxonomy/dimension_add.html", ctx, partial="#dimension-add-form", status=status
    )


@login_required
@require_http_methods(["GET", "POST"])
def dimension_detail(request: HtmxHttpRequest, slug: str, pk: int) -> HttpResponse:
    """GET: the dimension's panel. POST: edit its name, description, choice mode and condition."""
    study, role, dimension = _lead_dimension(request, slug, pk)
    if request.method == "GET":
        return _dimension_panel(request, study, role, dimension)
    index = CodebookIndex.for_study(study)
    form = DimensionForm(request.POST, conditions=condition_choices(index, exclude_dimension=dimension.pk))
    if form.is_valid():
        data = form.cleaned_data
        try:
            services.edit_dimension(
                dimension,
                name=data["name"],
                description=data["description"],
                multiple=data["multiple"],
                applies_when=scoped_category(study, data["applies_when"]),
                actor=user_of(request),
            )
        except CodebookEditError as exc:
            form.add_error(None, str(exc))
        else:
            return _dimension_done(request, study, role, dimension, f"Saved {data['name']}.")
    return _dimension_panel(request, study, role, dimension, form, status=422)


def _dimension_done(
    request: HtmxHttpRequest, study: Study, role: str, dimension: Dimension, message: str
) -> HttpResponse:
    if not is_htmx(request):
        messages.success(request, message)
        return redirect("taxonomy:dimension", study.slug, dimension.pk)
    dimension.refresh_from_db()
    return changed(_dimension_panel(request, study, role, dimension, message=message))


DIMENSION_ACTIONS: dict[str, tuple[Callable[[Dimension, User], object], str]] = {
    "retire": (lambda d, u: services.retire_dimension(d, actor=u), "Retired {name}."),
    "restore": (lambda d, u: services.restore_dimension(d, actor=u), "Restored {name}."),
    "up": (lambda d, u: services.reorder_dimension(d, "up", actor=u), "Moved {name} up."),
    "down": (lambda d, u: services.reorder_dimension(d, "down", actor=u), "Moved {name} down."),
}


@login_required
@require_POST
def dimension_action(request: HtmxHttpRequest, slug: str, pk: int, action: str) -> HttpResponse:
    study, role, dimension = _lead_dimension(request, slug, pk)
    if action not in DIMENSION_ACTIONS:
        raise Http404("Unknown action.")
    service, message = DIMENSION_ACTIONS[action]
    try:
        service(dimension, user_of(request))
    except CodebookEditError as exc:
        return _dimension_panel(request, study, role, dimension, status=422, error=str(exc))
    return _dimension_done(request, study, role, dimension, message.format(name=dimension.name))
