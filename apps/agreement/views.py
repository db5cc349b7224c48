"""The agreement dashboard (lead only): figures per dimension and round, across rounds, per category, per
annotator pair, and a confusion matrix whose cells open the items behind them.

Figures come from the latest `AgreementSnapshot` at the requested tree level. When the labels or the
codebook changed since (or there is none), a small study is recomputed on the request; a large one is
computed in the background and the page polls its progress (`services.request_dashboard`), showing the
last figures as updating, as it does while a worker counts a large study's changed labels
(`dashboard_check`).
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import HttpResponseClientRefresh

from apps.accounts.models import User
from apps.accounts.permissions import access_study
from apps.annotation.models import Round
from apps.core.context import study_context
from apps.core.htmx import is_htmx, render_page
from apps.core.http import HtmxHttpRequest
from apps.core.models import JobStatus
from apps.taxonomy.index import CodebookIndex

from . import dashboard_figures as page
from . import services
from .models import AgreementSnapshot
from .models_report import comparison_rows, model_pair_rows, models_agreement
from .services import ALL_ROUNDS, RatingsError


@login_required
@require_GET
def models_comparison(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    """Each model rater against the people, the other models and the gold decisions, on all rounds or one
    (``?round=N``) and at a level of the tree (``?level=D``). Leads only: a model's output is never an
    annotator's to see. Computed on request from the current labels."""
    study, role = access_study(request.user, slug, lead=True)
    index = CodebookIndex.for_study(study)
    names = {d.key: d.name for d in index.dimensions}
    level = page.level_param(request.GET.get("level"))
    round_text = request.GET.get("round", "")
    round_number = int(round_text) if round_text.isdigit() else None
    rounds = list(Round.objects.filter(study=study).order_by("number").values_list("number", flat=True))
    if round_number is not None and round_number not in rounds:
        raise Http404(f"Study {study.slug} has no round {round_number}.")
    report: dict[str, Any] = {}
    if index.dimensions:
        report = models_agreement(study, index, round_number=round_number, level=level)
    ctx = study_context(
        study,
        role,
        "agreement",
        rows=comparison_rows(report, names) if report else [],
        pairs=model_pair_rows(report, names) if report else [],
        rounds=rounds,
        round_number=round_number,
        level=level,
        levels=range(1, page.tree_depth(index) + 1),
        bootstrap=report.get("bootstrap"),
    )
    return render(request, "agreement/models.html", ctx)


def _actor(request: HtmxHttpRequest) -> User | None:
    return request.user if isinstance(request.user, User) else None


@login_required
@require_GET
def dashboard(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    study, role = access_study(request.user, slug, lead=True)
    level = page.level_param(request.GET.get("level"))
    index = CodebookIndex.for_study(study)
    state = services.dashboard_state(study, level, wait=False)
    snapshot, running, failed, fresh = state.snapshot, state.running, state.failed, state.fresh
    if state.checking:  # the last figures, marked as updating, while a worker counts the labels
        services.count_fingerprint_soon(study)
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
        levels=page.levels(index, study.slug),
        snapshot=snapshot,
        running=running,
        failed=failed,
        fresh=fresh,
        checking=state.checking,
        large=state.large,
        current_version=index.version,
    )
    if snapshot is not None and snapshot.result.get("dimensions"):
        # While the labels are being counted or the figures recomputed, the confusion matrix (counted from
        # the current labels) comes after the page.
        deferred = not fresh and not is_htmx(request, target="confusion")
        ctx.update(page.figures(request, study, snapshot, level, index, defer_confusion=deferred))
        return render_page(request, "agreement/dashboard.html", ctx, partial="#confusion", target="confusion")
    return render(request, "agreement/dashboard.html", ctx)


# How many polls (2 s apart) the page waits for a worker to count the labels before counting them itself.
CHECK_POLLS = 5


@login_required
@require_GET
def dashboard_check(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    """Polled while the dashboard shows its last figures as updating: reloads the page once the labels
    are counted (`services.count_fingerprint_soon`), or counts them itself after `CHECK_POLLS` polls (no
    worker answered)."""
    study, role = access_study(request.user, slug, lead=True)
    given = request.GET.get("polls", "")
    polls = int(given) if given.isdigit() else 0
    if polls >= CHECK_POLLS:
        services.fingerprint(study)
    if services.known_fingerprint(study) is not None:
        return HttpResponseClientRefresh()
    ctx = study_context(study, role, "agreement", checking=True, polls=polls + 1)
    return render(request, "agreement/dashboard.html#fingerprint-check", ctx)


@login_required
@require_POST
def compute(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    """Recompute the dashboard at the posted level (now, or in the background for a large study); an
    archived study's figures can still be computed: that reads its labels."""
    study, _ = access_study(request.user, slug, lead=True, archived_ok=True)
    level = page.level_param(request.POST.get("level"))
    services.request_dashboard(study, level, actor=_actor(request))
    return redirect(page.dashboard_url(study.slug, level=level))


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
    level = page.level_param(params.get("level"))
    scope = params.get("round", ALL_ROUNDS)
    ctx = study_context(
        study,
        role,
        "agreement",
        level=level,
        a=params.get("a", ""),
        b=params.get("b", ""),
        back=page.dashboard_url(
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
            round_number=page.round_param(scope),
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
        scope_label="all rounds" if page.round_param(scope) is None else f"round {scope}",
        row_label=services.value_label(ratings, table.labels, params["row"]),
        column_label=services.value_label(ratings, table.labels, params["col"]),
        found=found,
        version=ratings.codebook_version,
    )
    return render(request, "agreement/cell_items.html", ctx)
