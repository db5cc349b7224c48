"""The Quality screen (leads and owners only, docs/quality.md): the per-annotator report, its CSV, the
drift chart, the confusions, over- and under-used categories and the items labelled too fast.

Each view loads the study through `access_study(..., lead=True)`: 404 for non-members, 403 for annotators,
so no annotator ever reads another annotator's figures here.
"""

from __future__ import annotations

import csv
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse, QueryDict
from django.shortcuts import render
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET

from apps.accounts.models import Study
from apps.accounts.permissions import access_study
from apps.agreement.charts import Series, line_chart
from apps.core.context import study_context
from apps.core.http import HtmxHttpRequest

from . import report
from .gold import gold_context
from .reads import ReportData, ReportError, item_titles, report_rows

PALETTE = ("#2563eb", "#dc2626", "#059669", "#d97706", "#7c3aed", "#0891b2", "#be185d", "#4d7c0f")


def _filters(params: QueryDict) -> tuple[int | None, str | None]:
    text = params.get("round", "")
    if text and not (text.isascii() and text.isdigit()):
        raise ReportError(f"round must be a round's number, got {text!r}")
    return (int(text) if text else None), (params.get("dimension") or None)


def _drift_chart(rows: list[report.ReportRow], data: ReportData, dimension: str) -> str | None:
    points = {key: dict(values) for key, values in report.drift(rows).items() if key[1] == dimension}
    if not points or len(data.rounds) < 2:
        return None
    series = [
        Series(annotator, [values.get(n) for n in data.rounds], PALETTE[i % len(PALETTE)])
        for i, ((annotator, _), values) in enumerate(sorted(points.items()))
    ]
    svg = line_chart(
        [f"Round {n}" for n in data.rounds],
        series,
        title=f"Accuracy against the final decisions per round · {dimension}",
        chart_id=f"drift-{dimension}",
    )
    return mark_safe(svg)


def _page_parts(
    data: ReportData, rows: list[report.ReportRow], dimension: str | None, round_number: int | None
) -> dict[str, Any]:
    """The page's figures beside the table, for the round asked (every round without one)."""
    shown = dimension or (data.dimensions[0] if data.dimensions else None)
    judgements = [j for j in data.judgements if round_number is None or j.round == round_number]
    timings = [t for t in data.timings if round_number is None or t.round == round_number]
    fast = report.too_fast(timings)
    misses = report.gold_misses(judgements, data.finals)
    titles = item_titles({t.item for t in fast[:50]} | {m.item for m in misses[:100]})
    return {
        "rows": rows,
        "drift_dimension": shown,
        "drift_chart": _drift_chart(rows, data, shown) if shown else None,
        "confusions": report.confusions(judgements, data.finals),
        "category_use": [u for u in report.category_use(judgements) if u.tendency],
        "fast": [{"timing": t, "title": titles[t.item][0], "url": titles[t.item][1]} for t in fast[:50]],
        "fast_total": len(fast),
        "gold_misses": [{"miss": m, "title": titles[m.item][0]} for m in misses[:100]],
        "gold_misses_total": len(misses),
        "fast_rule": (report.FAST_MIN_WORDS, report.FAST_WORDS_PER_SECOND * 60),
    }


def render_quality(
    request: HtmxHttpRequest, study: Study, role: str, *, status: int = 200, **extra: Any
) -> HttpResponse:
    """The Quality screen for the filters of the request's query string; `extra` joins the context (a
    refused gold form's message, `gold_error`, with status 422)."""
    ctx = study_context(study, role, "quality", params=request.GET, **gold_context(study), **extra)
    try:
        round_number, dimension = _filters(request.GET)
        data, rows = report_rows(study, round_number=round_number, dimension=dimension)
    except ReportError as exc:
        return render(request, "quality/quality.html", {**ctx, "error": str(exc)}, status=400)
    ctx.update(_page_parts(data, rows, dimension, round_number), data=data)
    return render(request, "quality/quality.html", ctx, status=status)


@login_required
@require_GET
def quality_page(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    study, role = access_study(request.user, slug, lead=True)
    return render_quality(request, study, role)


@login_required
@require_GET
def quality_csv(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    """The report's rows as CSV (the columns of `annotator_report --format csv`)."""
    study, _ = access_study(request.user, slug, lead=True)
    try:
        round_number, dimension = _filters(request.GET)
        _, rows = report_rows(study, round_number=round_number, dimension=dimension)
    except ReportError as exc:
        return HttpResponse(str(exc), status=400, content_type="text/plain; charset=utf-8")
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{study.slug}-annotator-report.csv"'
    writer = csv.DictWriter(response, fieldnames=report.CSV_FIELDS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(row.as_csv() for row in rows)
    return response
