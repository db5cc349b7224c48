"""The study overview, the disagreement queue, the side-by-side adjudication page and an item's history.

Every adjudication page is for leads and owners (`access_study(..., lead=True)`: 403 for annotators, 404
for outsiders): it shows every annotator's labels. Form errors (htmx or not) re-render the decision form
with a status saying what happened: 422 refused, 409 conflict; adjudication.js lets htmx swap those.
"""

from __future__ import annotations

import unicodedata
from datetime import datetime
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.text import Truncator
from django.utils.timesince import timesince
from django.utils.timezone import localtime
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRedirect

from apps.accounts.models import Study
from apps.accounts.permissions import LEAD_ROLES, access_study
from apps.annotation.models import Assignment, AssignmentStatus, GoldItem, Round
from apps.annotation.payload import value_field
from apps.core.context import study_context
from apps.core.htmx import is_htmx, render_page
from apps.core.http import HtmxHttpRequest
from apps.corpus.models import Item
from apps.corpus.services import ensure_rendered
from apps.corpus.titles import readable_title
from apps.taxonomy.index import CodebookIndex

from . import queries
from .forms import QUEUE_FILTERS, DecisionForm, QueueFilterForm, encode_cursor, posted_findings
from .models import Decision, Review
from .queries import (
    ItemLabels,
    QueueFilters,
    claimed_recently,
    current_decision,
    decision_findings,
    item_labels,
)
from .services import AdjudicationError, DecisionConflict, claim, decide
from .sheet import Block, Composed, DimensionInfo, Sheet, apply_action
from .status import blind_status, overview


@login_required
@require_GET
def study_detail(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    study, role = access_study(request.user, slug)
    figures = overview(study)  # from the cache while nothing in the study has changed
    lead = role in LEAD_ROLES
    # annotators: without the counts that move with others' labels, nor the others' progress
    status = figures.status if lead else blind_status(figures.status)
    ctx = study_context(study, role, "overview", status=status)
    if lead:
        ctx["annotators"] = figures.annotators
        ctx["rounds"] = figures.rounds
    mine = Assignment.objects.for_annotator(request.user).filter(study=study)
    ctx["my_open"] = mine.filter(status=AssignmentStatus.OPEN).count()
    ctx["my_done"] = mine.filter(status=AssignmentStatus.SUBMITTED).count()
    return render(request, "adjudication/study_detail.html", ctx)


# --- The queue -----------------------------------------------------------------------------------------


def _filter_form(
    request: HtmxHttpRequest, index: CodebookIndex, figures: queries.QueueOverview
) -> QueueFilterForm:
    """The queue's filters as the query string holds them (the queue's own, or the ones a side-by-side
    page was opened with from the queue); their choices from the queue's cached `figures`."""
    return QueueFilterForm(
        request.GET or None, index=index, rounds=figures.rounds, annotators=figures.annotators
    )


def _opened_with(request: HtmxHttpRequest, study: Study, index: CodebookIndex) -> QueueFilterForm | None:
    """The queue's filters a side-by-side page was opened with from the queue, or None."""
    if not request.GET:
        return None
    return _filter_form(request, index, queries.queue_overview(study, SHORT_SHOWN))


def _queue_query(form: QueueFilterForm | None) -> str:
    """The filters of a valid `form` as a query string (no page cursor), "" for none: what the links from
    the queue to an item, and from a decision to the next item, carry so the lead stays in their filters."""
    if form is None or not form.is_bound or not form.is_valid():
        return ""
    return urlencode([(name, form.data[name]) for name in QUEUE_FILTERS if form.data.get(name)])


SHORT_SHOWN = 20  # items waiting for a hand decision, listed above the queue
TITLE_SHOWN = 90  # characters of an item's title in a queue row


def _shown_rows(
    request: HtmxHttpRequest,
    study: Study,
    index: CodebookIndex,
    rows: list[queries.QueueRow],
    *,
    sorted_by: bool,
    query: str,
    now: datetime,
) -> list[dict[str, Any]]:
    """The queue's rows as the page prints them, every value ready (one reversed link for the page, not a
    `{% url %}` a row): the template only writes them out."""
    names = {d.key: d.name for d in index.dimensions}
    link = reverse("adjudication:resolve", args=[study.slug, 0]).removesuffix("0/")
    suffix = f"/?{query}" if query else "/"
    shown = []
    for row in rows:
        claimer = row.claimer(now)
        claimed = claimer is not None and claimer.pk != request.user.pk
        # NFC as Truncator gives it; a title short enough is not cut (Truncator's walk was 0.5 ms a page)
        title = unicodedata.normalize("NFC", row.title or readable_title(row.url))
        shown.append(
            {
                "link": f"{link}{row.item_id}{suffix}",
                "title": title if len(title) <= TITLE_SHOWN else Truncator(title).chars(TITLE_SHOWN),
                "round": None
                if row.round_number is None
                else Round.display_name(row.round_name, row.round_number),
                "revealed": row.revealed,
                "dimensions": [names.get(k, k) for k in row.dimensions],
                "annotators": ", ".join(str(a) for a in row.annotators),
                "annotator_count": len(row.annotators),
                "sorted_by": (row.sort_key or "no category") if sorted_by else None,
                "updated": localtime(row.updated_at).strftime("%Y-%m-%d %H:%M"),
                "waiting": timesince(row.updated_at, now),
                "claimed_by": claimer if claimed else None,
                "claimed_for": timesince(row.claimed_at, now) if claimed and row.claimed_at else "",
            }
        )
    return shown


@login_required
@require_GET
def queue(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    """Open disagreements, filtered by round, dimension, category and annotator pair, sorted oldest first
    or by category, 50 per page (keyset). The rows are a partial for htmx filtering."""
    study, role = access_study(request.user, slug, lead=True)
    index = CodebookIndex.for_study(study)
    figures = queries.queue_overview(study, SHORT_SHOWN)  # cached while nothing in the study has changed
    form = _filter_form(request, index, figures)
    filters, after = QueueFilters(), None
    if form.is_bound and form.is_valid():
        filters, after = form.filters(), form.cursor()
    rows, next_cursor = queries.queue_rows(study, filters, after)
    params = request.GET.copy()
    params.pop("after", None)
    next_url = None
    if next_cursor is not None:
        params["after"] = encode_cursor(next_cursor)
        next_url = f"?{params.urlencode()}"
    now = timezone.now()
    query = _queue_query(form)
    by_category = filters.sort == "category"
    shown = _shown_rows(request, study, index, rows, sorted_by=by_category, query=query, now=now)
    ctx = study_context(
        study,
        role,
        "disagreements",
        form=form,
        rows=shown,
        next_url=next_url,
        first_page=after is None,
        counts=figures.counts,
        discussion=figures.discussion,
        queue_query=query,
        now=now,
        short=None if is_htmx(request) else figures.short,
    )
    return render_page(request, "adjudication/queue.html", ctx, partial="#queue-rows")


# --- The side-by-side page -----------------------------------------------------------------------------


def _annotator_names(study_show_names: bool, labels: ItemLabels) -> list[str]:
    names = []
    for position, annotation in enumerate(labels.annotations, start=1):
        user = annotation.assignment.annotator
        names.append(str(user) if study_show_names else f"Annotator {position}")
    return names


def _keys(index: CodebookIndex, findings: list[dict[str, frozenset[int]]]) -> Composed:
    return [
        {d: sorted(index.categories[c].key for c in ids if c in index.categories) for d, ids in f.items()}
        for f in findings
    ]


def _sheet(index: CodebookIndex, labels: ItemLabels) -> Sheet:
    dimensions = [DimensionInfo(d.key, d.name, d.multiple) for d in index.dimensions]
    return Sheet(
        labels.findings,
        dimensions,
        {c.id: c.key for c in index.categories.values()},
        {c.id: index.path(c.id) for c in index.categories.values()},
    )


def _template_blocks(
    blocks: list[Block], names: list[str], options: dict[str, list[tuple[str, str]]]
) -> list[dict[str, Any]]:
    """The sheet's blocks shaped for the template (which cannot index dictionaries by variable)."""
    out = []
    for block in blocks:
        i = block.number - 1
        rows = []
        for row in block.rows:
            key = row.dimension.key
            chosen = set(row.chosen or ())
            choices = list(options.get(key, []))
            known = {k for k, _ in choices}
            # a value no longer pickable (retired since) still shows, selected, so it can be changed
            choices += [(k, f"{k} (not active)") for k in sorted(chosen - known)]
            rows.append(
                {
                    "dimension": row.dimension,
                    "differs": row.differs,
                    "field": value_field(block.number, key),
                    "options": [(k, label, k in chosen) for k, label in choices],
                    "n_selected": len(chosen),
                    "n_more": len(choices) - len(chosen),
                    "cells": [
                        {
                            "cell": cell,
                            "name": names[j],
                            "take": f"take:{j}:{i}:{key}",
                            "can_take": row.differs and bool(cell.keys) and tuple(cell.keys) != row.chosen,
                        }
                        for j, cell in enumerate(row.cells)
                    ],
                }
            )
        out.append({"number": block.number, "index": i, "in_decision": block.in_decision, "rows": rows})
    return out


def _resolve_context(
    request: HtmxHttpRequest,
    study: Any,
    role: str,
    item: Item,
    index: CodebookIndex,
    labels: ItemLabels,
    sheet: Sheet,
    decision: Composed,
    form: DecisionForm,
    **extra: Any,
) -> dict[str, Any]:
    """`queue_query` (in `extra`) is the queue's filters the page was opened with: its links back to the
    queue and its form keep them, so the next item after a decision is one of those filters."""
    current = current_decision(item)
    review = Review.objects.filter(item=item).select_related("claimed_by", "round").first()
    other_claim = (
        review
        if review is not None
        and review.claimed_by_id not in (None, request.user.pk)
        and claimed_recently(review, timezone.now())
        else None
    )
    options = {
        d.key: [(c.key, "\u00a0\u00a0" * (depth - 1) + c.name) for c, depth in index.options(d.key)]
        for d in index.dimensions
    }
    names = _annotator_names(study.show_annotator_names, labels)
    conflicting = [index.categories[i] for i in sheet.conflicting_ids() if i in index.categories]
    memos = [a.memo for a in labels.annotations]
    return study_context(
        study,
        role,
        "disagreements",
        item=item,
        comments=item.comments.all(),
        labels=labels,
        columns=[
            {"index": j, "name": n, "memo": m} for j, (n, m) in enumerate(zip(names, memos, strict=True))
        ],
        blocks=_template_blocks(sheet.blocks(decision), names, options),
        conflicting=[(c, index.path(c.id)) for c in conflicting],
        current=current,
        review=review,
        other_claim=other_claim,
        form=form,
        can_decide=labels.complete or (current is not None and not labels.assignments),
        **extra,
    )


@login_required
@require_http_methods(["GET", "POST"])
def resolve(request: HtmxHttpRequest, slug: str, item_id: int) -> HttpResponse:
    """Show an item's annotations side by side and let the lead compose and save the decision.

    GET writes nothing: the page, once loaded, claims the item for the lead through `claim_item` (unless
    another lead opened it less than 10 minutes ago, which the page then says). POST with ``action=save``
    (the default; Ctrl+Enter) calls `services.decide`; any other action (add or remove a finding, take an
    annotator's labels) re-renders the form with the decision edited and saves nothing.
    """
    study, role = access_study(request.user, slug, lead=True)
    item = get_object_or_404(Item.objects.in_study(study).select_related("study"), pk=item_id)
    ensure_rendered(item)
    index = CodebookIndex.for_study(study)
    filter_form = _opened_with(request, study, index)
    queue_query = _queue_query(filter_form)
    labels = item_labels(item)
    sheet = _sheet(index, labels)
    if request.method == "GET":
        current = current_decision(item)
        decision = _keys(index, decision_findings(current)) if current else sheet.agreed()
        form = DecisionForm(initial={"expected_decision": current.pk if current else None})
        ctx = _resolve_context(
            request, study, role, item, index, labels, sheet, decision, form, queue_query=queue_query
        )
        return render(request, "adjudication/resolve.html", ctx)

    data = request.POST
    decision = posted_findings(dict(data.lists())) or [{}]
    action = data.get("action", "save") or "save"
    form = DecisionForm(data)
    status, extra = 200, dict[str, Any]()
    if action != "save":
        decision = apply_action(sheet, decision, action, len(labels.annotations))
    elif form.is_valid():
        refused = _save_decision(request, item, index, decision, form)
        if refused is None:
            messages.success(request, f"Decision saved on “{item}”.")
            return _after_save(request, study, item, filter_form)
        status, extra, form = refused
    else:
        status = 422
    extra["queue_query"] = queue_query
    ctx = _resolve_context(request, study, role, item, index, labels, sheet, decision, form, **extra)
    return render_page(request, "adjudication/resolve.html", ctx, partial="#decision-form", status=status)


def _save_decision(
    request: HtmxHttpRequest, item: Item, index: CodebookIndex, decision: list[Any], form: DecisionForm
) -> tuple[int, dict[str, Any], DecisionForm] | None:
    """`services.decide` with the lead's findings: None when saved; else the status, what the page says
    (the decision that won, or the refusal) and the form to show again."""
    try:
        decide(
            item,
            [f for f in decision if any(f.values())],
            actor=request.user,  # type: ignore[arg-type]
            rationale=form.cleaned_data["rationale"] or "",
            expected_decision_id=form.cleaned_data["expected_decision"],
        )
    except DecisionConflict as exc:
        # Saving again now is a deliberate reversal of the decision the lead has just been shown.
        again = DecisionForm(
            {**request.POST.dict(), "expected_decision": exc.current.pk if exc.current else ""}
        )
        again.is_valid()
        return 409, {"conflict": exc, "conflict_findings": _conflict_findings(index, exc)}, again
    except AdjudicationError as exc:
        return 422, {"refusal": exc}, form
    return None


@login_required
@require_POST
def claim_item(request: HtmxHttpRequest, slug: str, item_id: int) -> HttpResponse:
    """The lead has the item open: the side-by-side page sends this once it has loaded (a GET writes
    nothing). Claims it unless another lead's claim still counts (`services.claim`). htmx: 204, nothing
    to swap; a plain POST is sent back to the page."""
    study, _ = access_study(request.user, slug, lead=True)
    item = get_object_or_404(Item.objects.in_study(study), pk=item_id)
    claim(item, request.user)  # type: ignore[arg-type]
    if is_htmx(request):
        return HttpResponse(status=204)
    return redirect("adjudication:resolve", study.slug, item.pk)


def _conflict_findings(index: CodebookIndex, exc: DecisionConflict) -> Composed:
    return _keys(index, decision_findings(exc.current)) if exc.current else []


def _after_save(
    request: HtmxHttpRequest, study: Study, item: Item, filter_form: QueueFilterForm | None
) -> HttpResponse:
    """Go on to the next open disagreement in the queue's filters and order (oldest first unless the lead
    sorted by category), or back to the queue, still filtered, when none of them is left."""
    query = _queue_query(filter_form)
    filters = filter_form.filters() if filter_form is not None and query else QueueFilters()
    following = queries.queue(study, filters).exclude(item=item).values_list("item_id", flat=True).first()
    if following:
        url = reverse("adjudication:resolve", args=[study.slug, following])
    else:
        url = reverse("adjudication:queue", args=[study.slug])
        if query:
            messages.info(request, "No open disagreement is left in these filters.")
    if query:
        url = f"{url}?{query}"
    if is_htmx(request):
        return HttpResponseClientRedirect(url)
    return HttpResponseRedirect(url)


@login_required
@require_GET
def item_history(request: HtmxHttpRequest, slug: str, item_id: int) -> HttpResponse:
    """Every decision on the item, newest first: who, when, provenance, rationale, the labels, what it
    changed for each annotator and which decision it superseded."""
    study, role = access_study(request.user, slug, lead=True)
    item = get_object_or_404(Item.objects.in_study(study), pk=item_id)
    index = CodebookIndex.for_study(study)
    labels = item_labels(item)
    names = _annotator_names(study.show_annotator_names, labels)
    name_of = {a.pk: n for a, n in zip(labels.annotations, names, strict=True)}
    entries = _history_entries(index, queries.history(item), name_of)
    ctx = study_context(
        study,
        role,
        "disagreements",
        item=item,
        entries=entries,
        blocks=_template_blocks(_sheet(index, labels).blocks([]), names, {}),
        labels=labels,
        memos=list(zip(names, [a.memo for a in labels.annotations], strict=True)),
        gold=GoldItem.objects.filter(item=item).exists(),
    )
    return render(request, "adjudication/history.html", ctx)


def _history_entries(
    index: CodebookIndex, decisions: list[Decision], name_of: dict[int, str]
) -> list[dict[str, Any]]:
    """Each decision of the item as its history shows it: status, labels by finding, what it changed for
    each annotator (named by `name_of`, annotation id → name), what it superseded."""
    entries = []
    superseded = {d.supersedes_id for d in decisions if d.supersedes_id}
    for decision in decisions:
        values: dict[int, list[tuple[str, str]]] = {}
        for finding in decision.findings.all():
            values[finding.number] = [
                (
                    _dimension_name(index, value.dimension_id),
                    index.path(value.category_id)
                    + (
                        f" (chosen as {index.path(value.original_category_id)})"
                        if value.original_category_id
                        else ""
                    ),
                )
                for value in finding.values.all()
            ]
        changes = [
            {**entry, "who": name_of.get(entry.get("annotation", 0), "An earlier annotation")}
            for entry in (decision.changes or {}).get("annotations", [])
        ]
        entries.append(
            {
                "decision": decision,
                "status": "current"
                if decision.is_current
                else ("superseded" if decision.pk in superseded else "withdrawn"),
                "findings": sorted(values.items()),
                "changes": changes,
                "previous": (decision.changes or {}).get("previous"),
                "override": (decision.changes or {}).get("override", False),
            }
        )
    return entries


def _dimension_name(index: CodebookIndex, dimension_id: int) -> str:
    try:
        return index.dimension(dimension_id).name
    except LookupError:
        return str(dimension_id)
