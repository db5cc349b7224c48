"""Load test: 50 annotators labelling and 2 leads adjudicating one study at once, then a database audit.

Usage:

    .venv/bin/python bench/load_run.py                 # 5 minutes (the figures in docs/operations.md)
    .venv/bin/python bench/load_run.py --quick         # 30 seconds, to check that it all works
    .venv/bin/python bench/load_run.py --duration 120 --workers 4 --annotators 50 --leads 2

What it does, all on 127.0.0.1 and bounded in time:

1. (re)creates the PostgreSQL database of ``--database-url`` (default
   ``postgres://postgres@127.0.0.1:5432/taxonomist_load``; it must be a database of its own: it is
   dropped), migrates it, and generates the study ``bench-load``: a codebook (``kind``: 4 categories,
   single choice; ``tags``: 4 categories, several), ``--items-per-annotator`` x annotators / 2 items in
   round 1, each assigned to 2 of the annotators, and the leads;
2. starts gunicorn (``--workers`` sync workers, default 4, ``--preload``) on a free port of 127.0.0.1,
   production-like (DEBUG=0, persistent connections); every member starts logged in (``--login``: through
   the form, which costs ~1 s of CPU each by design);
3. runs Locust headless (bench/locustfile.py) for ``--duration`` seconds: every annotator opens their
   next item and submits labels, pausing ``--think`` seconds (default 5-15; people take 30-120 s per
   item), the leads open disagreements and decide them;
4. audits the database: every submission Locust saw accepted is stored, every submitted assignment has
   exactly one annotation with exactly one finding and its label values, no annotation lacks its
   assignment's status, at most one current decision per item;
5. prints requests/s, median and p95 latency (overall and per request), errors, and the audit; exits 1
   when there was an error or the audit failed. The target on a 2-core machine: 0 errors, p95 <= 300 ms.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
STUDY = "bench-load"
PASSWORD = "load-test-password"
TARGET_P95_MS = 300.0


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=int, default=300, help="seconds of load (default 300)")
    parser.add_argument("--quick", action="store_true", help="30 seconds, to check the set-up")
    parser.add_argument("--annotators", type=int, default=50)
    parser.add_argument("--leads", type=int, default=2)
    parser.add_argument("--items-per-annotator", type=int, default=60)
    parser.add_argument("--think", default="5,15", help="an annotator's pause between items: min,max seconds")
    parser.add_argument("--login", action="store_true", help="log every user in through the form first")
    parser.add_argument("--workers", type=int, default=4, help="gunicorn sync workers (2 or more)")
    parser.add_argument(
        "--database-url",
        default=os.environ.get("LOAD_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/taxonomist_load"),
    )
    args = parser.parse_args()
    if args.quick:
        args.duration = 30
    if args.workers < 2:
        parser.error("--workers must be 2 or more")
    if not 1 <= args.duration <= 3600:
        parser.error("--duration must be between 1 and 3600 seconds")
    if urlsplit(args.database_url).hostname not in ("127.0.0.1", "localhost", "::1"):
        parser.error("--database-url must point at a database on this machine (127.0.0.1)")
    return args


def recreate_database(url: str) -> None:
    import psycopg2

    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    if not name or name in ("postgres", "template0", "template1"):
        raise SystemExit(f"refusing to drop the database {name!r}: give the load test a database of its own")
    admin = psycopg2.connect(
        dbname="postgres", user=parts.username or "postgres", password=parts.password,
        host=parts.hostname, port=parts.port or 5432,
    )  # fmt: skip
    admin.autocommit = True
    with admin.cursor() as cursor:
        cursor.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        cursor.execute(f'CREATE DATABASE "{name}"')
    admin.close()


def build_study(annotators: int, leads: int, per_annotator: int, sessions: dict[str, str]) -> dict[str, int]:
    """Migrate, then the study, codebook, members, items and round 1 (2 annotators per item); a
    logged-in session per member goes into `sessions` (username → session key)."""
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from apps.accounts.models import Membership, Role, Study, User
    from apps.annotation.models import Round, RoundItem
    from apps.annotation.services import assign_round
    from apps.corpus.models import Item
    from apps.corpus.records import ItemRecord
    from apps.corpus.services import render_pending, upsert_records
    from apps.taxonomy.loading import load_codebook_file

    study = Study.objects.create(slug=STUDY, name="Load test")
    codebook = {
        "name": "Load test codebook",
        "dimensions": [
            {"key": "kind", "name": "Kind", "multiple": False, "categories": [
                {"key": k, "name": k.title(), "definition": f"The issue is about {k}."}
                for k in ("bug", "question", "docs", "perf")]},
            {"key": "tags", "name": "Tags", "multiple": True, "categories": [
                {"key": k, "name": k.upper()} for k in ("gpu", "network", "config", "api")]},
        ],
    }  # fmt: skip
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump(codebook, handle)
    load_codebook_file(study, Path(handle.name))
    Path(handle.name).unlink()

    hashed = User(username="x")
    hashed.set_password(PASSWORD)  # one hash for everybody: creating 52 users stays fast
    names = [f"annotator{n}" for n in range(1, annotators + 1)]
    users = User.objects.bulk_create(
        [User(username=n, password=hashed.password) for n in names]
        + [User(username=f"lead{n}", password=hashed.password) for n in range(1, leads + 1)]
    )
    Membership.objects.bulk_create(
        Membership(study=study, user=u, role=Role.LEAD if u.username.startswith("lead") else Role.ANNOTATOR)
        for u in users
    )
    n_items = annotators * per_annotator // 2
    upsert_records(
        study,
        (
            ItemRecord(
                url=f"https://github.com/load/test/issues/{n}", source="github",
                external_id=f"load/test#{n}", title=f"Issue {n}: training hangs after epoch {n % 7}",
                body=f"Rank {n % 8} hangs.\n\n```python\nimport torch\nprint({n})\n```\n",
                body_format="markdown",
            )
            for n in range(1, n_items + 1)
        ),
    )  # fmt: skip
    render_pending(study)
    round_ = Round.objects.create(study=study, number=1, method="manual")
    RoundItem.objects.bulk_create(
        RoundItem(round=round_, item=item, position=i)
        for i, item in enumerate(Item.objects.filter(study=study).order_by("id"))
    )
    assign_round(study, 1, names, overlap=2)
    from django.conf import settings
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
    from django.contrib.sessions.backends.db import SessionStore

    from apps.annotation.models import Assignment

    for user in users:  # logged in already (logging in is measured apart: PBKDF2 costs ~1 s of CPU)
        store = SessionStore()
        store[SESSION_KEY] = str(user.pk)
        store[BACKEND_SESSION_KEY] = settings.AUTHENTICATION_BACKENDS[0]
        store[HASH_SESSION_KEY] = user.get_session_auth_hash()
        store.create()
        sessions[user.username] = str(store.session_key)
    return {"items": n_items, "assignments": Assignment.objects.filter(study=study).count()}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_until_up(base: str, process: subprocess.Popen[bytes], timeout: float = 60) -> None:
    import requests

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit("gunicorn exited before answering")
        try:
            if requests.get(f"{base}/login/", timeout=2).status_code == 200:
                return
        except requests.RequestException:
            pass
        time.sleep(0.3)
    raise SystemExit("gunicorn did not answer within a minute")


def audit(accepted: list[int]) -> list[str]:
    """What is wrong in the database after the run (an empty list when nothing is)."""
    from django.db.models import Count, Q

    from apps.adjudication.models import Decision
    from apps.annotation.models import Annotation, Assignment, AssignmentStatus, Finding

    problems: list[str] = []
    submitted = set(
        Assignment.objects.filter(study__slug=STUDY, status=AssignmentStatus.SUBMITTED).values_list(
            "pk", flat=True
        )
    )
    annotated = list(
        Annotation.objects.filter(assignment__study__slug=STUDY, submitted_at__isnull=False).values_list(
            "assignment_id", flat=True
        )
    )
    if len(annotated) != len(set(annotated)):
        problems.append(f"{len(annotated) - len(set(annotated))} assignments have two annotations")
    if set(annotated) != submitted:
        problems.append(
            f"{len(submitted - set(annotated))} submitted assignments without an annotation, "
            f"{len(set(annotated) - submitted)} annotations on assignments not marked submitted"
        )
    lost = set(accepted) - submitted
    if lost:
        problems.append(f"{len(lost)} accepted submissions are not in the database: {sorted(lost)[:10]}")
    findings = (
        Annotation.objects.filter(assignment__study__slug=STUDY, submitted_at__isnull=False)
        .annotate(n=Count("findings", distinct=True), values=Count("findings__values"))
        .filter(~Q(n=1) | Q(values__lt=2))
        .count()
    )
    if findings:
        problems.append(f"{findings} annotations do not hold exactly one finding with its labels")
    if Finding.objects.filter(
        annotation__submitted_at__isnull=True, annotation__assignment__study__slug=STUDY
    ).exists():
        problems.append("findings exist on an unsubmitted annotation")
    doubled = (
        Decision.objects.filter(study__slug=STUDY, is_current=True)
        .values("item_id")
        .annotate(n=Count("id"))
        .filter(n__gt=1)
        .count()
    )
    if doubled:
        problems.append(f"{doubled} items have two current decisions")
    return problems


def read_stats(prefix: Path) -> tuple[dict[str, str], list[dict[str, str]]]:
    with (prefix.parent / f"{prefix.name}_stats.csv").open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    total = next(r for r in rows if r["Name"] == "Aggregated")
    return total, [r for r in rows if r["Name"] != "Aggregated"]


def main() -> int:
    args = parse_args()
    os.environ["DATABASE_URL"] = args.database_url
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
    os.environ.setdefault("TAXONOMIST_VAR_DIR", tempfile.mkdtemp(prefix="taxonomist-load-"))
    print(f"Database {args.database_url}: recreating and filling…", flush=True)
    recreate_database(args.database_url)
    started = time.monotonic()
    sessions: dict[str, str] = {}
    sizes = build_study(args.annotators, args.leads, args.items_per_annotator, sessions)
    print(f"Study {STUDY}: {sizes['items']} items, {sizes['assignments']} assignments "
          f"({time.monotonic() - started:.0f} s)", flush=True)  # fmt: skip
    from django.db import connections

    connections.close_all()  # the web processes must not wait on this one

    work = Path(tempfile.mkdtemp(prefix="taxonomist-load-run-"))
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {**os.environ, "DEBUG": "0", "CONN_MAX_AGE": "60", "LOG_LEVEL": "WARNING"}
    web_log = (work / "gunicorn.log").open("wb")
    web = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "config.wsgi:application", "--bind", f"127.0.0.1:{port}",
         "--workers", str(args.workers), "--preload", "--timeout", "30",
         "--control-socket", str(work / "gunicorn.ctl")],
        cwd=ROOT, env=env, stdout=web_log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        wait_until_up(base, web)
        users = args.annotators + args.leads
        results = work / "accepted.json"
        session_file = work / "sessions.json"
        session_file.write_text(json.dumps(sessions), encoding="utf-8")
        locust_env = {**env, "LOAD_STUDY": STUDY, "LOAD_PASSWORD": PASSWORD, "LOAD_RESULTS": str(results),
                      "LOAD_SESSIONS": "" if args.login else str(session_file),
                      "LOAD_ANNOTATORS": str(args.annotators), "LOAD_LEADS": str(args.leads),
                      "LOAD_THINK": args.think}  # fmt: skip
        print(f"Locust: {args.annotators} annotators + {args.leads} leads for {args.duration} s on {base}…",
              flush=True)  # fmt: skip
        subprocess.run(
            [sys.executable, "-m", "locust", "-f", str(ROOT / "bench" / "locustfile.py"), "--headless",
             "--host", base, "-u", str(users), "-r", str(max(1, users // 5)), "-t", f"{args.duration}s",
             "--stop-timeout", "10", "--csv", str(work / "load"), "--only-summary", "--loglevel", "WARNING"],
            cwd=ROOT, env=locust_env, timeout=args.duration + 120, check=False,
        )  # fmt: skip
    finally:
        web.send_signal(signal.SIGTERM)
        try:
            web.wait(timeout=20)
        except subprocess.TimeoutExpired:
            web.kill()
        web_log.close()

    total, rows = read_stats(work / "load")
    accepted = json.loads(results.read_text(encoding="utf-8"))["accepted"] if results.exists() else []
    problems = audit(accepted)
    errors = int(total["Failure Count"])
    p95 = float(total["95%"])
    print()
    print(f"{'request':<22}{'count':>8}{'errors':>8}{'req/s':>8}{'median ms':>11}{'p95 ms':>9}")
    for row in [*rows, total]:
        print(f"{row['Name']:<22}{row['Request Count']:>8}{row['Failure Count']:>8}"
              f"{float(row['Requests/s']):>8.1f}{row['50%']:>11}{row['95%']:>9}")  # fmt: skip
    print()
    verdict = "met" if p95 <= TARGET_P95_MS else "MISSED"
    print(f"requests/s {float(total['Requests/s']):.1f} · median {total['50%']} ms · p95 {p95:.0f} ms "
          f"(target <= {TARGET_P95_MS:.0f}: {verdict}) · errors {errors}")  # fmt: skip
    print(f"submissions accepted {len(accepted)} (distinct assignments {len(set(accepted))}); "
          f"database audit: {'OK' if not problems else 'FAILED'}")  # fmt: skip
    for problem in problems:
        print(f"  - {problem}")
    if errors:
        print(f"failures: {work / 'load_failures.csv'}; server log: {work / 'gunicorn.log'}")
    return 1 if errors or problems else 0


if __name__ == "__main__":
    sys.exit(main())
