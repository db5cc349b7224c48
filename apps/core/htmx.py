"""One way to answer htmx: whether a request wants a fragment, and the page or its partial accordingly.

A screen is one template with named partials (`{% partialdef %}`). A plain request gets the page; a
request htmx sends to swap part of a page gets the partial, rendered from the same context. Views never
read `request.htmx` or the HX-* request headers themselves (tests/core/test_htmx.py checks that): they
call `render_page`, or ask `is_htmx` when the other answer is not a page (a redirect, a client refresh).

The rule, in one place:
- an htmx request (HX-Request: true) wants a fragment,
- unless it is a boosted navigation (HX-Boosted: htmx swaps the whole body, so it wants the page),
- and, when the view names a `target`, only if it aims at the element of that id (HX-Target): another
  region of the same page that sends the same URL (a filter form, a poll) still gets the page.

This is django-htmx-patterns' `for_htmx` as a function rather than a decorator: the views here answer a
fragment with its own status (422 for a form the page would show with 400) and headers
(`trigger_client_event`), and a call reads in place, top to bottom, where a decorator would swap the
template of a `TemplateResponse` after the view returned.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.http import HttpResponse
from django.shortcuts import render

from .http import HtmxHttpRequest


def is_htmx(request: HtmxHttpRequest, *, target: str | None = None) -> bool:
    """Whether `request` asks for a fragment: sent by htmx, not a boosted navigation, and aimed at the
    element whose id is `target` when one is given."""
    htmx = request.htmx
    if not htmx or htmx.boosted:
        return False
    return target is None or htmx.target == target


def render_page(
    request: HtmxHttpRequest,
    template: str,
    context: Mapping[str, Any],
    *,
    partial: str,
    target: str | None = None,
    status: int = 200,
    partial_status: int | None = None,
) -> HttpResponse:
    """The page `template`, or its `partial` when `is_htmx(request, target=target)`.

    `partial` is ``"#name"`` for a partial of `template` itself, or a full ``"other.html#name"`` when the
    fragment lives in another screen's template. The partial is sent with `partial_status` when given
    (htmx is told to swap some error statuses, the page is not), else with `status`."""
    if not is_htmx(request, target=target):
        return render(request, template, context, status=status)
    name = f"{template}{partial}" if partial.startswith("#") else partial
    return render(request, name, context, status=status if partial_status is None else partial_status)
