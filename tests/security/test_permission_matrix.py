"""Every page and endpoint, for every role, gives the status the matrix (tests/security/matrix.py) expects.

The cases are generated from Django's URL resolver, not from the matrix: a URL added without a matrix
entry appears here as a failing case, so access is decided for every new page or endpoint.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.db import transaction
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from rest_framework.test import APIClient

from apps.accounts.models import User
from tests.api.world import World

from .matrix import (
    ADMIN_NAMESPACE,
    MATRIX,
    OK,
    REFUSALS,
    ROLES,
    Kwargs,
    Rule,
    api,
    assignment,
    expected,
    item,
    page,
)

pytestmark = pytest.mark.django_db


def url_names(patterns: list[URLPattern | URLResolver] | None = None, namespace: str = "") -> Iterator[str]:
    """Every URL name of the project, namespaced (``corpus:item-list``); unnamed patterns as ``<route>``."""
    for pattern in get_resolver().url_patterns if patterns is None else patterns:
        if isinstance(pattern, URLResolver):
            inner = namespace
            if pattern.namespace:
                inner = f"{namespace}{pattern.namespace}:"
            yield from url_names(pattern.url_patterns, inner)
        elif pattern.name:
            yield f"{namespace}{pattern.name}"
        else:
            yield f"{namespace}<unnamed {pattern.pattern}>"


ALL_NAMES = sorted(set(url_names()))
PROJECT_NAMES = [n for n in ALL_NAMES if not n.startswith(ADMIN_NAMESPACE) or n in MATRIX]


def cases() -> Iterator[tuple[str, str]]:
    for name in PROJECT_NAMES:
        rule = MATRIX.get(name)
        if rule is None:
            yield name, "NO MATRIX ENTRY"
            continue
        for method in dict.fromkeys(("GET", *rule.methods)):
            yield name, method


def client_for(role: str, world: World) -> APIClient:
    client = APIClient()
    user: User | None = {
        "anonymous": None,
        "outsider": world.outsider,
        "annotator": world.alice,
        "other_annotator": world.bob,
        "lead": world.lead,
        "owner": world.owner,
    }[role]
    if user is not None:
        client.force_login(user)
    return client


def test_every_matrix_entry_is_a_url_of_the_project() -> None:
    stale = sorted(set(MATRIX) - set(ALL_NAMES))
    assert not stale, f"matrix entries for URLs that no longer exist: {stale}"


def test_every_admin_url_sits_behind_the_admin_site() -> None:
    """URLs of the admin namespace not listed in the matrix are all served by `admin.site`'s views, whose
    `admin_view` wrapper sends non-staff users to its login (as admin:index and the changelists show)."""
    from django.contrib import admin

    admin_names = {f"admin:{n}" for n in url_names(admin.site.get_urls())}
    outside = [n for n in ALL_NAMES if n.startswith(ADMIN_NAMESPACE) and n not in admin_names]
    assert not outside, f"URLs in the admin namespace that the admin site does not serve: {outside}"


@pytest.mark.parametrize(("name", "method"), list(cases()))
def test_status_for_every_role(name: str, method: str, world: World) -> None:
    rule = MATRIX.get(name)
    assert rule is not None, (
        f"{name} has no entry in tests/security/matrix.py: decide who may use it (public, user, member, "
        "lead, own, own_or_lead) and add it"
    )
    url = reverse(name, kwargs=rule.kwargs(world) or None) + rule.query
    wrong = []
    for role in ROLES:
        want = expected(name, rule, method, role)
        with transaction.atomic():  # each role sees the world untouched by the previous role's request
            response = client_for(role, world).generic(method, url)
            transaction.set_rollback(True)
        got = response.status_code
        good = (got not in REFUSALS and got < 500) if want == OK else got == want
        if good and want == 302 and role == "anonymous" and not rule.api and name != "accounts:logout":
            good = "login" in response["Location"]
        if not good:
            wrong.append(f"{role}: expected {want}, got {got}")
    assert not wrong, f"{method} {url}: " + "; ".join(wrong)


# --- After the reveal ----------------------------------------------------------------------------------
# The world's round 1 revealed (forced: bob has not labelled item 2) and in discussion. Only the URLs whose
# access the reveal changes are listed; everything else answers as above. Item 1 both annotators labelled;
# item 2 only alice: its thread and cause stay closed to bob (403) until he labels it.
def _thread(n: int) -> Kwargs:
    return lambda w: {"slug": w.study.slug, "number": 1, "item_id": w.items[n].pk}


AFTER_REVEAL: dict[str, tuple[str, Rule]] = {
    "thread of an item both labelled": (
        "annotation:thread",
        page("member", "GET", "POST", kwargs=_thread(0)),
    ),
    "thread of an item bob has not labelled": (
        "annotation:thread",
        page("own_or_lead", "GET", "POST", kwargs=_thread(1)),
    ),
    "cause of an item both labelled": (
        "annotation:cause",
        page("member", "POST", kwargs=_thread(0), post=302),
    ),
    "cause of an item bob has not labelled": (
        "annotation:cause",
        page("own_or_lead", "POST", kwargs=_thread(1), post=302),
    ),
    "the round's labels side by side": (
        "annotation:discussion",
        page("member", kwargs=lambda w: {"slug": w.study.slug, "number": 1}),
    ),
    "API thread": ("api-item-thread", api("member", "GET", "POST", kwargs=item(0))),
    "API revision": (
        "api-assignment-revision",
        api("own_or_lead", "GET", "POST", kwargs=assignment("alice", 0), write="own"),
    ),
    "close the discussion": (
        "annotation:close-discussion",
        page("lead", "POST", kwargs=lambda w: {"slug": w.study.slug, "number": 1}, post=302),
    ),
}
# Refused with a reason, not hidden: bob is one of item 2's annotators, its thread just is not open to him.
AFTER_REVEAL_SPECIAL = {
    ("thread of an item bob has not labelled", "other_annotator"): 403,
    ("cause of an item bob has not labelled", "other_annotator"): 403,
}


def revealed_cases() -> Iterator[tuple[str, str]]:
    for label, (_, rule) in AFTER_REVEAL.items():
        for method in dict.fromkeys(("GET", *rule.methods)):
            yield label, method


@pytest.mark.parametrize(("label", "method"), list(revealed_cases()))
def test_status_for_every_role_after_the_reveal(label: str, method: str, world: World) -> None:
    from apps.annotation import services

    services.reveal_round(world.study, 1, force=True, discussion=True)
    name, rule = AFTER_REVEAL[label]
    url = reverse(name, kwargs=rule.kwargs(world) or None) + rule.query
    wrong = []
    for role in ROLES:
        want = expected(name, rule, method, role)
        if method in rule.methods:  # a method the URL does not take is refused (405) before any access check
            want = AFTER_REVEAL_SPECIAL.get((label, role), want)
        with transaction.atomic():
            response = client_for(role, world).generic(method, url)
            transaction.set_rollback(True)
        got = response.status_code
        good = (got not in REFUSALS and got < 500) if want == OK else got == want
        if not good:
            wrong.append(f"{role}: expected {want}, got {got}")
    assert not wrong, f"{label}: {method} {url}: " + "; ".join(wrong)
