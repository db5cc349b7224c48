"""The agreement dashboard (lead only): figures per dimension and round, across rounds, per category, per
annotator pair, and a confusion matrix whose cells open the items behind them.

Figures come from the latest `AgreementSnapshot` at the requested tree level. When the labels or the
codebook changed since (or there is none), a small study is recomputed on the request; a large one is
computed in the background and the page polls its progress (`services.request_dashboard`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import HttpResponseClientRefresh

from apps.accounts.models import Study, User
from apps.accounts.permissions import access_study
from apps.core.context import study_context
from apps.core.htmx import is_htmx, render_page
from apps.core.http import HtmxHttpRequest
from apps.core.models import JobStatus
from apps.taxonomy.index import CodebookIndex

from . import services
from .charts import Series, Threshold, line_chart
from .models import AgreementSnapshot
from .presenter import Coefficient, overall, present
from .services import ALL_ROUNDS, RatingsError

METRICS = (
    ("percent_agreement", "Percent agreement", "#7a8580"),
    ("cohen_kappa", "Cohen's kappa", "#2f5d50"),
    ("fleiss_kappa", "Fleiss' kappa", "#8a3f94"),
    ("krippendorff_alpha", "Krippendorff's alpha", "#b4582a"),
    ("gwet_ac1", "Gwet's AC1", "#1f4f8f"),
    ("krippendorff_alpha_masi", "alpha (MASI)", "#6b7d2a"),
    ("krippendorff_alpha_jaccard", "alpha (Jaccard)", "#3d7f91"),
)
THRESHOLDS = (Threshold(0.667, "\u03b1 0.667 tentative"), Threshold(0.8, "\u03b1 0.800 reliable"))


@dataclass(frozen=True)
class Figure:
    """A coefficient as shown: its value, or n/a with the reason (and a footnote number in tables)."""

    value: float | None
    reason: str | None = None
    note: int | None = None


class Notes:
    """Footnotes for the n/a cells of one table: each distinct reason once, numbered in order."""

    def __init__(self) -> None:
        self.reasons: list[str] = []

    def figure(self, coefficient: Coefficient) -> Figure:
        value, reason = coefficient.value, coefficient.reason
        if value is not None or reason is None:
            return Figure(value)
        if reason not in self.reasons:
            self.reasons.append(reason)
        return Figure(None, reason, self.reasons.index(reason) + 1)


def _level(text: str | None) -> int | None:
    """``?level=N`` (N ≥ 1); anything else means full depth."""
    return int(text) if text and text.isdigit() and int(text) >= 1 else None


def _round(text: str | None) -> int | None:
    return int(text) if text and text.isdigit() else None


def _actor(request: HtmxHttpRequest) -> User | None:
    return request.user if isinstance(request.user, User) else None


def _dashboard_url(slug: str, **params: Any) -> str:
    query = urlencode({k: v for k, v in params.items() if v is not None and v != ""})
    return reverse("agreement:dashboard", args=[slug]) + (f"?{query}" if query else "")


@login_required
@require_GET
def dashboard(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    study, role = access_study(request.user, slug, lead=True)
    level = _level(request.GET.get("level"))
    index = CodebookIndex.for_study(study)
    state = services.dashboard_state(study, level)
    snapshot, running, failed, fresh = state.snapshot, state.running, state.failed, state.fresh
    if state.should_compute:
        computed = services.request_dashboard(study, level, actor=_actor(request))
        if computed.status == JobStatus.SUCCEEDED:
            snapshot, fresh, failed = computed, True, None
        elif computed.status == JobStatus.FAILED:
            failed = computed
        else:
            running = computed
    ctx = study_context(
        study,
        role,
        "agreement",
        level=level,
        levels=_levels(index, study.slug),
        snapshot=snapshot,
        running=running,
        failed=failed,
        fresh=fresh,
        large=state.large,
        current_version=index.version,
    )
    if snapshot is not None and snapshot.result.get("dimensions"):
        ctx.update(_figures(request, study, snapshot, level, index))
        return render_page(request, "agreement/dashboard.html", ctx, partial="#confusion", target="confusion")
    return render(request, "agreement/dashboard.html", ctx)


def _levels(index: CodebookIndex, slug: str) -> list[dict[str, Any]]:
    depth = max((index.depth(c) for d in index.dimensions for c in index.tree(d.key)), default=1)
    if depth <= 1:
        return []
    names = {1: "Top level (1)"}
    choices: list[dict[str, Any]] = [
        {"level": n, "label": names.get(n, f"Level {n}"), "url": _dashboard_url(slug, level=n)}
        for n in range(1, depth)
    ]
    return [*choices, {"level": None, "label": "Full depth (leaf)", "url": _dashboard_url(slug)}]


def _figures(
    request: HtmxHttpRequest,
    study: Study,
    snapshot: AgreementSnapshot,
    level: int | None,
    index: CodebookIndex,
) -> dict[str, Any]:
    slug = study.slug
    result = snapshot.result
    rounds = result["rounds"]
    scopes = [(str(r["number"]), r["label"]) for r in rounds] + [(ALL_ROUNDS, "All rounds")]
    dimensions = result["dimensions"]
    by_key = {d["key"]: d for d in dimensions}
    chosen = by_key.get(request.GET.get("dimension", ""), dimensions[0])
    scope = request.GET.get("round", ALL_ROUNDS)
    if scope not in chosen["reports"]:
        scope = ALL_ROUNDS
    report = chosen["reports"][scope]
    rows = present(report)

    summary_notes = Notes()
    summary = [
        {
            "dimension": d,
            "cells": [
                {
                    "scope": key,
                    "report": d["reports"][key],
                    "alpha": summary_notes.figure(overall(d["reports"][key], "krippendorff_alpha")),
                    "kappa": summary_notes.figure(overall(d["reports"][key], "cohen_kappa")),
                    "url": _dashboard_url(slug, level=level, dimension=d["key"], round=key),
                    "selected": d is chosen and key == scope,
                }
                for key, _ in scopes
            ],
        }
        for d in dimensions
    ]
    headline = [
        {"key": key, "label": label, "figure": Figure(rows.overall[key].value, rows.overall[key].reason)}
        for key, label, _ in METRICS
        if key in rows.overall
    ]

    round_keys = [str(r["number"]) for r in rounds]
    series = []
    for key, label, color in METRICS:
        values = [chosen["reports"][k].get(key) for k in round_keys]
        if key not in report or all(v is None for v in values):
            continue
        series.append(Series(label, values, color, dashed=key == "percent_agreement"))
    chart = (
        mark_safe(  # charts.line_chart escapes every text it writes
            line_chart(
                [r["label"] for r in rounds],
                series,
                title=f"{chosen['name']}: agreement by round",
                chart_id="rounds-chart",
                thresholds=THRESHOLDS,
            )
        )
        if rounds
        else None
    )

    names = _category_names(index, chosen["key"])
    category_notes = Notes()
    categories: list[dict[str, Any]] = [
        {
            "key": row.key,
            "label": names.get(row.key, row.key),
            "count": row.count,
            "kappa": category_notes.figure(row.cohen_kappa),
            "fleiss": category_notes.figure(row.fleiss_kappa),
            "alpha": category_notes.figure(row.krippendorff_alpha),
        }
        for row in rows.categories
    ]
    # Worst first: lowest alpha at the top, undefined ones last (they are not "worst", just unknown).
    categories.sort(key=lambda c: (c["alpha"].value is None, c["alpha"].value or 0.0, c["label"]))
    pair_notes = Notes()
    pairs = [
        {
            "a": pair.a,
            "b": pair.b,
            "n": pair.n,
            "agreement": pair_notes.figure(pair.percent_agreement),
            "kappa": pair_notes.figure(pair.cohen_kappa),
        }
        for pair in rows.pairs
    ]
    annotators = rows.annotators
    phase_notes = Notes()
    ctx: dict[str, Any] = {
        "before_after": _before_after(result, dict(scopes), phase_notes),
        "phase_notes": phase_notes.reasons,
        "scopes": scopes,
        "summary": summary,
        "summary_notes": summary_notes.reasons,
        "chosen": chosen,
        "scope": scope,
        "scope_label": dict(scopes)[scope],
        "report": report,
        "headline": headline,
        "alpha_ci": rows.alpha_ci,
        "alpha_ci_reason": rows.alpha_ci_reason,
        "chart": chart,
        "categories": categories,
        "category_notes": category_notes.reasons,
        "pairs": pairs,
        "pair_notes": pair_notes.reasons,
        "annotators": annotators,
    }
    ctx.update(_confusion(request, study, chosen["key"], scope, level, annotators))
    return ctx


def _before_after(result: dict[str, Any], labels: dict[str, str], notes: Notes) -> list[dict[str, Any]]:
    """Each revealed round's blind and after-discussion kappa and alpha, per dimension."""
    discussed = result.get("discussed") or {}
    rows = []
    for d in result["dimensions"]:
        for number, after in discussed.get(d["key"], {}).items():
            blind = d["reports"].get(number)
            if blind is None:
                continue
            rows.append(
                {
                    "dimension": d["key"],
                    "name": d["name"],
                    "round": number,
                    "label": labels.get(number, number),
                    **{
                        f"{phase}_{short}": notes.figure(overall(report, metric))
                        for phase, report in (("blind", blind), ("discussed", after))
                        for short, metric in (("kappa", "cohen_kappa"), ("alpha", "krippendorff_alpha"))
                    },
                }
            )
    return rows


def _category_names(index: CodebookIndex, dimension_key: str) -> dict[str, str]:
    """Category key → path of names in the current codebook (keys of deleted categories stay keys)."""
    try:
        return {c.key: index.path(c.id) for c in index.categories_of(dimension_key, active_only=False)}
    except LookupError:
        return {}


def _confusion(
    request: HtmxHttpRequest,
    study: Study,
    dimension: str,
    scope: str,
    level: int | None,
    annotators: list[str],
) -> dict[str, Any]:
    if len(annotators) < 2:
        return {"confusion": None}
    a = request.GET.get("a") or annotators[0]
    b = request.GET.get("b") or annotators[1]
    round_number = _round(scope)
    base = {"confusion_a": a, "confusion_b": b}
    if a == b:
        return {**base, "confusion": None, "confusion_error": "Pick two different annotators."}
    try:
        matrix = services.confusion_counts(study, dimension, round_number=round_number, level=level, a=a, b=b)
    except RatingsError as exc:
        return {**base, "confusion": None, "confusion_error": str(exc)}
    cell_url = reverse("agreement:cell-items", args=[study.slug])
    rows = []
    for r, row_name in enumerate(matrix.names):
        cells = []
        for c, column_name in enumerate(matrix.names):
            count = matrix.counts[r][c]
            query = urlencode(
                {
                    "dimension": dimension,
                    "round": scope,
                    "level": level or "",
                    "a": a,
                    "b": b,
                    "row": row_name,
                    "col": column_name,
                }
            )
            cells.append(
                {"count": count, "diagonal": r == c, "url": f"{cell_url}?{query}" if count else None}
            )
        rows.append({"label": matrix.labels[r], "cells": cells})
    return {
        **base,
        "confusion": {
            "columns": list(matrix.labels),
            "rows": rows,
            "total": sum(map(sum, matrix.counts)),
            "agreeing": sum(matrix.counts[k][k] for k in range(len(matrix.names))),
            "sets": matrix.sets,
            "version": matrix.version,
        },
    }


@login_required
@require_POST
def compute(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    """Recompute the dashboard at the posted level (now, or in the background for a large study)."""
    study, _ = access_study(request.user, slug, lead=True)
    level = _level(request.POST.get("level"))
    services.request_dashboard(study, level, actor=_actor(request))
    return redirect(_dashboard_url(study.slug, level=level))


@login_required
@require_GET
def progress(request: HtmxHttpRequest, slug: str, pk: int) -> HttpResponse:
    """The progress of a background computation; once it has finished, htmx reloads the dashboard."""
    study, role = access_study(request.user, slug, lead=True)
    snapshot = get_object_or_404(AgreementSnapshot.objects.filter(study=study), pk=pk)
    if snapshot.is_finished and is_htmx(request):
        return HttpResponseClientRefresh()
    return render(
        request,
        "agreement/dashboard.html#snapshot-progress",
        study_context(study, role, "agreement", running=snapshot, level=snapshot.level),
    )


@login_required
@require_GET
def cell_items(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    """The items counted in one cell of the confusion matrix (lead only)."""
    study, role = access_study(request.user, slug, lead=True)
    params = request.GET
    level = _level(params.get("level"))
    scope = params.get("round", ALL_ROUNDS)
    ctx = study_context(
        study,
        role,
        "agreement",
        level=level,
        a=params.get("a", ""),
        b=params.get("b", ""),
        back=_dashboard_url(
            study.slug,
            level=level,
            dimension=params.get("dimension"),
            round=scope,
            a=params.get("a"),
            b=params.get("b"),
        ),
    )
    try:
        ratings, table, _, found = services.cell_items(
            study,
            params.get("dimension", ""),
            round_number=_round(scope),
            level=level,
            a=params.get("a", ""),
            b=params.get("b", ""),
            row=params.get("row", ""),
            column=params.get("col", ""),
        )
    except RatingsError as exc:
        return render(request, "agreement/cell_items.html", {**ctx, "error": str(exc)}, status=400)
    ctx.update(
        dimension=table.dimension,
        scope_label="all rounds" if _round(scope) is None else f"round {scope}",
        row_label=services.value_label(ratings, table.labels, params["row"]),
        column_label=services.value_label(ratings, table.labels, params["col"]),
        found=found,
        version=ratings.codebook_version,
    )
    return render(request, "agreement/cell_items.html", ctx)
