"""Pages of the corpus: an item, the import page, an import job and its progress.

Each view loads through `access_study` (404 for non-members, 403 when a lead page is asked of an
annotator), validates with a form, calls a service and renders the page, or its partial when htmx
asks for one.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from apps.accounts.models import Study, User
from apps.accounts.permissions import LEAD_ROLES, access_study
from apps.core.context import study_context
from apps.core.htmx import is_htmx, render_page
from apps.core.http import HtmxHttpRequest
from apps.core.jobs import display_status, is_stalled

from .forms import IMPORT_FORMS, ImportForm, allowed_sites
from .models import ImportJob, ImportKind, Item
from .screening import PRESETS
from .services import ensure_rendered, resend_import, restart_import, submit_import
from .services.links import LinkError, add_manual_link, read_github_link, remove_link

HISTORY_SIZE = 50
QUEUE_PATIENCE = timedelta(seconds=30)


# --- items -------------------------------------------------------------------------------------------


@login_required
@require_GET
def item_detail(request: HtmxHttpRequest, slug: str, pk: int) -> HttpResponse:
    study, role = access_study(request.user, slug)
    item = get_object_or_404(Item.objects.in_study(study), pk=pk)
    ensure_rendered(item)
    siblings = Item.objects.in_study(study).values_list("id", flat=True)
    ctx = study_context(
        study,
        role,
        "items",
        item=item,
        comments=item.comments.all(),
        manage_links=role in LEAD_ROLES,
        prev_id=siblings.filter(id__lt=pk).order_by("-id").first(),
        next_id=siblings.filter(id__gt=pk).order_by("id").first(),
    )
    return render(request, "corpus/item_detail.html", ctx)


@login_required
@require_POST
def item_link_add(request: HtmxHttpRequest, slug: str, pk: int) -> HttpResponse:
    """A lead adds a pull request or commit to the item's fix evidence by its URL (provenance manual)."""
    study, _role = access_study(request.user, slug, lead=True)
    item = get_object_or_404(Item.objects.in_study(study), pk=pk)
    user = request.user if isinstance(request.user, User) else None
    try:
        link = add_manual_link(item, request.POST.get("url", ""), user, read_github_link)
    except LinkError as exc:
        messages.error(request, f"Link not added: {exc}")
    else:
        messages.success(request, f"Linked {link.url}." + (f" {link.note}" if link.note else ""))
    return redirect(reverse("corpus:item-detail", args=[study.slug, item.pk]) + "#fix-pane")


@login_required
@require_POST
def item_link_remove(request: HtmxHttpRequest, slug: str, pk: int, link_id: int) -> HttpResponse:
    study, _role = access_study(request.user, slug, lead=True)
    item = get_object_or_404(Item.objects.in_study(study), pk=pk)
    try:
        remove_link(item, link_id)
    except LinkError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, "Link removed.")
    return redirect(reverse("corpus:item-detail", args=[study.slug, item.pk]) + "#fix-pane")


# --- imports -----------------------------------------------------------------------------------------


@login_required
@require_http_methods(["GET", "POST"])
def import_page(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    """Pick a source, fill its options, start; below, the history of the study's imports."""
    study, role = access_study(request.user, slug, lead=True)
    if is_htmx(request, target="import-history"):
        return render(request, "corpus/import.html#import-history", _history_context(study, role))
    kind = request.POST.get("kind") or request.GET.get("source") or ImportKind.FILE
    if kind not in IMPORT_FORMS:
        kind = ImportKind.FILE
    status = 200
    if request.method == "POST":
        form: ImportForm = IMPORT_FORMS[kind](request.POST, request.FILES)
        if form.is_valid():
            user = request.user if isinstance(request.user, User) else None
            upload = form.upload()
            try:
                job = submit_import(
                    study,
                    form.params(),
                    user=user,
                    upload_name=upload.name if upload else None,
                    chunks=upload.chunks() if upload else None,
                )
            except ValueError as exc:
                form.add_error(None, str(exc))
            else:
                return redirect("corpus:import-job", slug=study.slug, pk=job.pk)
        status = 400
    else:
        form = IMPORT_FORMS[kind]()
    ctx = _history_context(study, role)
    ctx.update(
        form=form,
        kind=kind,
        kinds=ImportKind.choices,
        presets=[PRESETS[name] for name in sorted(PRESETS)],
        github_fills=[{"label": fill["label"], "json": json.dumps(fill)} for fill in GITHUB_PRESET_FILLS],
        tosem_fill=json.dumps(TOSEM_FILLS[kind]) if kind in TOSEM_FILLS else "",
        max_upload_mb=int(settings.MAX_IMPORT_UPLOAD_BYTES) // (1024 * 1024),
        jira_sites=allowed_sites("JIRA_API_URLS"),
        url_only=Item.objects.in_study(study).url_only().count() if kind == ImportKind.HYDRATE else None,
    )
    return render(request, "corpus/import.html", ctx, status=status)


# What the TOSEM 2023 buttons fill in on the GitHub form (corpus.js sets the fields by name): the
# repository and API-side filters the mining script used; the rest of each rule set is the preset.
GITHUB_PRESET_FILLS: list[dict[str, str]] = [
    {"label": "horovod", "repo": "horovod/horovod", "preset": "tosem23-github-horovod", "labels": ""},
    {"label": "keras", "repo": "keras-team/keras", "preset": "tosem23-github-keras", "labels": ""},
    {
        "label": "pytorch",
        "repo": "pytorch/pytorch",
        "preset": "tosem23-github-pytorch",
        "labels": "module: ddp",
    },
    {
        "label": "tensorflow",
        "repo": "tensorflow/tensorflow",
        "preset": "tosem23-github-tensorflow",
        "labels": "type:others",
    },
]
for _fill in GITHUB_PRESET_FILLS:
    _fill.update(mode="repo", state="closed", keywords="")
TOSEM_FILLS: dict[str, dict[str, Any]] = {
    ImportKind.STACKEXCHANGE: {
        "tagged": "tensorflow pytorch keras horovod",
        "match": "any",
        "accepted_only": True,
        "preset": "tosem23-stackoverflow",
        "keywords": "",
    },
    ImportKind.SO_DUMP: {
        "accepted_only": True,
        "preset": "tosem23-stackoverflow",
        "keywords": "",
        "tags": "",
    },
}


def _history_context(study: Study, role: str) -> dict[str, Any]:
    jobs = list(ImportJob.objects.filter(study=study).select_related("created_by")[:HISTORY_SIZE])
    rows = [{"job": job, "status": display_status(job)} for job in jobs]
    active = any(row["status"] in ("queued", "running") for row in rows)
    return study_context(study, role, "import", history=rows, history_active=active)


@login_required
@require_GET
def import_job(request: HtmxHttpRequest, slug: str, pk: int) -> HttpResponse:
    """One import: progress (its partial polls itself every second until the job ends), counts, errors."""
    study, role = access_study(request.user, slug, lead=True)
    job = get_object_or_404(ImportJob.objects.filter(study=study).select_related("created_by"), pk=pk)
    resend_import(job)  # the broker was down when it started: try again while the page polls
    status = display_status(job)
    ctx = study_context(
        study,
        role,
        "import",
        job=job,
        status=status,
        polling=status in ("queued", "running"),
        can_restart=status in ("failed", "cancelled", "stalled"),
        filtered_by=sorted(job.filtered_by.items()),
        options=_options(job.params),
        stalled=is_stalled(job),
        waiting_for_worker=status == "queued" and timezone.now() - job.created_at > QUEUE_PATIENCE,
    )
    return render_page(request, "corpus/import_job.html", ctx, partial="#job-progress")


def _options(params: dict[str, Any]) -> list[tuple[str, str]]:
    """A job's options as (name, text) for display; empty ones left out."""
    shown = []
    for key, value in params.items():
        if value in (None, "", [], False):
            continue
        if isinstance(value, list):
            text = ", ".join(str(v) for v in value[:50]) + (
                f" … ({len(value)} in all)" if len(value) > 50 else ""
            )
        elif value is True:
            text = "yes"
        else:
            text = str(value)
        shown.append((key.replace("_", " "), text))
    return shown


@login_required
@require_POST
def import_restart(request: HtmxHttpRequest, slug: str, pk: int) -> HttpResponse:
    study, _role = access_study(request.user, slug, lead=True)
    job = get_object_or_404(ImportJob.objects.filter(study=study), pk=pk)
    user = request.user if isinstance(request.user, User) else None
    try:
        new = restart_import(job, user)
    except ValueError as exc:
        return HttpResponse(str(exc), status=409, content_type="text/plain")
    return redirect("corpus:import-job", slug=study.slug, pk=new.pk)
