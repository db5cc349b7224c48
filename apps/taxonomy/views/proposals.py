"""Proposing codes (any member; the workbench posts here) and the lead's proposals queue."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import trigger_client_event

from apps.accounts.models import Study
from apps.accounts.permissions import access_study
from apps.core.context import study_context
from apps.core.htmx import is_htmx, render_page
from apps.core.http import HtmxHttpRequest

from .. import services
from ..forms import MergeForm, ProposeForm, RejectForm, category_choices
from ..index import CodebookIndex
from ..models import Category, CategoryStatus, Codebook, Dimension
from ..services import CodebookEditError
from ..tree import near_duplicates
from .common import changed, scoped_category, study_categories, user_of
from .editor import lead_category


@login_required
@require_http_methods(["GET", "POST"])
def propose(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    """Any member proposes a code (docs/codebook.md, "Proposing a code from the workbench").

    POST fields: ``dimension`` (key), ``name``, ``parent`` (key, optional), ``reason``, ``input_name``
    (optional). htmx: 200 with the new option (an input named `input_name`, value the category key, checked)
    or, without `input_name`, a confirmation; near-duplicate warnings; and the ``category-proposed`` event.
    422 with the errors. Without htmx: a page with the form, and a redirect to the codebook after success.
    """
    study, role = access_study(request.user, slug)
    index = CodebookIndex.for_study(study)
    form = ProposeForm(request.POST or None)
    status = 200
    if request.method == "POST":
        status = 422
        if form.is_valid():
            data = form.cleaned_data
            try:
                dimension = _active_dimension(study, data["dimension"])
                parent = _parent_by_key(dimension, data["parent"].strip())
                proposal = services.propose_category(
                    dimension, data["name"], parent, data["reason"], user_of(request)
                )
            except CodebookEditError as exc:
                form.add_error(None, str(exc))
            else:
                return _proposed(request, study, role, dimension, proposal, data["input_name"])
    ctx = study_context(study, role, "codebook", form=form, dimensions=index.dimensions, index=index)
    return render_page(request, "taxonomy/propose.html", ctx, partial="#propose-errors", status=status)


def _active_dimension(study: Study, key: str) -> Dimension:
    dimension = Dimension.objects.filter(
        codebook__study=study, key=key.strip(), retired_at__isnull=True
    ).first()
    if dimension is None:
        raise CodebookEditError(f"This codebook has no active dimension with the key {key!r}.")
    return dimension


def _parent_by_key(dimension: Dimension, key: str) -> Category | None:
    if not key:
        return None
    parent = Category.objects.filter(dimension=dimension, key=key).first()
    if parent is None:
        raise CodebookEditError(f"{dimension.name} has no category with the key {key!r}.")
    return parent


def _proposed(
    request: HtmxHttpRequest,
    study: Study,
    role: str,
    dimension: Dimension,
    proposal: services.Proposal,
    input_name: str,
) -> HttpResponse:
    category = proposal.category
    if not is_htmx(request):
        verb = "Proposed" if proposal.created else "You had already proposed"
        messages.success(request, f"{verb} “{category.name}”; you can use it now, a lead will review it.")
        for warning in proposal.warnings:
            messages.warning(request, warning)
        return redirect("taxonomy:codebook", study.slug)
    ctx = study_context(
        study,
        role,
        "codebook",
        category=category,
        dimension=dimension,
        warnings=proposal.warnings,
        created=proposal.created,
        input_name=input_name.strip(),
    )
    response = render(request, "taxonomy/propose.html#proposed-option", ctx)
    detail = {
        "id": category.pk,
        "key": category.key,
        "name": category.name,
        "dimension": dimension.key,
        "parent": category.parent.key if category.parent else None,
        "warnings": list(proposal.warnings),
        "created": proposal.created,
    }
    return trigger_client_event(response, "category-proposed", detail)


def _proposals_context(
    study: Study, role: str, message: str = "", errors: dict[int, str] | None = None
) -> dict[str, Any]:
    index = CodebookIndex.for_study(study)
    pending = list(
        study_categories(study)
        .proposals()
        .select_related("dimension", "proposed_by", "parent")
        .order_by("created_at", "id")
    )
    counts = services.label_counts(Codebook(pk=index.codebook_id)) if index.codebook_id else {}
    rows = []
    for category in pending:
        dimension = index.dimension(category.dimension_id)
        choices = category_choices(index, dimension.key, indent=False)
        names = {c.name: c.id for c in index.categories_of(dimension.key)}
        similar = [index.path(names[n]) for n in near_duplicates(category.name, names)]
        rows.append(
            {
                "c": category,
                "dimension": dimension,
                "path": index.path(category.pk),
                "labels": sum(counts.get(category.pk, (0, 0))),
                "similar": similar,
                "merge_form": MergeForm(targets=choices, prefix=f"p{category.pk}"),
                "reject_form": RejectForm(targets=choices, prefix=f"p{category.pk}"),
                "error": (errors or {}).get(category.pk, ""),
            }
        )
    return study_context(study, role, "codebook", rows=rows, message=message)


@login_required
@require_GET
def proposals(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    """The lead's queue of proposed codes: accept, merge into an existing category, or reject."""
    study, role = access_study(request.user, slug, lead=True)
    return render_page(
        request, "taxonomy/proposals.html", _proposals_context(study, role), partial="#proposal-list"
    )


@login_required
@require_POST
def proposal_action(request: HtmxHttpRequest, slug: str, pk: int, action: str) -> HttpResponse:
    """POST accept | merge (``p<ID>-target``) | reject (``p<ID>-move_to``, ``p<ID>-note``)."""
    study, role, category = lead_category(request, slug, pk)
    if category.status != CategoryStatus.PROPOSED:
        message = f"“{category.name}” is no longer an open proposal."
        return _proposal_response(request, study, role, "", {category.pk: message}, status=422)
    index = CodebookIndex.for_study(study)
    choices = category_choices(index, category.dimension.key, indent=False)
    user = user_of(request)
    try:
        if action == "accept":
            services.accept_proposal(category, actor=user)
            message = f"Accepted “{category.name}”."
        elif action == "merge":
            form = MergeForm(request.POST, targets=choices, prefix=f"p{pk}")
            if not form.is_valid():
                raise CodebookEditError("Choose the category to merge it into.")
            target = scoped_category(study, form.cleaned_data["target"])
            assert target is not None  # required field
            moved = services.merge_category(category, target, actor=user)
            message = f"Merged “{category.name}” into “{target.name}” ({moved.labels} label(s) moved)."
        elif action == "reject":
            reject = RejectForm(request.POST, targets=choices, prefix=f"p{pk}")
            if not reject.is_valid():
                raise CodebookEditError("Choose where its labels go.")
            target = scoped_category(study, reject.cleaned_data["move_to"])
            moved = services.reject_proposal(category, target, actor=user, note=reject.cleaned_data["note"])
            where = f"; {moved.labels} label(s) moved to “{target.name}”" if target else ""
            message = f"Rejected “{category.name}”{where}."
        else:
            raise Http404("Unknown action.")
    except CodebookEditError as exc:
        return _proposal_response(request, study, role, "", {category.pk: str(exc)}, status=422)
    return _proposal_response(request, study, role, message, None, signal_change=True)


def _proposal_response(
    request: HtmxHttpRequest,
    study: Study,
    role: str,
    message: str,
    errors: dict[int, str] | None,
    *,
    status: int = 200,
    signal_change: bool = False,
) -> HttpResponse:
    if not is_htmx(request):
        if message:
            messages.success(request, message)
        for error in (errors or {}).values():
            messages.error(request, error)
        return redirect("taxonomy:proposals", study.slug)
    ctx = _proposals_context(study, role, message, errors)
    response = render(request, "taxonomy/proposals.html#proposal-list", ctx, status=status)
    return changed(response) if signal_change else response
