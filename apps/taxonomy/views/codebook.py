"""The codebook page (editor for leads, read-only with definitions for annotators), its trees region,
downloads, and loading a file in the browser."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods

from apps.accounts.models import Study
from apps.accounts.permissions import LEAD_ROLES, access_study
from apps.core.context import study_context
from apps.core.generations import study_figures
from apps.core.http import HtmxHttpRequest

from .. import services
from ..codebook_spec import CodebookError, Format, format_of, parse_codebook
from ..forms import LoadForm
from ..index import CodebookIndex, DimensionInfo
from ..loading import EXPORT_FORMATS, export_codebook, load_codebook
from ..models import CategoryStatus, Codebook
from ..services import CodebookEditError
from .common import download, user_of


def _condition_text(index: CodebookIndex, dimension: DimensionInfo) -> str:
    if dimension.applies_when_category_id is None:
        return ""
    on = index.category(dimension.applies_when_category_id)
    return f"{index.dimension(on.dimension_id).name} is {index.path(on.id)}"


def _trees(
    index: CodebookIndex, *, lead: bool, user_id: int, counts: dict[int, tuple[int, int]], link: str
) -> list[Any]:
    """Each dimension's categories as rows; `link` + id + "/" is a category's page (a `{% url %}` for each
    of a thousand categories, twice, cost 8-10 ms of the page)."""
    trees = []
    for dimension in index.dimensions:
        if lead:
            options = [(c, index.depth(c.id)) for c in index.categories_of(dimension.key)]
        else:
            options = index.options(dimension.key, user_id)
        rows = [
            {
                "c": c,
                "url": f"{link}{c.id}/",
                "depth": depth,
                "labels": counts.get(c.id, (0, 0))[0],
                "gold": counts.get(c.id, (0, 0))[1],
            }
            for c, depth in options
        ]
        gone = []
        if lead:
            for c in index.categories_of(dimension.key, active_only=False):
                if c.status in (CategoryStatus.RETIRED, CategoryStatus.MERGED):
                    target = index.path(c.merged_into_id) if c.merged_into_id else ""
                    gone.append(
                        {"c": c, "url": f"{link}{c.id}/", "path": index.path(c.id), "merged_into": target}
                    )
        trees.append(
            {
                "dimension": dimension,
                "condition": _condition_text(index, dimension),
                "rows": rows,
                "gone": gone,
            }
        )
    return trees


def _category_link(study: Study) -> str:
    """A category's page is this and its id and a slash."""
    return reverse("taxonomy:category", args=[study.slug, 0]).removesuffix("0/")


def _codebook_context(request: HtmxHttpRequest, study: Study, role: str) -> dict[str, Any]:
    user = user_of(request)
    lead = role in LEAD_ROLES
    index = CodebookIndex.for_study(study)
    counts: dict[int, tuple[int, int]] = {}
    book = Codebook(pk=index.codebook_id) if index.codebook_id else None
    if lead and book is not None:  # every label value of the study counted: cached while nothing changes
        counts = study_figures(study, f"taxonomy.label_counts:{book.pk}", lambda: services.label_counts(book))
    proposals = sum(1 for c in index.categories.values() if c.is_proposed)
    retired_dimensions = [d for d in index.all_dimensions if d.retired] if lead else []
    return study_context(
        study,
        role,
        "codebook",
        index=index,
        trees=_trees(index, lead=lead, user_id=user.pk, counts=counts, link=_category_link(study)),
        open_proposals=proposals,
        retired_dimensions=retired_dimensions,
        formats=EXPORT_FORMATS,
    )


@login_required
@require_GET
def codebook(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    """The codebook: the editor for leads, the read-only codebook with definitions for annotators."""
    study, role = access_study(request.user, slug)
    return render(request, "taxonomy/codebook.html", _codebook_context(request, study, role))


@login_required
@require_GET
def trees(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    """The trees region alone: it refreshes itself on ``codebook-changed``."""
    study, role = access_study(request.user, slug)
    return render(request, "taxonomy/codebook.html#trees", _codebook_context(request, study, role))


@login_required
@require_GET
def export(request: HtmxHttpRequest, slug: str, fmt: str) -> HttpResponse:
    """Download the active codebook as JSON, YAML or Markdown (label counts for leads only)."""
    study, role = access_study(request.user, slug)
    if fmt not in EXPORT_FORMATS:
        raise Http404("Unknown format.")
    text = export_codebook(study, fmt, counts=role in LEAD_ROLES)
    version = services.current_version(study)
    return download(text, fmt, f"{study.slug}-codebook-v{version}")


@login_required
@require_http_methods(["GET", "POST"])
def load(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    """Upload a codebook file: first a preview of the changes (a dry run), then apply them."""
    study, role = access_study(request.user, slug, lead=True)
    form = LoadForm(request.POST or None, request.FILES or None)
    preview = None
    text = ""
    fmt: Format = "json"
    status = 200
    if request.method == "POST":
        status = 422
        if form.is_valid():
            upload = form.cleaned_data["file"]
            try:
                if upload is not None:
                    fmt = format_of(upload.name)
                    try:
                        text = upload.read().decode("utf-8")
                    except UnicodeDecodeError:
                        raise CodebookError("", f"{upload.name} is not UTF-8 text") from None
                else:
                    text = form.cleaned_data["text"].lstrip("\n")
                    fmt = "yaml" if form.cleaned_data["format"] == "yaml" else "json"
                spec = parse_codebook(text, fmt)
                apply = request.POST.get("apply") == "1" and upload is None
                result = load_codebook(
                    study, spec, actor=user_of(request), dry_run=not apply, note="loaded in the browser"
                )
            except (CodebookError, CodebookEditError) as exc:
                form.add_error(None, f"Codebook refused, nothing written: {exc}")
            else:
                if result.dry_run:
                    preview = result
                    status = 200
                else:
                    messages.success(
                        request,
                        f"Loaded: {len(result.lines())} change(s), now version {result.version}."
                        if result.changed
                        else "The file matches the codebook: nothing changed.",
                    )
                    return redirect("taxonomy:codebook", study.slug)
    ctx = study_context(study, role, "codebook", form=form, preview=preview, text=text, fmt=fmt)
    return render(request, "taxonomy/load.html", ctx, status=status)
