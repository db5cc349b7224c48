"""The lead's pages: rounds (draw, assign, add items, reassign) and relevance screening.

Form errors: the page re-rendered with status 422 and the errors next to the fields.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import Count
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from apps.accounts.models import Membership, Study, User
from apps.accounts.permissions import access_study
from apps.core.context import study_context
from apps.core.htmx import is_htmx
from apps.core.http import HtmxHttpRequest
from apps.corpus.models import Item, Relevance
from apps.corpus.records import canonical_url

from .. import services
from ..forms import AddItemsForm, AssignForm, DrawRoundForm, ReassignForm, ScreenForm
from ..models import Assignment, Round, RoundItem, SampleMethod
from ..phases import discusses, is_blind
from ..services import gold
from .common import request_user

SCREEN_PAGE = 50
ROUND_PAGE = 300


# --- The lead's rounds -------------------------------------------------------------------------------


def _members(study: Study) -> list[str]:
    return list(
        Membership.objects.filter(study=study)
        .order_by("user__username")
        .values_list("user__username", flat=True)
    )


def _rounds_context(study: Study, role: str, **forms: Any) -> dict[str, Any]:
    figures = services.rounds_overview(study)  # from the cache while nothing in the study has changed
    rounds = figures.rounds
    by_round: dict[int, list[dict[str, Any]]] = {}
    for row in figures.progress:
        by_round.setdefault(row["round_id"], []).append(row)
    next_number = (rounds[-1].number + 1) if rounds else 1
    members = _members(study)
    ctx = {
        "rounds": [{"round": r, "annotators": by_round.get(r.pk, [])} for r in rounds],
        "draw_form": forms.get("draw_form") or DrawRoundForm(initial={"number": next_number, "seed": 1}),
        "assign_form": forms.get("assign_form")
        or AssignForm(rounds=[r.number for r in rounds], members=members, overlap=study.overlap),
        "add_form": forms.get("add_form") or AddItemsForm(initial={"number": next_number}),
        "eligible": figures.eligible,
        "unscreened": figures.unscreened,
    }
    return study_context(study, role, "rounds", **ctx)


@login_required
@require_GET
def rounds(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    """Rounds with how they were drawn, and per annotator: done / open and median seconds per item."""
    study, role = access_study(request.user, slug, lead=True)
    return render(request, "annotation/rounds.html", _rounds_context(study, role))


@login_required
@require_POST
def draw(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    study, role = access_study(request.user, slug, lead=True)
    form = DrawRoundForm(request.POST)
    if form.is_valid():
        data = form.cleaned_data
        try:
            result = services.draw_round(
                study,
                number=data["number"],
                size=data["size"],
                seed=data["seed"],
                stratify_field=data["stratify"],
                actor=request_user(request),
            )
        except services.RoundError as exc:
            form.add_error(None, str(exc))
        else:
            if result.created:
                messages.success(
                    request, f"Drew {result.drawn} of {result.population} items into {result.round}."
                )
            else:
                messages.info(
                    request, f"{result.round} was already drawn with these parameters; nothing changed."
                )
            return redirect("annotation:rounds", slug=study.slug)
    return render(request, "annotation/rounds.html", _rounds_context(study, role, draw_form=form), status=422)


@login_required
@require_POST
def assign(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    study, role = access_study(request.user, slug, lead=True)
    numbers = list(Round.objects.filter(study=study).order_by("number").values_list("number", flat=True))
    form = AssignForm(request.POST, rounds=numbers, members=_members(study), overlap=study.overlap)
    if form.is_valid():
        data = form.cleaned_data
        try:
            result = services.assign_round(
                study,
                data["number"],
                data["annotators"],
                overlap=data["overlap"],
                actor=request_user(request),
            )
        except services.RoundError as exc:
            form.add_error(None, str(exc))
        else:
            loads = ", ".join(f"{name} {n}" for name, n in sorted(result.loads.items()))
            messages.success(
                request,
                f"{result.round}: {result.created} assignments created, {result.moved} moved. "
                f"Loads: {loads}.",
            )
            return redirect("annotation:rounds", slug=study.slug)
    return render(
        request, "annotation/rounds.html", _rounds_context(study, role, assign_form=form), status=422
    )


def _items_by_reference(study: Study, lines: list[str]) -> tuple[list[int], list[str]]:
    """Item ids for lines holding an id or a URL, and the lines that name no item of the study."""
    ids = [int(line) for line in lines if line.isdigit()]
    urls: dict[str, str] = {}
    for line in lines:
        if not line.isdigit():
            try:
                urls[line] = canonical_url(line)
            except ValueError:
                urls[line] = line
    found_ids = set(Item.objects.filter(study=study, pk__in=ids).values_list("pk", flat=True))
    by_url = dict(
        Item.objects.filter(study=study, url__in=set(urls) | set(urls.values())).values_list("url", "pk")
    )
    out: list[int] = []
    missing: list[str] = []
    for line in lines:
        pk = (
            (int(line) if int(line) in found_ids else None)
            if line.isdigit()
            else by_url.get(line) or by_url.get(urls[line])
        )
        if pk is None:
            missing.append(line)
        else:
            out.append(pk)
    return out, missing


@login_required
@require_POST
def add_items(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    """Add items to a round by hand (ids or URLs) or by a filter over items in no round yet."""
    study, role = access_study(request.user, slug, lead=True)
    form = AddItemsForm(request.POST)
    if form.is_valid():
        data = form.cleaned_data
        lines = form.item_lines()
        if lines:
            ids, missing = _items_by_reference(study, lines)
            method, description = SampleMethod.MANUAL, {}
            if missing:
                form.add_error("items", f"Not items of this study: {', '.join(missing[:10])}.")
        else:
            query = services.matching_items(study, source=data["source"], tag=data["tag"], text=data["text"])
            ids = list(query.values_list("pk", flat=True)[: data.get("limit") or 10_000])
            method = SampleMethod.FILTER
            description = {"filter": {k: data[k] for k in ("source", "tag", "text") if data[k]}}
            if not ids:
                form.add_error(None, "No item in no round matches this filter.")
        if form.is_valid():
            try:
                result = services.add_items_to_round(
                    study,
                    data["number"],
                    ids,
                    method=method,
                    actor=request_user(request),
                    description=description,
                )
            except services.RoundError as exc:
                form.add_error(None, str(exc))
            else:
                skipped = []
                if result.already_in_round:
                    skipped.append(f"{result.already_in_round} already in it")
                if result.irrelevant:
                    skipped.append(f"{result.irrelevant} screened irrelevant")
                note = f" (skipped: {', '.join(skipped)})" if skipped else ""
                messages.success(request, f"Added {result.added} items to {result.round}{note}.")
                return redirect("annotation:rounds", slug=study.slug)
    return render(request, "annotation/rounds.html", _rounds_context(study, role, add_form=form), status=422)


@login_required
@require_GET
def round_detail(request: HtmxHttpRequest, slug: str, number: int) -> HttpResponse:
    """The items of a round and who holds each (status only: labels are the adjudication page's)."""
    study, role = access_study(request.user, slug, lead=True)
    round_ = get_object_or_404(Round.objects.filter(study=study), number=number)
    round_items = list(
        RoundItem.objects.filter(round=round_).select_related("item").order_by("position")[:ROUND_PAGE]
    )
    holders: dict[int, list[Assignment]] = {}
    for assignment in Assignment.objects.filter(
        round=round_, item_id__in=[ri.item_id for ri in round_items]
    ).select_related("annotator"):
        holders.setdefault(assignment.item_id, []).append(assignment)
    members = _members(study)
    ctx = study_context(
        study,
        role,
        "rounds",
        round=round_,
        rows=[{"item": ri.item, "assignments": holders.get(ri.item_id, [])} for ri in round_items],
        total=RoundItem.objects.filter(round=round_).count(),
        members=members,
        blind=is_blind(round_),
        discusses=discusses(round_),
        n_open=services.open_assignment_count(round_),
    )
    return render(request, "annotation/round_detail.html", ctx)


@login_required
@require_POST
def reassign(request: HtmxHttpRequest, slug: str, number: int, pk: int) -> HttpResponse:
    study, _ = access_study(request.user, slug, lead=True)
    assignment = get_object_or_404(Assignment.objects.for_lead(request.user).filter(study=study), pk=pk)
    form = ReassignForm(request.POST, members=_members(study))
    if form.is_valid():
        to_user = User.objects.get(username=form.cleaned_data["annotator"])
        try:
            services.reassign(assignment, to_user, actor=request_user(request))
        except services.RoundError as exc:
            messages.error(request, str(exc))
        else:
            messages.success(request, f"Item {assignment.item_id} now goes to {to_user.username}.")
    else:
        messages.error(request, "Choose a member of the study.")
    return redirect("annotation:round-detail", slug=study.slug, number=number)


# --- Screening ---------------------------------------------------------------------------------------


@login_required
@require_GET
def screening(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    """Relevance screening before labelling: items not yet screened (or all), keyset pages by id."""
    study, role = access_study(request.user, slug, lead=True)
    show = request.GET.get("show", Relevance.UNSCREENED)
    items = Item.objects.filter(study=study)
    if show in Relevance.values:
        items = items.filter(relevance=show)
    after = request.GET.get("after", "")
    rows = list(
        items.filter(id__gt=int(after) if after.isdigit() else 0)
        .only("id", "url", "title", "source", "tags", "relevance", "relevance_reason")
        .order_by("id")[: SCREEN_PAGE + 1]
    )
    counts = dict(
        Item.objects.filter(study=study)
        .values_list("relevance")
        .annotate(n=Count("id"))
        .values_list("relevance", "n")
    )
    ctx = study_context(
        study,
        role,
        "screening",
        items=rows[:SCREEN_PAGE],
        next_after=rows[SCREEN_PAGE - 1].id if len(rows) > SCREEN_PAGE else None,
        show=show,
        tabs=[(r.value, r.label, counts.get(r.value, 0)) for r in Relevance],
    )
    return render(request, "annotation/screening.html", ctx)


@login_required
@require_http_methods(["POST"])
def screen(request: HtmxHttpRequest, slug: str, pk: int) -> HttpResponse:
    """One item's relevance decision; htmx gets the updated row back."""
    study, role = access_study(request.user, slug, lead=True)
    item = get_object_or_404(Item.objects.filter(study=study), pk=pk)
    form = ScreenForm(request.POST)
    error = ""
    if form.is_valid():
        services.screen_items(
            study,
            [item.pk],
            form.cleaned_data["relevance"],
            reason=form.cleaned_data["reason"],
            actor=request_user(request),
        )
        item.refresh_from_db(fields=["relevance", "relevance_reason"])
    else:
        error = " ".join(str(m) for e in form.errors.values() for m in e)
    if is_htmx(request):
        # htmx swaps only 2xx responses: the row comes back with its error shown, as 200.
        ctx = study_context(study, role, "screening", it=item, error=error)
        return render(request, "annotation/screening.html#screen-row", ctx)
    if error:
        messages.error(request, error)
    return redirect("annotation:screening", slug=study.slug)


@login_required
@require_POST
def round_pass_mark(request: HtmxHttpRequest, slug: str, number: int) -> HttpResponse:
    """A lead sets or clears a training round's pass mark (an empty field clears it)."""
    study, _ = access_study(request.user, slug, lead=True)
    text = request.POST.get("pass_mark", "").strip()
    try:
        mark = int(text) if text else None
    except ValueError:
        messages.error(request, f"Pass mark not changed: {text!r} is not a whole number from 1 to 100.")
        return redirect("annotation:round-detail", slug=study.slug, number=number)
    try:
        round_ = gold.set_pass_mark(study, number, mark)
    except gold.GoldError as exc:
        messages.error(request, f"Pass mark not changed: {exc}.")
    else:
        done = f"pass mark {mark} %" if mark is not None else "no pass mark: it locks nothing"
        messages.success(request, f"{round_} has {done}.")
    return redirect("annotation:round-detail", slug=study.slug, number=number)


@login_required
@require_POST
def round_kind(request: HtmxHttpRequest, slug: str, number: int) -> HttpResponse:
    """A lead makes the round a reliability round or a labelling round (`RoundKind`)."""
    study, _ = access_study(request.user, slug, lead=True)
    try:
        round_ = services.set_round_kind(study, number, request.POST.get("kind", ""))
    except services.RoundError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"{round_} is a {round_.get_kind_display().lower()} round.")
    return redirect("annotation:round-detail", slug=study.slug, number=number)
