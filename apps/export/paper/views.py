"""The Paper screen (leads and owners only): saturation, cross-tabulation, figures and the methods
section, each downloadable (docs/paper.md).

Views parse the query, call `data` / `artifacts` / `facts`, and respond; a request the study's data
cannot answer gets a 400 with the reason in plain words.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse, QueryDict
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from apps.accounts.models import Study, User
from apps.accounts.permissions import access_study
from apps.core.context import study_context
from apps.core.http import HtmxHttpRequest
from apps.core.tables import CONTENT_TYPES
from apps.corpus.models import Item
from apps.export.package.build import agreement_data
from apps.taxonomy.index import CodebookIndex
from apps.taxonomy.models import CodebookVersion

from . import artifacts, data, evolution, methods
from . import crosstab as ct
from . import saturation as sat
from .facts import methods_data
from .figures import FIGURES, FORMATS

FIGURE_TYPES = {"svg": "image/svg+xml", "pdf": "application/pdf"}
CROSSTAB_TYPES = {**CONTENT_TYPES, "json": "application/json"}
METHODS_TYPES = {"md": CONTENT_TYPES["md"], "tex": CONTENT_TYPES["tex"], "bib": "application/x-bibtex"}


def _int(params: QueryDict, name: str, default: int | None) -> int | None:
    text = params.get(name, "")
    if not text:
        return default
    if not text.isdigit():
        raise data.PaperError(f"{name} must be a whole number, got {text!r}")
    return int(text)


def _share(params: QueryDict) -> float:
    text = params.get("threshold", "")
    try:
        return float(text) if text else sat.DEFAULT_THRESHOLD
    except ValueError:
        raise data.PaperError(
            f"threshold must be a share between 0 and 1 such as 0.05, got {text!r}"
        ) from None


def _saturation(study: Study, params: QueryDict, index: CodebookIndex) -> data.Saturation:
    return data.saturation(
        study,
        params.get("dimension") or index.dimensions[0].key,
        base=_int(params, "base", sat.DEFAULT_BASE) or 0,
        run=_int(params, "run", sat.DEFAULT_RUN) or 0,
        threshold=_share(params),
        index=index,
    )


def _crosstab(study: Study, params: QueryDict, index: CodebookIndex) -> ct.CrossTab:
    keys = [d.key for d in index.dimensions]
    return data.crosstab(
        study,
        rows=params.get("rows") or keys[0],
        rows_level=_int(params, "rows_level", None),
        cols=params.get("cols") or (keys[1] if len(keys) > 1 else "source"),
        cols_level=_int(params, "cols_level", None),
        labels=params.get("labels") or data.GOLD,
        index=index,
    )


def _url(name: str, slug: str, *args: str, **params: Any) -> str:
    query = urlencode({k: v for k, v in params.items() if v not in (None, "")})
    return reverse(name, args=[slug, *args]) + (f"?{query}" if query else "")


def _error(exc: data.PaperError) -> HttpResponse:
    return HttpResponse(str(exc), status=400, content_type="text/plain; charset=utf-8")


def _page_parts(
    slug: str, g: QueryDict, index: CodebookIndex, saturation: data.Saturation, table: ct.CrossTab
) -> dict[str, Any]:
    """The page's saturation figure, cross-tab rows and downloads, and every figure's download links."""
    cross = {k: g.get(k, "") for k in ("rows", "rows_level", "cols", "cols_level", "labels")}
    curve = {"dimension": saturation.dimension, "base": g.get("base"), "run": g.get("run")}
    figures = [
        {
            "label": f"{kind} · {d.name}",
            "urls": {fmt: _url("export:paper-figure", slug, kind, fmt, dimension=d.key) for fmt in FORMATS},
        }
        for d in index.dimensions
        for kind in ("agreement", "saturation", "distribution")
    ]
    figures.append(
        {
            "label": "cross-tab heatmap (as chosen above)",
            "urls": {fmt: _url("export:paper-figure", slug, "crosstab", fmt, **cross) for fmt in FORMATS},
        }
    )
    rows = [
        {
            "name": name,
            "cells": [(table.counts[i][j], table.row_share(i, j)) for j in range(len(table.cols))],
            "total": table.row_totals[i],
        }
        for i, name in enumerate(table.rows)
    ]
    return {
        "saturation": saturation,
        "sat_figure": _url(
            "export:paper-figure", slug, "saturation", "svg", threshold=g.get("threshold"), **curve
        ),
        "table": table,
        "table_rows": rows,
        "crosstab_downloads": {
            fmt: _url("export:paper-crosstab", slug, fmt, **cross) for fmt in CROSSTAB_TYPES
        },
        "heatmap": _url("export:paper-figure", slug, "crosstab", "svg", **cross) if table.total else None,
        "figures": figures,
    }


@login_required
@require_GET
def paper_page(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    study, role = access_study(request.user, slug, lead=True)
    index = CodebookIndex.for_study(study)
    ctx = study_context(
        study, role, "paper", dimensions=index.dimensions, fields=data.ITEM_FIELDS, params=request.GET
    )
    if not index.dimensions:
        return render(
            request,
            "export/paper.html",
            {**ctx, "error": "Load a codebook first: the paper needs dimensions."},
        )
    try:
        saturation = _saturation(study, request.GET, index)
        table = _crosstab(study, request.GET, index)
    except data.PaperError as exc:
        return render(request, "export/paper.html", {**ctx, "error": str(exc)}, status=400)
    ctx.update(_page_parts(slug, request.GET, index, saturation, table))
    try:
        ctx.update(_evolution_parts(study, request.GET))
    except data.PaperError as exc:
        ctx["evolution_error"] = str(exc)
    return render(request, "export/paper.html", ctx)


def _evolution_parts(study: Study, g: QueryDict) -> dict[str, Any]:
    """The codebook's versions, the changes between the two chosen ones, and the re-review worklist."""
    versions = list(
        CodebookVersion.objects.filter(codebook__study=study)
        .order_by("number")
        .values_list("number", flat=True)
    )
    if not versions:
        return {"versions": []}
    old, new = _int(g, "from", versions[0]) or versions[0], _int(g, "to", versions[-1]) or versions[-1]
    work = evolution.rereview_worklist(study)
    ids = dict(Item.objects.filter(study=study, url__in=[w.item for w in work]).values_list("url", "id"))
    return {
        "versions": versions,
        "evolution": evolution.codebook_evolution(study, old, new),
        "worklist": [
            {
                "url": w.item,
                "id": ids.get(w.item),
                "reasons": w.reasons,
                "annotators": sorted({name for name, _ in w.outdated}),
            }
            for w in work
        ],
    }


@login_required
@require_POST
def paper_still_right(request: HtmxHttpRequest, slug: str, item_id: int) -> HttpResponse:
    """One click on the worklist: the item's labels are still right at the current codebook version."""
    study, _ = access_study(request.user, slug, lead=True)
    item = get_object_or_404(Item.objects.filter(study=study), pk=item_id)
    evolution.mark_still_right(study, item, request.user if isinstance(request.user, User) else None)
    messages.success(request, f"Marked {item.url} as still right.")
    return redirect(reverse("export:paper", args=[study.slug]) + "#evolution")


@login_required
@require_POST
def paper_send_back(request: HtmxHttpRequest, slug: str, item_id: int) -> HttpResponse:
    """The worklist's other answer: the item's outdated labels go back to the annotators who made them,
    and its decision is withdrawn until they label it again."""
    study, _ = access_study(request.user, slug, lead=True)
    item = get_object_or_404(Item.objects.filter(study=study), pk=item_id)
    try:
        names = evolution.send_back_item(
            study, item, request.user if isinstance(request.user, User) else None
        )
    except data.PaperError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"Sent {item.url} back to {', '.join(names)}; its decision is withdrawn.")
    return redirect(reverse("export:paper", args=[study.slug]) + "#evolution")


@login_required
@require_GET
def paper_figure(request: HtmxHttpRequest, slug: str, name: str, fmt: str) -> HttpResponse:
    """One figure as SVG or PDF (``?inline=1`` to show it rather than download it)."""
    study, _ = access_study(request.user, slug, lead=True)
    if name not in FIGURES or fmt not in FIGURE_TYPES:
        raise Http404("no such figure or format")
    index = CodebookIndex.for_study(study)
    g = request.GET
    try:
        if not index.dimensions:
            raise data.PaperError("load a codebook first: the paper needs dimensions")
        dimension = g.get("dimension") or index.dimensions[0].key
        if name == "saturation":
            content = artifacts.saturation_figure(study, _saturation(study, g, index), fmt)
        elif name == "agreement":
            content = artifacts.agreement_figure(study, dimension, fmt)
        elif name == "distribution":
            content = artifacts.distribution_figure(study, dimension, fmt)
        elif name == "crosstab":
            content = artifacts.crosstab_figure(_crosstab(study, g, index), fmt)
        else:
            scope = g.get("round", "")
            content = artifacts.confusion_figure(
                study,
                data.dimension_of(index, dimension),
                round_number=int(scope) if scope.isdigit() else None,
                level=_int(g, "level", None),
                a=g.get("a", ""),
                b=g.get("b", ""),
                fmt=fmt,
            )
    except data.PaperError as exc:
        return _error(exc)
    response = HttpResponse(content, content_type=FIGURE_TYPES[fmt])
    disposition = "inline" if g.get("inline") else "attachment"
    response["Content-Disposition"] = (
        f'{disposition}; filename="{study.slug}-{name}-{g.get("dimension", "")}.{fmt}"'
    )
    return response


@login_required
@require_GET
def paper_crosstab(request: HtmxHttpRequest, slug: str, fmt: str) -> HttpResponse:
    study, _ = access_study(request.user, slug, lead=True)
    if fmt not in CROSSTAB_TYPES:
        raise Http404("no such format: csv, json, md or tex")
    try:
        table = _crosstab(study, request.GET, CodebookIndex.for_study(study))
    except data.PaperError as exc:
        return _error(exc)
    title = f"{table.row_label} by {table.col_label}"
    if fmt == "csv":
        text = ct.to_csv(table)
    elif fmt == "json":
        text = ct.dump_json(table)
    elif fmt == "md":
        text = ct.to_markdown(table, title=title)
    else:
        text = ct.to_latex(table, caption=title)
    response = HttpResponse(text, content_type=CROSSTAB_TYPES[fmt])
    response["Content-Disposition"] = f'attachment; filename="{study.slug}-crosstab.{fmt}"'
    return response


def _methods(study: Study) -> methods.MethodsData:
    index = CodebookIndex.for_study(study)
    agreement = agreement_data(study, index)
    saturations = [data.saturation(study, d.key, index=index) for d in index.dimensions]
    return methods_data(study, index, agreement, saturations)


@login_required
@require_GET
def paper_methods(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    """The methods section as a page, with its Markdown, LaTeX and BibTeX downloads."""
    study, role = access_study(request.user, slug, lead=True)
    facts = _methods(study)
    downloads = {fmt: reverse("export:paper-methods-file", args=[slug, fmt]) for fmt in METHODS_TYPES}
    ctx = study_context(study, role, "paper", sections=methods.sections(facts), downloads=downloads)
    return render(request, "export/paper_methods.html", ctx)


@login_required
@require_GET
def paper_methods_file(request: HtmxHttpRequest, slug: str, fmt: str) -> HttpResponse:
    study, _ = access_study(request.user, slug, lead=True)
    if fmt not in METHODS_TYPES:
        raise Http404("no such format: md, tex or bib")
    if fmt == "bib":
        text = methods.BIBTEX
    else:
        facts = _methods(study)
        text = methods.to_markdown(facts) if fmt == "md" else methods.to_latex(facts)
    response = HttpResponse(text, content_type=METHODS_TYPES[fmt])
    name = "references" if fmt == "bib" else "methods"
    response["Content-Disposition"] = f'attachment; filename="{name}.{fmt}"'
    return response
