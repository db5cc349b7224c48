"""The agreement dashboard's tables as files (lead only): ``agreement/tables/<table>.<csv|md|tex>`` with
the dashboard's ``dimension``, ``round``, ``level`` (and ``a``, ``b`` for the confusion matrix).

A table is built from the same snapshot the dashboard shows (recomputed first when the dashboard would
be), through `tables`, so a download always holds the page's figures.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.views.decorators.http import require_GET

from apps.accounts.models import Study
from apps.accounts.permissions import access_study
from apps.core.http import HtmxHttpRequest
from apps.core.models import JobStatus
from apps.core.tables import CONTENT_TYPES, Table, render
from apps.taxonomy.index import CodebookIndex

from . import services, tables
from .dashboard_figures import category_names, level_param, round_param
from .models import AgreementSnapshot
from .services import ALL_ROUNDS, RatingsError
from .views import _actor


def current_snapshot(request: HtmxHttpRequest, study: Study, level: int | None) -> AgreementSnapshot | None:
    """The dashboard's snapshot at `level`, recomputed now when the dashboard would recompute it."""
    state = services.dashboard_state(study, level)
    if state.should_compute:
        computed = services.request_dashboard(study, level, actor=_actor(request))
        if computed.status == JobStatus.SUCCEEDED:
            return computed
    return state.snapshot


@login_required
@require_GET
def table(request: HtmxHttpRequest, slug: str, name: str, fmt: str) -> HttpResponse:
    study, _ = access_study(request.user, slug, lead=True)
    if name not in tables.TABLES or fmt not in CONTENT_TYPES:
        raise Http404("no such table or format: tables are summary, rounds, categories, pairs, confusion, "
                      "discussion; formats csv, md, tex")  # fmt: skip
    level = level_param(request.GET.get("level"))
    snapshot = current_snapshot(request, study, level)
    if snapshot is None or not snapshot.result.get("dimensions"):
        return HttpResponse(
            "No agreement computed yet for this level.", status=404, content_type="text/plain"
        )
    try:
        built = _build(request, study, snapshot, name, level)
    except RatingsError as exc:
        return HttpResponse(str(exc), status=400, content_type="text/plain")
    response = HttpResponse(render(built, fmt), content_type=CONTENT_TYPES[fmt])
    parts = [study.slug, "agreement", name, request.GET.get("dimension", ""), request.GET.get("round", "")]
    filename = "-".join(p for p in parts if p) + (f"-level{level}" if level else "") + f".{fmt}"
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def _build(
    request: HtmxHttpRequest, study: Study, snapshot: AgreementSnapshot, name: str, level: int | None
) -> Table:
    result = snapshot.result
    if name == "summary":
        return tables.summary_table(result)
    if name == "discussion":
        return tables.discussion_table(result)
    by_key = {d["key"]: d for d in result["dimensions"]}
    chosen = by_key.get(request.GET.get("dimension", ""), result["dimensions"][0])
    scope = request.GET.get("round", ALL_ROUNDS)
    if scope not in chosen["reports"]:
        scope = ALL_ROUNDS
    scope_label = "all rounds" if scope == ALL_ROUNDS else f"round {scope}"
    depth = f", level {level}" if level else ""
    if name == "rounds":
        periods = [
            (tables.round_label(r["number"], r.get("name", "")), chosen["reports"][str(r["number"])])
            for r in result["rounds"]
        ]
        periods.append((tables.ALL_ROUNDS_LABEL, chosen["reports"][ALL_ROUNDS]))
        return tables.rounds_table(f"{chosen['name']}: agreement by round{depth}", periods)
    report = chosen["reports"][scope]
    title = f"{chosen['name']}, {scope_label}{depth}"
    if name == "categories":
        names = category_names(CodebookIndex.for_study(study), chosen["key"])
        return tables.categories_table(f"{title}: per category", report, names)
    if name == "pairs":
        return tables.pairs_table(f"{title}: per annotator pair", report)
    a, b = request.GET.get("a", ""), request.GET.get("b", "")
    if not a or not b or a == b:
        raise RatingsError("the confusion matrix needs two different annotators: add ?a=NAME&b=NAME")
    matrix = services.confusion_counts(
        study, chosen["key"], round_number=round_param(scope), level=level, a=a, b=b
    )
    return tables.confusion_table(f"{title}: {a} (rows) by {b} (columns)", matrix.labels, matrix.counts, a, b)
