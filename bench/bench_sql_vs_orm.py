"""Each hand-written statement against the ORM doing the same work (issue 25, point 5).

Usage (PostgreSQL, a study made by generate.py; submitting consumes open assignments of its last round):

    export DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench DEBUG=0
    .venv/bin/python bench/bench_sql_vs_orm.py --slug bench-100000 [--calls 300] [--submissions 40]

In-process, one connection, autocommit as in a request. Reads: `--calls` calls of the hand-written form,
then as many of the ORM's, alternated in five rounds; the median µs a call. Submissions: a first
submission and the one completing its item (two annotators), `--submissions` items by each path,
alternated item by item: the hand-written path (`submit_sql`'s statement, then the consolidation
statements of `adjudication/services/sql.py`) against the ORM path the same service takes on SQLite and
when the short path declines (`submit_annotation` with `_submit_short` declining; `consolidate_item`).
Prints, per statement, both medians, the ORM's time as a multiple of the hand-written one, and the
verdict of the rule: keep the statement only where the ORM is more than 10 % slower.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

from django.contrib.sessions.backends.db import SessionStore as OrmSessionStore  # noqa: E402
from django.db import connection  # noqa: E402

from apps.accounts import backends, permissions  # noqa: E402
from apps.accounts.models import Membership, Role, Study, User  # noqa: E402
from apps.accounts.sessions import SessionStore  # noqa: E402
from apps.annotation.models import Assignment, AssignmentStatus  # noqa: E402
from apps.annotation.services import labelling  # noqa: E402
from apps.corpus.models import Item  # noqa: E402
from apps.corpus.services import pg  # noqa: E402

KEEP_ABOVE = 1.10  # the ORM more than 10 % slower: the hand-written statement stays


def per_call_us(call: Callable[[], Any], calls: int) -> float:
    started = time.perf_counter()
    for _ in range(calls):
        call()
    return (time.perf_counter() - started) / calls * 1e6


def compare(
    hand: Callable[[], Any], orm: Callable[[], Any], calls: int, rounds: int = 5
) -> tuple[float, float]:
    hand(), orm()  # warm: prepared statements, compiled queries, caches
    hands, orms = [], []
    for _ in range(rounds):
        hands.append(per_call_us(hand, calls))
        orms.append(per_call_us(orm, calls))
    return statistics.median(hands), statistics.median(orms)


def read_cases(study: Study, calls: int) -> list[tuple[str, float, float]]:
    lead = (
        Membership.objects.filter(study=study, role__in=[Role.LEAD, Role.OWNER])
        .select_related("user")
        .first()
    )
    assert lead is not None, "the study has no lead"
    user = lead.user
    session = SessionStore()
    session["_auth_user_id"] = str(user.pk)
    session.create()
    key = session.session_key
    backend = backends.UserBackend()
    urls = list(Item.objects.filter(study=study).order_by("?").values_list("url", flat=True)[:1000])
    rows: list[tuple[str, float, float]] = []

    def membership() -> Membership | None:
        return (
            Membership.objects.select_related("study").filter(user_id=user.pk, study__slug=study.slug).first()
        )

    def hashes() -> dict[str, str]:
        return dict(Item.objects.filter(study_id=study.pk, url__in=urls).values_list("url", "content_hash"))

    def on_study(call: Callable[[], Any]) -> Callable[[], Any]:
        def wrapped() -> Any:
            token = backends.REQUEST_STUDY.set(study.slug)
            try:
                return call()
            finally:
                backends.REQUEST_STUDY.reset(token)

        return wrapped

    cases: list[tuple[str, Callable[[], Any], Callable[[], Any], int]] = [
        (
            "session read (`sessions._READ`)",
            lambda: SessionStore(key)._get_session_from_db(),
            lambda: OrmSessionStore(key)._get_session_from_db(),
            calls,
        ),
        (
            "user (`backends._SELECT_USER`)",
            lambda: backend.get_user(user.pk),
            lambda: User._default_manager.get(pk=user.pk),
            calls,
        ),
        (
            "user with membership and study (`_SELECT_USER_AND_MEMBERSHIP`)",
            on_study(lambda: backend.get_user(user.pk)),
            lambda: (User._default_manager.get(pk=user.pk), membership()),
            calls,
        ),
        (
            "membership and study (`permissions._MEMBERSHIP`)",
            lambda: permissions._MEMBERSHIP.one({"user": user.pk, "slug": study.slug}),
            membership,
            calls,
        ),
        (
            "stored hashes of 1,000 URLs (`pg.stored_hashes`)",
            lambda: pg.stored_hashes(study.pk, urls),
            hashes,
            max(calls // 30, 5),
        ),
    ]
    for name, hand, orm, count in cases:
        rows.append((name, *compare(hand, orm, count)))
    return rows


def submission_cases(study: Study, count: int) -> list[tuple[str, float, float]]:
    """First and completing submissions of `count` items by each path, alternated item by item."""
    open_rows = list(
        Assignment.objects.filter(study=study, status=AssignmentStatus.OPEN, round__number=5)
        .order_by("item_id", "id")
        .values_list("item_id", "id", "annotator_id")
    )
    by_item: dict[int, list[tuple[int, int]]] = {}
    for item_id, pk, annotator_id in open_rows:
        by_item.setdefault(item_id, []).append((pk, annotator_id))
    pairs = [rows for rows in by_item.values() if len(rows) == 2][: 2 * count]
    if len(pairs) < 2 * count:
        raise SystemExit(f"only {len(pairs)} open items with two open assignments: regenerate the study")
    users = {user.pk: user for user in User.objects.filter(pk__in={a for p in pairs for _, a in p})}
    book = labelling.CodebookIndex.for_codebook(study.codebook)
    payload = _payload(study)
    short = labelling._submit_short
    times: dict[tuple[str, str], list[float]] = {}

    def submit(pk: int, annotator: int, path: str, which: str) -> None:
        labelling._submit_short = short if path == "hand" else (lambda *args, **kwargs: None)
        try:
            started = time.perf_counter()
            labelling.submit_annotation(
                Assignment(pk=pk), payload, users[annotator], codebook_version=book.version, study=study
            )
            times.setdefault((which, path), []).append((time.perf_counter() - started) * 1e6)
        finally:
            labelling._submit_short = short

    for number, pair in enumerate(pairs):  # alternate: even items by hand, odd by the ORM
        path = "hand" if number % 2 == 0 else "orm"
        submit(*pair[0], path, "first")
        submit(*pair[1], path, "completing")
    labels = (("first", "a first submission"), ("completing", "a submission completing its item"))
    return [
        (
            f"{label} (`submit_sql`, then `adjudication/services/sql.py`)",
            statistics.median(times[(which, "hand")]),
            statistics.median(times[(which, "orm")]),
        )
        for which, label in labels
    ]


def _payload(study: Study) -> dict[str, Any]:
    """The labels bench_http.py submits: a how-to finding with a topic of the study's codebook."""
    sys.path.insert(0, str(ROOT / "bench"))
    from bench_http import _a_topic

    return {"findings": [{"values": {"issue_type": ["howto"], "howto_topic": [_a_topic(study)]}}], "memo": ""}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--slug", default="bench-100000")
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--submissions", type=int, default=40)
    args = parser.parse_args()
    if connection.vendor != "postgresql":
        raise SystemExit("PostgreSQL only: the hand-written statements are the PostgreSQL paths")
    study = Study.objects.get(slug=args.slug)
    rows = read_cases(study, args.calls)
    if args.submissions:
        rows += submission_cases(study, args.submissions)
    print(f"{time.strftime('%Y-%m-%d %H:%M')} UTC, load {os.getloadavg()[0]:.1f}, study {args.slug}")
    print(f"{'statement':<84} {'hand µs':>9} {'ORM µs':>9} {'ORM/hand':>9}  verdict")
    for name, hand, orm in rows:
        verdict = "keep" if orm > hand * KEEP_ABOVE else "ORM within 10 %: go back"
        print(f"{name:<84} {hand:>9,.0f} {orm:>9,.0f} {orm / hand:>8.2f}x  {verdict}")


if __name__ == "__main__":
    main()
