"""What the codebook screens share: scoped lookups, the change event, and how a recorded change reads for
people. (Page or partial: `apps.core.htmx.render_page`, as on every screen.)"""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from django.shortcuts import get_object_or_404
from django_htmx.http import trigger_client_event

from apps.accounts.models import Study, User
from apps.core.http import HtmxHttpRequest

from ..loading import CONTENT_TYPES
from ..models import Category, CategoryQuerySet, ChangeKind, CodebookChange

CHANGED = "codebook-changed"


def user_of(request: HtmxHttpRequest) -> User:
    user = request.user
    assert isinstance(user, User)  # login_required ran
    return user


def study_categories(study: Study) -> CategoryQuerySet:
    return Category.objects.filter(dimension__codebook__study=study)


def scoped_category(study: Study, pk: int | None) -> Category | None:
    return (
        None if pk is None else get_object_or_404(study_categories(study).select_related("dimension"), pk=pk)
    )


def changed(response: HttpResponse) -> HttpResponse:
    return trigger_client_event(response, CHANGED)


def download(text: str, fmt: str, stem: str) -> HttpResponse:
    response = HttpResponse(text, content_type=CONTENT_TYPES[fmt])
    response["Content-Disposition"] = f'attachment; filename="{stem}.{fmt}"'
    return response


def where(parent: str | None) -> str:
    return f"under {parent}" if parent else "at the top level"


def describe(change: CodebookChange, *, counts: bool = True) -> tuple[str, str]:
    """(subject, summary) of a change for people, from its kind, before and after. Without `counts` the
    numbers of labels moved are left out: annotators must not learn how others labelled."""
    before, after = change.before or {}, change.after or {}
    # The names recorded with the change come first: the category may have been renamed since.
    name = after.get("name") or before.get("name") or (change.category.name if change.category else "")
    subject = name or (change.dimension.name if change.dimension else "")
    kind = change.kind
    if change.category_id is None and change.dimension_id is None and "name" in after:
        return "the codebook", f"renamed “{before.get('name')}” → “{after['name']}”"
    if kind == ChangeKind.ADD:
        summary = f"added {where(after.get('parent'))}"
    elif kind == ChangeKind.RENAME:
        summary = f"“{before.get('name')}” → “{after.get('name')}”"
    elif kind in (ChangeKind.EDIT, ChangeKind.EDIT_DIMENSION):
        summary = "changed " + ", ".join(sorted(after)) if after else ""
    elif kind == ChangeKind.MOVE:
        summary = f"from {where(before.get('parent'))} to {where(after.get('parent'))}"
    elif kind == ChangeKind.REORDER:
        summary = f"position {int(before.get('position', 0)) + 1} → {int(after.get('position', 0)) + 1}"
    elif kind == ChangeKind.MERGE:
        summary = f"into {after.get('merged_into_path') or after.get('merged_into')}"
        if counts:
            labels, gold = after.get("labels_moved", 0), after.get("decisions_moved", 0)
            summary += f": {labels} label(s), {gold} gold label(s) moved"
    elif kind == ChangeKind.SPLIT:
        summary = f"into {', '.join(after.get('parts', []))}"
    elif kind == ChangeKind.REASSIGN:
        moved = f"{after.get('labels_moved', 0)} label(s), {after.get('decisions_moved', 0)} gold label(s)"
        summary = f"{moved if counts else 'labels'} moved to {after.get('target')}"
    elif kind == ChangeKind.REJECT and after.get("labels_moved_to"):
        summary = f"labels moved to {after['labels_moved_to']}"
    elif kind == ChangeKind.RETIRE and after.get("deleted"):
        summary = "deleted (never used)"
    else:
        summary = ""
    return subject, summary


def described(changes: Any, *, counts: bool) -> list[CodebookChange]:
    """The changes as a list, each with `subject` and `summary` for the templates."""
    rows = list(changes)
    for change in rows:
        change.subject, change.summary = describe(change, counts=counts)
    return rows
