"""The history of changes and the codebook as it was at any version (from its snapshot)."""

from __future__ import annotations

import json
from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import Q, QuerySet
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from apps.accounts.models import Study, User
from apps.accounts.permissions import LEAD_ROLES, access_study
from apps.core.context import study_context
from apps.core.htmx import render_page
from apps.core.http import HtmxHttpRequest

from .. import services
from ..codebook_spec import codebook_from_data, dump_codebook
from ..models import ChangeKind, CodebookChange, CodebookVersion
from .common import described, download, user_of

PRIVATE_KINDS = (ChangeKind.PROPOSE, ChangeKind.REJECT)


def _visible_changes(study: Study, role: str, user: User) -> QuerySet[CodebookChange]:
    changes = CodebookChange.objects.filter(codebook__study=study)
    if role not in LEAD_ROLES:  # another annotator's proposals stay theirs until a lead accepts them
        changes = changes.exclude(Q(kind__in=PRIVATE_KINDS) & ~Q(actor=user))
    return changes.select_related("actor", "dimension", "category").order_by("-version", "-id")


@login_required
@require_GET
def history(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    """Every recorded change, newest first, and the list of versions."""
    study, role = access_study(request.user, slug)
    page = Paginator(_visible_changes(study, role, user_of(request)), 50).get_page(request.GET.get("page"))
    page.object_list = described(page.object_list, counts=role in LEAD_ROLES)
    versions = (
        CodebookVersion.objects.filter(codebook__study=study)
        .order_by("-number")
        .values("number", "created_at", "created_by__username")
    )
    ctx = study_context(study, role, "codebook", page=page, versions=versions)
    return render_page(request, "taxonomy/history.html", ctx, partial="#change-list")


def _flatten(categories: list[dict[str, Any]], depth: int = 1) -> list[tuple[int, dict[str, Any]]]:
    rows: list[tuple[int, dict[str, Any]]] = []
    for category in categories:
        rows.append((depth, category))
        rows.extend(_flatten(category.get("children", []), depth + 1))
    return rows


@login_required
@require_GET
def version_detail(request: HtmxHttpRequest, slug: str, version: int) -> HttpResponse:
    """The codebook as it was at `version` (from its snapshot) and the changes that made it."""
    study, role = access_study(request.user, slug)
    stored = get_object_or_404(
        CodebookVersion.objects.filter(codebook__study=study).select_related("created_by"), number=version
    )
    dimensions = [
        {**d, "rows": _flatten(d.get("categories", []))} for d in stored.snapshot.get("dimensions", [])
    ]
    changes = described(
        _visible_changes(study, role, user_of(request)).filter(version=version), counts=role in LEAD_ROLES
    )
    latest = services.current_version(study)
    ctx = study_context(
        study,
        role,
        "codebook",
        stored=stored,
        dimensions=dimensions,
        changes=changes,
        latest=latest,
        formats=("json", "yaml"),
    )
    return render(request, "taxonomy/version.html", ctx)


@login_required
@require_GET
def version_export(request: HtmxHttpRequest, slug: str, version: int, fmt: str) -> HttpResponse:
    study, _ = access_study(request.user, slug)
    stored = get_object_or_404(CodebookVersion.objects.filter(codebook__study=study), number=version)
    if fmt == "json":
        text = json.dumps(stored.snapshot, indent=2, ensure_ascii=False) + "\n"
    elif fmt == "yaml":
        text = dump_codebook(codebook_from_data(stored.snapshot), "yaml")
    else:
        raise Http404("Unknown format.")
    return download(text, fmt, f"{study.slug}-codebook-v{version}")
