"""The Export screen (leads and owners only): options, preview, taxonomy counts, jobs and downloads.

Each view loads the study through `access_study(..., lead=True)` (404 for non-members, 403 for
annotators) and every job through `ExportJob.objects.for_lead(user)` scoped to that study, so a job id
from another study is a 404. The download serves only the file a succeeded job recorded under
EXPORT_ROOT, never a path from the request.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import FileResponse, Http404, HttpResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import trigger_client_event

from apps.accounts.models import Study
from apps.accounts.permissions import access_study
from apps.core.context import study_context
from apps.core.htmx import is_htmx, render_page
from apps.core.http import HtmxHttpRequest
from apps.core.jobs import display_status
from apps.taxonomy.index import CodebookIndex

from . import services
from .counts import CountTable, percent_text, share
from .forms import ExportForm
from .models import ExportJob
from .rows import ExportOptions

HISTORY_SIZE = 20
PREVIEW_ROWS = 10


def _query(options: ExportOptions) -> str:
    """The options as a query string (the stream link, the preview request)."""
    params: dict[str, Any] = {"format": options.format}
    if options.raw:
        params["raw"] = "on"
    for name in ("round", "provenance", "source", "level"):
        value = getattr(options, name)
        if value is not None:
            params[name] = value
    return urlencode(params)


def _job_rows(study: Study) -> list[dict[str, Any]]:
    jobs = ExportJob.objects.filter(study=study).select_related("created_by", "study")[:HISTORY_SIZE]
    return [_job_row(job) for job in jobs]


def _job_row(job: ExportJob) -> dict[str, Any]:
    status = display_status(job)
    return {
        "job": job,
        "status": status,
        "polling": status in ("queued", "running"),
        "downloadable": services.is_downloadable(job),
        "options": services.options_text(job),
    }


def _preview_context(study: Study, form: ExportForm) -> dict[str, Any]:
    if not form.is_valid() or form.options is None:
        return {"preview": None, "preview_form": form}
    options = form.options
    shown = options if options.format != "zip" else ExportOptions(format="csv")
    return {
        "preview": services.preview(study, shown, limit=PREVIEW_ROWS),
        "preview_form": form,
        "options": options,
        "stream_query": _query(replace(shown, format="csv")),
        "is_package": options.format == "zip",
    }


def _count_display(tables: list[CountTable]) -> list[dict[str, Any]]:
    """The count tables with their shares formatted, for the template."""
    out = []
    for table in tables:
        denominators = (*table.findings, table.total_findings)
        rows = []
        for row in table.rows:
            cells = [
                (n, percent_text(share(n, d)))
                for n, d in zip((*row.counts, row.total), denominators, strict=True)
            ]
            rows.append(
                {"depth": min(row.depth, 5), "name": row.name, "cells": cells[:-1], "total": cells[-1]}
            )
        out.append(
            {
                "name": table.name,
                "dimension": table.dimension,
                "sources": table.sources,
                "rows": rows,
                "findings": table.findings,
                "total_findings": table.total_findings,
            }
        )
    return out


@login_required
@require_GET
def export_page(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    """Options (a GET with options shows their preview), the preview, counts (loaded after) and jobs."""
    study, role = access_study(request.user, slug, lead=True)
    index = CodebookIndex.for_study(study)
    form = ExportForm(study, request.GET or {"format": "csv"}, index=index)
    ctx = study_context(
        study, role, "export", form=form, jobs=_job_rows(study), **_preview_context(study, form)
    )
    return render(request, "export/export.html", ctx)


@login_required
@require_GET
def export_preview(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    """The preview partial for the options in the query (htmx refreshes it when an option changes)."""
    study, role = access_study(request.user, slug, lead=True)
    form = ExportForm(study, request.GET)
    ctx = study_context(study, role, "export", **_preview_context(study, form))
    if is_htmx(request):
        return render(request, "export/export.html#preview", ctx)
    return redirect(f"{reverse('export:export', args=[study.slug])}?{request.GET.urlencode()}")


@login_required
@require_GET
def export_counts(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    """The taxonomy count tables of the current decisions (loaded after the page)."""
    study, role = access_study(request.user, slug, lead=True)
    ctx = study_context(study, role, "export", count_tables=_count_display(services.count_tables(study)))
    return render_page(request, "export/counts.html", ctx, partial="export/export.html#counts")


@login_required
@require_POST
def export_start(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    """Start an export job with the posted options (an archived study is still exported: it only reads)."""
    study, role = access_study(request.user, slug, lead=True, archived_ok=True)
    form = ExportForm(study, request.POST)
    if not form.is_valid() or form.options is None:
        ctx = study_context(study, role, "export", form=form, jobs=_job_rows(study), preview=None)
        return render_page(
            request, "export/export.html", ctx, partial="#options", status=400, partial_status=422
        )
    job = services.submit_export(study, form.options, user=request.user)  # type: ignore[arg-type]
    if is_htmx(request):
        job.refresh_from_db()
        response = render(
            request, "export/export.html#jobs", study_context(study, role, "export", jobs=_job_rows(study))
        )
        return trigger_client_event(response, "export-started", {"job": job.pk})
    messages.success(request, f"Export #{job.pk} started.")
    return redirect("export:job", slug=study.slug, pk=job.pk)


@login_required
@require_GET
def export_job(request: HtmxHttpRequest, slug: str, pk: int) -> HttpResponse:
    """One job: its row (htmx polls it every second until the job ends) or its page."""
    study, role = access_study(request.user, slug, lead=True)
    job = get_object_or_404(ExportJob.objects.for_lead(request.user).filter(study=study), pk=pk)
    services.resend_export(job)  # the broker was down when it started: try again while the page polls
    ctx = study_context(study, role, "export", row=_job_row(job))
    return render_page(request, "export/job.html", ctx, partial="export/export.html#job-row")


@login_required
@require_GET
def export_download(request: HtmxHttpRequest, slug: str, pk: int) -> HttpResponseBase:
    """The file of a succeeded job, as an attachment; 404 while it has none (the API answers 409)."""
    study, _ = access_study(request.user, slug, lead=True)
    job = get_object_or_404(ExportJob.objects.for_lead(request.user).filter(study=study), pk=pk)
    path = services.stored_path(job)
    if path is None or not services.is_downloadable(job):
        raise Http404(f"Export #{job.pk} is {job.status}: it has no file to download (yet).")
    response = FileResponse(
        path.open("rb"),
        as_attachment=True,
        filename=services.file_name(job),
        content_type=services.CONTENT_TYPES[job.format],
    )
    response["X-Content-SHA256"] = job.sha256
    return response


@login_required
@require_GET
def export_stream(request: HtmxHttpRequest, slug: str) -> HttpResponseBase:
    """A small study's CSV, streamed straight away (no job). Larger ones are sent back to the page."""
    study, _ = access_study(request.user, slug, lead=True)
    form = ExportForm(study, request.GET or {"format": "csv"})
    back = redirect("export:export", slug=study.slug)
    if not form.is_valid() or form.options is None:
        for field, errors in form.errors.items():
            for error in errors:
                messages.error(request, f"{field}: {error}" if field != "__all__" else str(error))
        return back
    try:
        pieces = services.stream_csv(study, form.options)
    except services.ExportOptionError as exc:
        messages.error(request, str(exc))
        return back
    response = StreamingHttpResponse(pieces, content_type=services.CONTENT_TYPES["csv"])
    response["Content-Disposition"] = f'attachment; filename="{study.slug}-export.csv"'
    return response
