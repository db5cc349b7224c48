"""The Models screen (leads and owners only, docs/models.md): the study's model raters, adding one, runs
with their progress (polled), starting a run on a round, a seeded sample or the unlabelled items, and
cancelling it. Model outputs are shown to leads only: annotators get 403, non-members 404."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import Count
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST

from apps.accounts.models import Study, User
from apps.accounts.permissions import access_study
from apps.annotation.models import Round
from apps.core.context import study_context
from apps.core.htmx import is_htmx
from apps.core.http import HtmxHttpRequest
from apps.core.jobs import display_status

from .forms import RaterForm, RunForm
from .models import ModelRater, ModelRun, RaterKind
from .runs import cancel_model_run, create_model_run, request_model_run
from .services import RaterError, add_model_rater
from .suggestions import SuggestionError, round_switches, switch_suggestions

RUNS_SHOWN = 30


def _user(request: HtmxHttpRequest) -> User | None:
    return request.user if isinstance(request.user, User) else None


def run_row(run: ModelRun) -> dict[str, Any]:
    status = display_status(run)
    return {"run": run, "status": status, "polling": status in ("queued", "running")}


def _context(study: Study, role: str, **extra: Any) -> dict[str, Any]:
    raters = ModelRater.objects.of_study(study).annotate(n_answers=Count("answers"))
    runs = ModelRun.objects.filter(study=study).select_related("rater", "round", "created_by")[:RUNS_SHOWN]
    switches = round_switches(study)
    return study_context(
        study,
        role,
        "models",
        raters=raters,
        runnable=[r for r in raters if r.kind != RaterKind.IMPORTED],
        rounds=list(Round.objects.filter(study=study).values_list("number", flat=True)),
        suggestion_rounds=[
            {"round": r, "number": r.number, "rater": switches.get(r.number, "")}
            for r in Round.objects.filter(study=study).order_by("number")
        ],
        runs=[run_row(run) for run in runs],
        rater_form=extra.pop("rater_form", None) or RaterForm(),
        run_form=extra.pop("run_form", None) or RunForm(),
        **extra,
    )


@login_required
@require_GET
def models_page(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    study, role = access_study(request.user, slug, lead=True)
    return render(request, "raters/models.html", _context(study, role))


@login_required
@require_POST
def rater_add(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    study, role = access_study(request.user, slug, lead=True)
    form = RaterForm(request.POST)
    if form.is_valid():
        try:
            rater = add_model_rater(
                study, form.cleaned_data["name"], form.settings(), actor=_user(request), from_browser=True
            )
        except RaterError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"Model rater {rater.name} added.")
            return redirect("raters:models", slug=slug)
    return render(request, "raters/models.html", _context(study, role, rater_form=form), status=400)


@login_required
@require_POST
def run_start(request: HtmxHttpRequest, slug: str, pk: int) -> HttpResponse:
    study, role = access_study(request.user, slug, lead=True)
    rater = get_object_or_404(ModelRater.objects.filter(study=study), pk=pk)
    form = RunForm(request.POST)
    if form.is_valid():
        try:
            run = create_model_run(study, rater, actor=_user(request), **form.scope_kwargs())  # type: ignore[arg-type]
        except RaterError as exc:
            form.add_error(None, str(exc))
        else:
            request_model_run(run)
            messages.success(request, f"Run #{run.pk} of {rater.name} started.")
            return redirect("raters:models", slug=slug)
    return render(request, "raters/models.html", _context(study, role, run_form=form), status=400)


@login_required
@require_GET
def run_detail(request: HtmxHttpRequest, slug: str, pk: int) -> HttpResponse:
    """One run's row, what the page polls while the run is queued or running (htmx); the page otherwise."""
    study, role = access_study(request.user, slug, lead=True)
    run = get_object_or_404(ModelRun.objects.filter(study=study).select_related("rater", "round"), pk=pk)
    if is_htmx(request):
        return render(
            request, "raters/models.html#run-row", study_context(study, role, "models", row=run_row(run))
        )
    return render(request, "raters/models.html", _context(study, role))


@login_required
@require_POST
def run_cancel(request: HtmxHttpRequest, slug: str, pk: int) -> HttpResponse:
    study, _ = access_study(request.user, slug, lead=True)
    run = get_object_or_404(ModelRun.objects.filter(study=study), pk=pk)
    if cancel_model_run(run):
        messages.success(request, f"Run #{run.pk} is cancelled: it stops after the requests under way.")
    else:
        messages.info(request, f"Run #{run.pk} had already ended.")
    return redirect("raters:models", slug=slug)


@login_required
@require_POST
def suggestions_switch(request: HtmxHttpRequest, slug: str, number: int) -> HttpResponse:
    """Switch a labelling round's suggestions to a rater, or off (an empty `rater`)."""
    study, _ = access_study(request.user, slug, lead=True)
    actor = _user(request)
    assert actor is not None  # login_required
    name = request.POST.get("rater", "").strip() or None
    try:
        result = switch_suggestions(study, number, name, actor)
    except SuggestionError as exc:
        messages.error(request, str(exc))
    else:
        if result.rater is None:
            messages.success(request, f"{result.round} shows no suggestion.")
        else:
            messages.success(request, f"{result.round} shows {result.rater.name}'s labels as suggestions.")
    return redirect("raters:models", slug=slug)
