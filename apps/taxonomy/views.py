"""The codebook pages."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from apps.accounts.permissions import access_study
from apps.core.context import study_context
from apps.core.http import HtmxHttpRequest

from .models import Category, Codebook, Dimension


@login_required
@require_GET
def codebook(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    study, role = access_study(request.user, slug)
    book = Codebook.objects.filter(study=study).first()
    dimensions = list(Dimension.objects.filter(codebook=book).active()) if book else []
    categories = Category.objects.filter(dimension__in=dimensions).active().order_by("position", "id")
    children: dict[int | None, list[Category]] = {}
    for c in categories:
        children.setdefault(c.parent_id, []).append(c)
    trees = []
    for d in dimensions:
        roots = [c for c in children.get(None, []) if c.dimension_id == d.id]
        trees.append({"dimension": d, "nodes": _flatten(roots, children, 1)})
    ctx = study_context(study, role, "codebook", codebook=book, trees=trees)
    return render(request, "taxonomy/codebook.html", ctx)


def _flatten(
    nodes: list[Category], children: dict[int | None, list[Category]], depth: int
) -> list[tuple[int, Category]]:
    out: list[tuple[int, Category]] = []
    for n in nodes:
        out.append((depth, n))
        out.extend(_flatten(children.get(n.id, []), children, depth + 1))
    return out
