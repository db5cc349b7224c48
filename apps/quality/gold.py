"""Gold checks and training rounds on the Quality screen (leads and owners, docs/quality.md): mark or unmark
gold items in bulk, seed N gold checks per annotator into a round, create a training round, and read the
training scores. Each view is an interface over `apps.annotation.services.gold`; a refused form shows the
screen again with its message and status 422 (the convention of docs/codebook.md).
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import Count, Q
from django.http import HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from apps.accounts.models import Role, Study, User
from apps.accounts.permissions import access_study
from apps.annotation.gold_score import Score
from apps.annotation.models import Assignment, AssignmentStatus, GoldItem, Round, RoundKind, RoundPhase
from apps.annotation.services import AnnotationError
from apps.annotation.services import gold as gold_services
from apps.core.http import HtmxHttpRequest


class GoldItemsForm(forms.Form):
    items = forms.CharField(widget=forms.Textarea, max_length=200_000)
    action = forms.ChoiceField(choices=[("mark", "mark"), ("unmark", "unmark")], required=False)
    next = forms.CharField(required=False, max_length=500)


class SeedForm(forms.Form):
    round = forms.IntegerField(min_value=1)
    per_annotator = forms.IntegerField(min_value=0, max_value=1000)
    seed = forms.IntegerField()


class TrainingForm(forms.Form):
    annotators = forms.CharField(max_length=2000)
    size = forms.IntegerField(min_value=1, max_value=1000)
    seed = forms.IntegerField()
    pass_mark = forms.IntegerField(min_value=1, max_value=100, required=False)
    name = forms.CharField(max_length=200, required=False)


def training_table(study: Study) -> list[dict[str, Any]]:
    """Per training round and annotator: done / total, the score and whether it reaches the pass mark."""
    scores = gold_services.training_scores(study)
    rounds = {r.pk: r for r in Round.objects.filter(study=study, kind=RoundKind.TRAINING)}
    progress = (
        Assignment.objects.filter(round_id__in=list(rounds))
        .values("round_id", "annotator_id", "annotator__username")
        .annotate(total=Count("id"), done=Count("id", filter=Q(status=AssignmentStatus.SUBMITTED)))
        .order_by("round_id", "annotator__username")
    )
    out = []
    for row in progress:
        round_ = rounds[row["round_id"]]
        score = scores.get((row["round_id"], row["annotator_id"])) or Score(0, 0)
        out.append(
            {
                "round": round_,
                "annotator": row["annotator__username"],
                "done": row["done"],
                "total": row["total"],
                "score": score,
                "passed": row["done"] == row["total"] and score.passes(round_.pass_mark),
            }
        )
    return out


def gold_context(study: Study) -> dict[str, Any]:
    """What the screen's Gold checks card shows (four queries and the training scores')."""
    return {
        "gold_count": GoldItem.objects.filter(study=study).count(),
        "gold_items": list(
            GoldItem.objects.filter(study=study).select_related("item").order_by("-marked_at")[:50]
        ),
        "seed_rounds": list(
            Round.objects.filter(study=study, phase=RoundPhase.BLIND)
            .exclude(kind=RoundKind.TRAINING)
            .values_list("number", flat=True)
        ),
        "annotators": sorted(
            User.objects.filter(memberships__study=study, memberships__role=Role.ANNOTATOR).values_list(
                "username", flat=True
            )
        ),
        "training": training_table(study),
    }


def _back(request: HtmxHttpRequest, study: Study, anchor: str = "gold") -> HttpResponse:
    return redirect(reverse("quality:quality", kwargs={"slug": study.slug}) + f"#{anchor}")


def _refused(request: HtmxHttpRequest, study: Study, role: str, message: str) -> HttpResponse:
    from .views import render_quality  # the screen's one renderer (views imports this module)

    return render_quality(request, study, role, status=422, gold_error=message)


@login_required
@require_POST
def gold_items(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    """Mark (or unmark) the items listed (ids or URLs, one per line or comma-separated) as gold checks.
    `next`, a path inside the site, brings the lead back to the item page they marked it from."""
    study, role = access_study(request.user, slug, lead=True)
    form = GoldItemsForm(request.POST)
    if not form.is_valid():
        return _refused(request, study, role, "List the items to mark: their ids or URLs.")
    refs = form.cleaned_data["items"].replace(",", "\n").splitlines()
    try:
        ids = gold_services.items_by_reference(study, refs)
        if form.cleaned_data["action"] == "unmark":
            n = gold_services.unmark_gold(study, ids)
            messages.success(request, f"Unmarked {n} gold item(s).")
        else:
            result = gold_services.mark_gold(study, ids, actor=request.user)  # type: ignore[arg-type]
            messages.success(request, f"Marked {result.marked} gold item(s) ({result.already} already were).")
    except gold_services.GoldError as exc:
        return _refused(request, study, role, str(exc))
    target = form.cleaned_data["next"]
    if target.startswith("/") and not target.startswith("//"):
        return redirect(target)
    return _back(request, study)


@login_required
@require_POST
def seed(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    """Seed gold checks into a round: each of its annotators gets them until they hold the number asked."""
    study, role = access_study(request.user, slug, lead=True)
    form = SeedForm(request.POST)
    if not form.is_valid():
        return _refused(request, study, role, "Give the round, the gold checks per annotator and a seed.")
    data = form.cleaned_data
    try:
        result = gold_services.seed_gold(
            study,
            data["round"],
            data["per_annotator"],
            seed=data["seed"],
            actor=request.user,  # type: ignore[arg-type]
        )
    except gold_services.GoldError as exc:
        return _refused(request, study, role, str(exc))
    added = ", ".join(f"{name} {n}" for name, n in result.seeded.items())
    messages.success(request, f"Seeded gold checks into {result.round}: {added}.")
    return _back(request, study)


@login_required
@require_POST
def training(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    """Create a training round of gold items for the annotators named, with an optional pass mark."""
    study, role = access_study(request.user, slug, lead=True)
    form = TrainingForm(request.POST)
    if not form.is_valid():
        return _refused(request, study, role, "Give the annotators, the items per annotator and a seed.")
    data = form.cleaned_data
    names = [n.strip() for n in data["annotators"].replace("\n", ",").split(",") if n.strip()]
    try:
        result = gold_services.create_training_round(
            study,
            names,
            data["size"],
            seed=data["seed"],
            pass_mark=data["pass_mark"],
            name=data["name"] or "",
            actor=request.user,  # type: ignore[arg-type]
        )
    except AnnotationError as exc:  # GoldError, or an annotator who is not a member
        return _refused(request, study, role, str(exc))
    messages.success(request, f"Created {result.round} for {', '.join(result.seeded)}.")
    return _back(request, study, "training")
