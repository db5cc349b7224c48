"""One way to answer htmx (`apps.core.htmx`): the page or its partial, chosen in one place.

The helper is tested on a screen of its own (a page with two partials, and a fragment kept in another
template); the last test reads every module of `apps/` and fails when one decides for itself by reading
`request.htmx` or an HX-* request header instead of asking the helper.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest
from django.test import RequestFactory
from django_htmx.middleware import HtmxDetails

from apps.core.htmx import is_htmx, render_page
from apps.core.http import HtmxHttpRequest

SCREEN = """<html>{% partialdef rows inline %}<ul>{{ who }}</ul>{% endpartialdef %}
{% partialdef summary %}<p>{{ who }}</p>{% endpartialdef %}</html>"""
ELSEWHERE = "<section>{% partialdef row %}<li>{{ who }}</li>{% endpartialdef %}</section>"
FULL_PAGE = "<html><ul>alice</ul>\n</html>"

HTMX = {"HX-Request": "true"}


@pytest.fixture(autouse=True)
def screens(settings: Any) -> None:
    settings.TEMPLATES = [
        {
            "BACKEND": "django.template.backends.django.DjangoTemplates",
            "OPTIONS": {
                "loaders": [
                    (
                        "django.template.loaders.locmem.Loader",
                        {"screen.html": SCREEN, "other.html": ELSEWHERE},
                    )
                ]
            },
        }
    ]


def request_with(headers: dict[str, str] | None = None) -> HtmxHttpRequest:
    request: Any = RequestFactory().get("/screen/", headers=headers or {})
    request.htmx = HtmxDetails(request)  # what django-htmx's middleware sets
    result: HtmxHttpRequest = request
    return result


def answer(headers: dict[str, str] | None = None, **options: Any) -> tuple[int, str]:
    options.setdefault("partial", "#rows")
    response = render_page(request_with(headers), "screen.html", {"who": "alice"}, **options)
    return response.status_code, response.content.decode()


def test_a_plain_request_gets_the_page() -> None:
    assert answer() == (200, FULL_PAGE)


def test_an_htmx_request_gets_the_named_partial_of_the_page() -> None:
    assert answer(HTMX) == (200, "<ul>alice</ul>")
    assert answer(HTMX, partial="#summary") == (200, "<p>alice</p>")


def test_the_partial_may_live_in_another_template() -> None:
    assert answer(HTMX, partial="other.html#row") == (200, "<li>alice</li>")
    assert answer(partial="other.html#row") == (200, FULL_PAGE)


def test_with_a_target_only_a_request_aimed_at_it_gets_the_partial() -> None:
    assert answer({**HTMX, "HX-Target": "rows"}, target="rows") == (200, "<ul>alice</ul>")
    assert answer({**HTMX, "HX-Target": "elsewhere"}, target="rows") == (200, FULL_PAGE)
    assert answer(HTMX, target="rows") == (200, FULL_PAGE)  # no HX-Target: not aimed at it
    assert answer({"HX-Target": "rows"}, target="rows") == (200, FULL_PAGE)  # not htmx at all


def test_a_boosted_navigation_gets_the_page() -> None:
    assert answer({**HTMX, "HX-Boosted": "true"}) == (200, FULL_PAGE)


def test_the_status_is_kept_and_the_partial_may_have_its_own() -> None:
    assert answer(status=422) == (422, FULL_PAGE)
    assert answer(HTMX, status=422) == (422, "<ul>alice</ul>")
    assert answer(status=400, partial_status=422) == (400, FULL_PAGE)
    assert answer(HTMX, status=400, partial_status=422) == (422, "<ul>alice</ul>")


def test_is_htmx_is_the_same_rule_for_answers_that_are_not_pages() -> None:
    assert not is_htmx(request_with())
    assert is_htmx(request_with(HTMX))
    assert not is_htmx(request_with({"HX-Request": "false"}))
    assert not is_htmx(request_with({**HTMX, "HX-Boosted": "true"}))
    assert is_htmx(request_with({**HTMX, "HX-Target": "rows"}), target="rows")
    assert not is_htmx(request_with({**HTMX, "HX-Target": "rows"}), target="other")


# --- Views ask the helper ----------------------------------------------------------------------------

APPS = Path(__file__).resolve().parents[2] / "apps"
HELPER = APPS / "core" / "htmx.py"
# Modules that may read the htmx request details themselves, and why. (None today: every view asks
# `apps.core.htmx`. A module added here must say what the helper cannot answer for it.)
ALLOWED: dict[str, str] = {}
# Request headers only: HX-Trigger and HX-Redirect are also response headers a view may set (through
# django-htmx's helpers), so a response header's name is not a decision.
HX_REQUEST_HEADERS = frozenset({"hx-request", "hx-target", "hx-boosted", "hx-current-url"})


def decisions_outside_the_helper(source: str) -> list[str]:
    """Where `source` reads `<something>.htmx` or names an HX-* request header (HTTP_HX_* in META)."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr == "htmx" and isinstance(node.ctx, ast.Load):
            found.append((node.lineno, "reads .htmx"))
        elif isinstance(node, ast.Constant) and is_request_header(node.value):
            found.append((node.lineno, f"names {node.value!r}"))
    return [f"{line}: {what}" for line, what in sorted(found)]


def is_request_header(value: object) -> bool:
    return isinstance(value, str) and (value.startswith("HTTP_HX_") or value.lower() in HX_REQUEST_HEADERS)


def test_no_module_of_apps_decides_page_or_partial_itself() -> None:
    modules = [p for p in sorted(APPS.rglob("*.py")) if p != HELPER and "migrations" not in p.parts]
    assert len(modules) > 50  # the walk found the apps
    offenders = [
        f"{name}:{line}"
        for path in modules
        if (name := str(path.relative_to(APPS.parent))) not in ALLOWED
        for line in decisions_outside_the_helper(path.read_text(encoding="utf-8"))
    ]
    assert not offenders, (
        "Choose the page or its partial with apps.core.htmx (render_page, or is_htmx for an answer that "
        "is not a page), not by reading the request yourself:\n" + "\n".join(offenders)
    )


def test_the_check_sees_a_view_that_reads_request_htmx() -> None:
    view = (
        "def page(request):\n"
        "    if request.htmx and request.htmx.target == 'rows':\n"
        "        return 1\n"
        "    if request.headers.get('HX-Request'):\n"
        "        return 2\n"
        "    return request.META.get('HTTP_HX_TARGET')\n"
    )
    assert decisions_outside_the_helper(view) == [
        "2: reads .htmx",
        "2: reads .htmx",
        "4: names 'HX-Request'",
        "6: names 'HTTP_HX_TARGET'",
    ]
    assert decisions_outside_the_helper("response['HX-Trigger'] = 'changed'\n") == []
