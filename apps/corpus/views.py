"""Items of a study and the import page."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from apps.accounts.permissions import access_study
from apps.core.context import study_context
from apps.core.http import HtmxHttpRequest

from .models import ImportJob, Item

PAGE_SIZE = 50


@login_required
@require_GET
def item_list(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    study, role = access_study(request.user, slug)
    items = Item.objects.in_study(study).only("id", "url", "title", "source", "relevance", "created_at")
    after = request.GET.get("after", "")
    if after.isdigit():
        items = items.filter(id__gt=int(after))
    page = list(items.order_by("id")[: PAGE_SIZE + 1])
    has_next = len(page) > PAGE_SIZE
    page = page[:PAGE_SIZE]
    ctx = study_context(
        study, role, "items", items=page, next_after=page[-1].id if has_next and page else None
    )
    return render(request, "corpus/item_list.html", ctx)


@login_required
@require_GET
def item_detail(request: HtmxHttpRequest, slug: str, pk: int) -> HttpResponse:
    study, role = access_study(request.user, slug)
    item = get_object_or_404(Item.objects.in_study(study), pk=pk)
    ctx = study_context(study, role, "items", item=item, comments=item.comments.all())
    return render(request, "corpus/item_detail.html", ctx)


@login_required
@require_GET
def import_page(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    study, role = access_study(request.user, slug, lead=True)
    jobs = ImportJob.objects.filter(study=study)[:20]
    return render(request, "corpus/import.html", study_context(study, role, "import", jobs=jobs))
