"""An archived study is read-only everywhere: every write URL of the permission matrix refuses every role
that could otherwise write, with the message that says how to unarchive; reads still answer.

The cases come from tests/security/matrix.py, so a new write URL is swept without being listed here. The
few writes an archived study takes are listed in `ARCHIVED_WRITES`, each with its reason.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from tests.api.world import World

from .matrix import MATRIX, REFUSALS, ROLES, expected, refusal
from .test_permission_matrix import client_for

pytestmark = pytest.mark.django_db

MESSAGE = "is archived: unarchive it in Settings to change it"

ARCHIVED_WRITES = {
    ("accounts:archive", "POST"): "unarchiving",
    ("accounts:delete", "POST"): "an archived study can be deleted",
    ("api-study-detail", "PATCH"): "unarchiving through the API (other changes are refused there)",
    ("api-study-detail", "DELETE"): "an archived study can be deleted",
    ("export:start", "POST"): "an export only reads the study",
    ("api-export-list", "POST"): "an export only reads the study",
    ("agreement:compute", "POST"): "agreement only reads the labels",
    ("api-agreement-list", "POST"): "agreement only reads the labels",
}


def study_scoped(name: str) -> bool:
    rule = MATRIX[name]
    return rule.access not in ("public", "user", "staff") and name != "accounts:revoke-token"


def study_writes() -> Iterator[tuple[str, str]]:
    for name, rule in MATRIX.items():
        if not study_scoped(name):
            continue
        for method in rule.methods:
            if method != "GET" and (name, method) not in ARCHIVED_WRITES:
                yield name, method


def archive(world: World) -> None:
    world.study.archived_at = timezone.now()
    world.study.save(update_fields=["archived_at"])


def test_the_sweep_covers_the_write_urls_of_every_app() -> None:
    apps = {name.split(":")[0] if ":" in name else "api" for name, _ in study_writes()}
    assert {"accounts", "corpus", "taxonomy", "annotation", "adjudication", "export", "raters", "api"} <= apps


@pytest.mark.parametrize(("name", "method"), list(study_writes()))
def test_every_write_to_an_archived_study_is_refused_with_the_way_out(
    name: str, method: str, world: World
) -> None:
    archive(world)
    rule = MATRIX[name]
    url = reverse(name, kwargs=rule.kwargs(world) or None) + rule.query
    wrong = []
    for role in ROLES:
        want = expected(name, rule, method, role)
        with transaction.atomic():
            response = client_for(role, world).generic(method, url)
            transaction.set_rollback(True)
        got = response.status_code
        archived = got == 403 and MESSAGE in response.content.decode()
        if refusal(rule, role, method) is not None or want in REFUSALS:
            # Who may not write at all is refused as before: anonymous and outsiders exactly (an outsider
            # still cannot learn that the study exists); a member may instead be told that the study is
            # archived before another annotator's object is looked up (they know the study).
            member = role not in ("anonymous", "outsider")
            if got != want and not (member and archived):
                wrong.append(f"{role}: expected {want} as before, got {got}")
        elif not archived:
            wrong.append(f"{role}: expected 403 '{MESSAGE}', got {got}")
    assert not wrong, f"{method} {url}: " + "; ".join(wrong)


@pytest.mark.parametrize(("name", "method"), sorted(ARCHIVED_WRITES))
def test_the_writes_an_archived_study_takes_are_not_refused_as_archived(
    name: str, method: str, world: World
) -> None:
    archive(world)
    rule = MATRIX[name]
    url = reverse(name, kwargs=rule.kwargs(world) or None) + rule.query
    with transaction.atomic():
        response = client_for("owner", world).generic(method, url)
        transaction.set_rollback(True)
    assert MESSAGE not in response.content.decode()
    assert response.status_code < 500


READS = [
    n
    for n, r in MATRIX.items()
    if study_scoped(n) and r.access != "own" and r.get == 200 and "GET" in r.methods
]


@pytest.mark.parametrize("name", READS)
def test_reads_of_an_archived_study_still_answer(name: str, world: World) -> None:
    archive(world)
    rule = MATRIX[name]
    url = reverse(name, kwargs=rule.kwargs(world) or None) + rule.query
    response = client_for("owner", world).get(url)
    assert response.status_code not in REFUSALS and response.status_code < 500, (url, response.status_code)
