"""The study's guidelines page: the current version (the lead's introduction and the codebook's
definitions, criteria and examples), every earlier version with what changed, publishing (leads) and
acknowledging (members). Taxonomy keeps the versions (`apps.taxonomy.guidelines`); the page lives here
because the introduction is rendered through corpus's sanitizer, which taxonomy may not import.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import Count
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.utils.safestring import SafeString, mark_safe
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from apps.accounts.models import Membership, Role, Study
from apps.accounts.permissions import LEAD_ROLES, access_study
from apps.core.context import study_context
from apps.core.http import HtmxHttpRequest
from apps.corpus.rendering import render_diff, render_markdown
from apps.taxonomy import guidelines
from apps.taxonomy.models import GuidelinesAcknowledgement, GuidelinesVersion

from .common import request_user


class PublishForm(forms.Form):
    introduction = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 12}),
        max_length=guidelines.MAX_INTRODUCTION,
        help_text="Markdown: how to read an item, when to mark a dimension pending, whom to ask. Rendered "
        "through the same sanitizer as item bodies.",
    )
    note = forms.CharField(required=False, max_length=300, help_text="What changed, in a line (optional).")


def _safe(html: str) -> SafeString:
    return mark_safe(html)  # the output of corpus.rendering's strict sanitizer


def _version_context(version: GuidelinesVersion | None, study: Study) -> dict[str, Any]:
    if version is None:
        return {"version": None, "codebook": guidelines.live_codebook_data(study), "introduction": ""}
    return {
        "version": version,
        "codebook": guidelines.codebook_data(version),
        "introduction": _safe(render_markdown(version.introduction)) if version.introduction else "",
    }


def _readers(study: Study, version: GuidelinesVersion) -> dict[str, Any]:
    """For leads: which annotators have acknowledged the version, and which have not yet."""
    annotators = list(
        Membership.objects.filter(study=study, role=Role.ANNOTATOR)
        .order_by("user__username")
        .values_list("user_id", "user__username")
    )
    read = dict(
        GuidelinesAcknowledgement.objects.filter(version=version).values_list("user_id", "acknowledged_at")
    )
    return {
        "read": [(name, read[uid]) for uid, name in annotators if uid in read],
        "unread": [name for uid, name in annotators if uid not in read],
    }


@login_required
@require_http_methods(["GET", "POST"])
def guidelines_page(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    """The current guidelines for every member; leads publish the next version from here."""
    lead = request.method == "POST"
    study, role = access_study(request.user, slug, lead=lead)
    user = request_user(request)
    current = guidelines.current(study)
    form = PublishForm(
        request.POST if lead else None, initial={"introduction": current.introduction if current else ""}
    )
    if lead and form.is_valid():
        try:
            version = guidelines.publish(
                study, form.cleaned_data["introduction"], actor=user, note=form.cleaned_data["note"]
            )
        except guidelines.GuidelinesError as exc:
            form.add_error("introduction", str(exc))
        else:
            messages.success(request, f"Guidelines version {version.number} published.")
            return redirect("annotation:guidelines", slug=study.slug)
    is_lead = role in LEAD_ROLES
    ctx = study_context(
        study,
        role,
        "guidelines",
        form=form if is_lead else None,
        versions=GuidelinesVersion.objects.for_study(study).annotate(n_read=Count("acknowledgements")),
        acknowledged=current is not None and guidelines.acknowledged(current, user),
        readers=_readers(study, current) if is_lead and current is not None else None,
        **_version_context(current, study),
    )
    return render(request, "annotation/guidelines.html", ctx, status=400 if form.errors else 200)


@login_required
@require_GET
def guidelines_version(request: HtmxHttpRequest, slug: str, number: int) -> HttpResponse:
    """One published version as its readers saw it, and what changed since the version before."""
    study, role = access_study(request.user, slug)
    version = GuidelinesVersion.objects.filter(study=study, number=number).first()
    if version is None:
        raise Http404(f"Study {study.slug} has no guidelines version {number}.")
    previous = GuidelinesVersion.objects.filter(study=study, number=number - 1).first()
    change = guidelines.diff(previous, version) if previous is not None else None
    ctx = study_context(
        study,
        role,
        "guidelines",
        previous=previous,
        patch=_safe(render_diff(change.introduction_patch)) if change and change.introduction_patch else "",
        codebook_changes=change.codebook_changes if change else [],
        **_version_context(version, study),
    )
    return render(request, "annotation/guidelines_version.html", ctx)


@login_required
@require_POST
def acknowledge(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    """Record that the user has read the current version (the posted `version` must still be current)."""
    study, _ = access_study(request.user, slug)
    current = guidelines.current(study)
    posted = request.POST.get("version", "")
    if current is None or posted != str(current.number):
        messages.error(request, "The guidelines changed while you were reading: read the current version.")
        return redirect("annotation:guidelines", slug=study.slug)
    guidelines.acknowledge(current, request_user(request))
    messages.success(request, f"Thank you: you have read version {current.number} of the guidelines.")
    return redirect("annotation:queue", slug=study.slug)
