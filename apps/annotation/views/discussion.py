"""A round after its reveal: the lead's reveal, an annotator's revealed items (disagreements first), the
others' labels on the workbench, and revisions during discussion.

Everything an annotator reads here goes through `reveal.revealed_items`, which shows nothing while the
round is blind (`phases.is_blind`) and only items of the round the annotator labelled.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST

from apps.accounts.models import User
from apps.accounts.permissions import access_study
from apps.core.context import study_context
from apps.core.http import HtmxHttpRequest

from .. import payload as pl
from .. import services
from ..models import Assignment, Round
from ..phases import in_discussion, is_blind
from ..reveal import DecidedItem, RevealedItem, decided_items, own_agreement, revealed_items
from .common import request_user


def readable(
    selections: list[dict[str, pl.Value]], book: services.LoadedCodebook
) -> list[list[tuple[str, str]]]:
    """Findings as (dimension name, value text) pairs, for labels shown to a person."""
    out = []
    for values in selections:
        row = []
        for key, value in values.items():
            name = book.index.dimension(key).name
            if value == pl.PENDING:
                row.append((name, "pending"))
            else:
                ids = [book.category_ids.get((key, k)) for k in value]  # a key merged away since: shown as is
                paths = [
                    book.index.path(pk) if pk is not None else k for pk, k in zip(ids, value, strict=True)
                ]
                row.append((name, "; ".join(paths)))
        out.append(row)
    return out


def _shown(row: RevealedItem, book: services.LoadedCodebook) -> dict[str, Any]:
    return {
        "assignment": row.assignment,
        "item": row.item,
        "disagree": row.disagree,
        "labels": [
            {
                "annotator": x.annotator,
                "own": x.own,
                "findings": readable(x.findings, book),
                "memo": x.memo,
                "revised": x.revised,
                "blind": readable(x.blind, book) if x.revised and x.blind is not None else None,
            }
            for x in row.labels
        ],
    }


def discussion_context(user: User, assignment: Assignment, book: services.LoadedCodebook) -> dict[str, Any]:
    """The workbench's part of a revealed round: its phase, whether the annotator may revise the labels
    (discussion, submitted, not decided), and the item's labels by every annotator of the round."""
    round_ = assignment.round
    if is_blind(round_):
        return {"phase": round_.get_phase_display(), "revisable": False, "side_by_side": None}
    try:
        services.check_revisable(assignment, user)
        revisable = True
    except services.AnnotationError:
        revisable = False
    rows = revealed_items(round_, user, book, assignment=assignment)
    decided = decided_items(assignment.study, user, assignment=assignment)
    return {
        "phase": round_.get_phase_display(),
        "revisable": revisable,
        "side_by_side": _shown(rows[0], book) if rows else None,
        "decision": _decision(decided[0], book) if decided else None,
    }


PROVENANCE = {"unanimous": "unanimous", "majority": "by majority", "discussed": "resolved by discussion",
              "adjudicated": "adjudicated by a lead", "imported": "imported"}  # fmt: skip


def _decision(row: DecidedItem, book: services.LoadedCodebook) -> dict[str, Any]:
    by_dimension: dict[str, list[str]] = {}
    names = {d.id: d.name for d in book.index.all_dimensions}
    for dimension_id, category_id in sorted(row.gold):
        by_dimension.setdefault(names.get(dimension_id, str(dimension_id)), []).append(
            book.index.path(category_id)
        )
    return {
        "assignment": row.assignment,
        "provenance": PROVENANCE.get(row.provenance, row.provenance),
        "rationale": row.rationale,
        "labels": [(name, "; ".join(paths)) for name, paths in by_dimension.items()],
        "matched": row.matched,
    }


@login_required
@require_POST
def close_discussion(request: HtmxHttpRequest, slug: str, number: int) -> HttpResponse:
    """The lead ends a round's discussion: it moves to adjudication."""
    study, _ = access_study(request.user, slug, lead=True)
    get_object_or_404(Round.objects.filter(study=study), number=number)
    try:
        round_ = services.close_discussion(study, number)
    except services.AnnotationError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"{round_}'s discussion is closed: its open disagreements wait for a lead.")
    return redirect("annotation:round-detail", slug=study.slug, number=number)


@login_required
@require_GET
def my_decided(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    """My decided items of revealed rounds: each decision, its provenance and rationale, whether my labels
    matched it, and my own agreement with the final labels per round."""
    study, role = access_study(request.user, slug)
    book = services.load_codebook(study)
    rows = decided_items(study, request_user(request))
    ctx = study_context(
        study, role, "queue", rows=[_decision(r, book) for r in rows], agreement=own_agreement(rows)
    )
    return render(request, "annotation/decided.html", ctx)


@login_required
@require_POST
def reveal(request: HtmxHttpRequest, slug: str, number: int) -> HttpResponse:
    """The lead reveals a round, then discussion or straight to adjudication (`then`); with open
    assignments only once confirmed (the `force` box)."""
    study, _ = access_study(request.user, slug, lead=True)
    get_object_or_404(Round.objects.filter(study=study), number=number)
    then = {"discussion": True, "adjudication": False}.get(request.POST.get("then", ""))
    try:
        result = services.reveal_round(
            study,
            number,
            force=request.POST.get("force") == "1",
            actor=request_user(request),
            discussion=then,
        )
    except services.RoundError as exc:
        messages.error(request, str(exc))
    else:
        if result.revealed:
            messages.success(
                request, f"{result.round} revealed: {result.frozen} annotations frozen as its blind record."
            )
        else:
            messages.info(request, f"{result.round} was already revealed.")
    return redirect("annotation:round-detail", slug=study.slug, number=number)


@login_required
@require_GET
def round_discussion(request: HtmxHttpRequest, slug: str, number: int) -> HttpResponse:
    """My items of a revealed round, each with every annotator's labels, disagreements first."""
    study, role = access_study(request.user, slug)
    round_ = get_object_or_404(Round.objects.filter(study=study).select_related("study"), number=number)
    book = services.load_codebook(study)
    rows = [_shown(row, book) for row in revealed_items(round_, request_user(request), book)]
    ctx = study_context(
        study,
        role,
        "queue",
        round=round_,
        blind=is_blind(round_),
        discussing=in_discussion(round_),
        rows=rows,
        n_disagree=sum(1 for r in rows if r["disagree"]),
    )
    return render(request, "annotation/discussion.html", ctx)


@login_required
@require_POST
def revise(request: HtmxHttpRequest, slug: str, pk: int) -> HttpResponse:
    """Revise my labels of an item during its round's discussion (409 with the reason when refused)."""
    study, _ = access_study(request.user, slug)
    assignment = get_object_or_404(Assignment.objects.for_annotator(request.user).filter(study=study), pk=pk)
    data = pl.payload_from_form({name: request.POST.getlist(name) for name in request.POST})
    try:
        result = services.revise_annotation(assignment, data, request_user(request), study=study)
    except services.NotYourAssignment as exc:
        raise Http404("No such assignment.") from exc
    except services.InvalidLabels as exc:
        messages.error(request, "Not revised: " + "; ".join(str(p) for p in exc.problems))
        return redirect("annotation:workbench", slug=study.slug, pk=pk)
    except services.AnnotationError as exc:
        return HttpResponse(str(exc), status=409, content_type="text/plain; charset=utf-8")
    messages.success(request, "Labels revised." if result.changed else "These are already your labels.")
    return redirect("annotation:workbench", slug=study.slug, pk=pk)
