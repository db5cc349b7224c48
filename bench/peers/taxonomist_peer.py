"""Taxonomist's column: the peers' workload through /api/v1/ with tokens, on PostgreSQL under gunicorn.

The server is `bench_http.Server` (gunicorn, 2 sync workers, 127.0.0.1, DEBUG=0), the same as `make bench`;
a Celery worker (solo pool, the embedded filesystem broker under a temporary TAXONOMIST_VAR_DIR) runs the
import and export jobs, as `make run` does. The database (PEERS_DATABASE_URL, default `bench_peers`) is
created and migrated if needed; the study `peers-SIZE` is made by this file's `setup` step (a lead and an
annotator with API tokens) and deleted at the end, whatever happened.

    python bench/peers/taxonomist_peer.py setup|teardown --slug peers-2000   (what `run` calls)
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import os
import re
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

from common import (
    BENCH,
    LABELS,
    PAGE_SIZE,
    ROOT,
    WARMUP,
    PeerError,
    Process,
    check,
    free_port,
    loopback_only,
    poll,
    random_pages,
    session,
    stopping,
    time_requests,
)

LEAD, ANNOTATOR = "peers-lead", "peers-annotator"
CODEBOOK = {
    "name": "Peers benchmark",
    "dimensions": [
        {
            "key": "topic",
            "name": "Topic",
            "multiple": False,
            "categories": [{"key": label, "name": label.capitalize()} for label in LABELS],
        }
    ],
}
FINISHED = ("succeeded", "failed", "cancelled", "stalled")


# --- steps run in a child process with Django ------------------------------------------------------------


def setup(slug: str) -> dict[str, str]:
    """A fresh study `slug` with a lead and an annotator; their new API tokens."""
    from generate import delete_study, setup_django

    setup_django()
    from django.db import transaction

    from apps.accounts.models import ApiToken, Membership, Role, Study, User

    delete_study(slug)
    with transaction.atomic():
        study = Study.objects.create(slug=slug, name=f"Peers benchmark ({slug})", overlap=1)
        tokens = {}
        for username, role in ((LEAD, Role.LEAD), (ANNOTATOR, Role.ANNOTATOR)):
            user, _ = User.objects.get_or_create(username=username)
            Membership.objects.create(study=study, user=user, role=role)
            ApiToken.objects.filter(user=user).delete()
            tokens[username] = ApiToken.issue(user, "bench-peers")[1]
    return tokens


def teardown(slug: str) -> None:
    from bench_import import STUDY
    from generate import delete_study, setup_django

    setup_django()
    delete_study(slug)
    delete_study(STUDY)


def django_step(name: str, slug: str, env: dict[str, str]) -> Any:
    out = subprocess.run(
        [sys.executable, __file__, name, "--slug", slug], env=env, cwd=ROOT, capture_output=True, text=True
    )
    if out.returncode != 0:
        raise PeerError(f"taxonomist {name} failed:\n{out.stderr[-1500:]}")
    return json.loads(out.stdout.strip().splitlines()[-1]) if out.stdout.strip() else None


def prepare_database(url: str, env: dict[str, str]) -> None:
    """Create the PostgreSQL database of `url` if it is missing, migrate it, then VACUUM ANALYZE it.

    The peers start every run from a fresh store (a temporary folder); this database is kept between runs,
    and each run deletes its study at the end. Where autovacuum is off (as on the 2-CPU benchmark machines:
    `SHOW autovacuum`), the rows of earlier runs stay dead in the tables the next import writes to, and
    slowed it by a third (a 10,000-item job: 5.8 s, 4.1 s after a VACUUM). The vacuum gives Taxonomist
    the clean start the peers get."""
    import psycopg2

    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    admin = parts._replace(path="/postgres").geturl()
    connection = psycopg2.connect(admin)
    connection.autocommit = True
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name])
        if cursor.fetchone() is None:
            cursor.execute(f'CREATE DATABASE "{name}"')
    connection.close()
    migrate = [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"]
    out = subprocess.run(migrate, env=env, cwd=ROOT, capture_output=True, text=True)
    if out.returncode != 0:
        raise PeerError(f"migrating {url} failed:\n{out.stderr[-1500:]}")
    connection = psycopg2.connect(url)
    connection.autocommit = True  # VACUUM runs outside a transaction
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")
    connection.close()


@contextmanager
def environment(values: dict[str, str]) -> Iterator[dict[str, str]]:
    """os.environ with `values` for the block (bench_http.Server copies os.environ), restored after."""
    saved = dict(os.environ)
    os.environ.update(values)
    try:
        yield dict(os.environ)
    finally:
        os.environ.clear()
        os.environ.update(saved)


# --- the workload ----------------------------------------------------------------------------------------


def cursor(position: int | None) -> str:
    """DRF's CursorPagination cursor for the page after item id `position` (None: the first page)."""
    tokens = {} if position is None else {"p": str(position)}
    return base64.b64encode(urlencode(tokens).encode("ascii")).decode("ascii")


def workload(
    url: str, slug: str, tokens: dict[str, str], items_file: Path, size: int, args: Any
) -> dict[str, Any]:
    base = f"{url}/api/v1/studies/{slug}"
    lead = session(f"Token {tokens[LEAD]}")
    result: dict[str, Any] = {}

    print("  import ...", file=sys.stderr, flush=True)
    started = time.perf_counter()
    with items_file.open("rb") as handle:
        job = check(
            lead.post(
                f"{base}/imports/",
                data={"kind": "file", "format": "jsonl"},
                files={"file": ("items.jsonl", handle, "application/jsonl")},
            ),
            202,
        )
    uploaded = time.perf_counter() - started
    job = poll(
        lambda: check(lead.get(f"{base}/imports/{job['id']}/")),
        lambda j: j["status"] in FINISHED,
        timeout=3600,
    )
    seconds = time.perf_counter() - started
    if job["status"] != "succeeded" or job["created"] != size:
        raise PeerError(f"import ended {job['status']} with {job['created']} of {size} items: {job['error']}")
    at = {key: datetime.fromisoformat(job[key]) for key in ("created_at", "started_at", "finished_at")}
    result["import"] = {
        "items": size,
        "seconds": seconds,
        "rate": size / seconds,
        "job_seconds": (at["finished_at"] - at["started_at"]).total_seconds(),
        "queued_seconds": (at["started_at"] - at["created_at"]).total_seconds(),
        "upload_seconds": uploaded,
        # the worker fills the full-text vectors after the job (searches parse the waiting rows meanwhile):
        # waited for here, so that it does not weigh on the rows timed next, and reported beside the import
        "search_index_seconds": wait_for_search_index(args.database_url, slug),
    }

    check(lead.put(f"{base}/codebook/", json=CODEBOOK))
    check(lead.post(f"{base}/rounds/", json={"number": 1, "size": args.annotations + WARMUP, "seed": 1}))
    check(lead.post(f"{base}/rounds/1/assign/", json={"annotators": [ANNOTATOR], "overlap": 1}))
    annotator = session(f"Token {tokens[ANNOTATOR]}")
    version = check(annotator.get(f"{base}/codebook/"))["version"]
    queue: list[dict[str, Any]] = []
    page_url: str | None = f"{base}/my/queue/?page_size=500"
    while page_url:
        page = check(annotator.get(page_url))
        queue += page["results"]
        page_url = page["next"]
    calls = [
        partial(
            annotator.post,
            f"{base}/assignments/{assignment['id']}/annotation/",
            json={
                "findings": [{"values": {"topic": [LABELS[n % 3]]}}],
                "memo": "",
                "codebook_version": version,
            },
        )
        for n, assignment in enumerate(queue)
    ]
    result["submit"] = time_requests("taxonomist submit", calls, statuses=(201,))

    first = check(lead.get(f"{base}/items/?page_size=1"))["results"][0]["id"]
    calls = [
        partial(
            lead.get,
            f"{base}/items/",
            params={"page_size": PAGE_SIZE, "cursor": cursor(first - 1 + page * PAGE_SIZE if page else None)},
        )
        for page in random_pages(size, args.requests)
    ]
    result["list"] = time_requests("taxonomist list", calls, statuses=(200,))

    print("  export (JSON lines) ...", file=sys.stderr, flush=True)
    started = time.perf_counter()
    response = lead.get(f"{base}/export/items.jsonl", stream=True)
    exported = sum(1 for line in response.iter_lines() if line.strip())
    seconds = time.perf_counter() - started
    if response.status_code != 200 or exported != size:
        raise PeerError(f"the JSON-lines export: HTTP {response.status_code}, {exported} of {size} items")
    result["export"] = {
        "items": exported,
        "seconds": seconds,
        "rate": size / seconds,
        "how": "GET .../export/items.jsonl, every item with its labels, streamed",
    }

    print("  export (package) ...", file=sys.stderr, flush=True)
    started = time.perf_counter()
    job = check(lead.post(f"{base}/exports/", json={"format": "zip"}), 202)
    job = poll(
        lambda: check(lead.get(f"{base}/exports/{job['id']}/")),
        lambda j: j["status"] in FINISHED,
        timeout=3600,
    )
    if job["status"] != "succeeded":
        raise PeerError(f"export ended {job['status']}: {job['error']}")
    content = lead.get(job["download"]).content
    seconds = time.perf_counter() - started
    with zipfile.ZipFile(io.BytesIO(content)) as archive:
        exported = sum(1 for line in archive.read("items.jsonl").splitlines() if line.strip())
    if exported != size:
        raise PeerError(f"the package held {exported} of {size} items")
    result["package"] = {
        "items": exported,
        "seconds": seconds,
        "rate": size / seconds,
        "bytes": len(content),
        "how": "a Celery job, the replication package (zip)",
    }
    return result


def wait_for_search_index(database_url: str, slug: str, timeout: float = 600) -> float:
    """Seconds until no item of the study waits for its full-text vector (the worker's `corpus.index_search`
    after the import job), counted from now."""
    import psycopg2

    started = time.perf_counter()
    with psycopg2.connect(database_url) as connection, connection.cursor() as cursor:
        connection.autocommit = True
        while True:
            cursor.execute(
                "SELECT count(*) FROM corpus_item i JOIN accounts_study s ON s.id = i.study_id "
                "WHERE s.slug = %s AND i.search_vector IS NULL",
                [slug],
            )
            if cursor.fetchone()[0] == 0:
                return time.perf_counter() - started
            if time.perf_counter() - started > timeout:
                raise PeerError(f"the search index was not filled within {timeout:.0f} s of the import")
            time.sleep(0.1)


def service_import(items_file: Path, env: dict[str, str]) -> float:
    """items/s of the import service alone on the same file, without the render pass: `bench_import.py
    --file FILE --skip-render`, parsed as `run_all.py` parses it (its study `bench-import`, deleted after)."""
    command = [sys.executable, str(BENCH / "bench_import.py"), "--file", str(items_file), "--skip-render"]
    print(f"  $ {' '.join(command)}", file=sys.stderr, flush=True)
    out = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True)
    for line in out.stdout.splitlines():
        if line.startswith("import "):
            return float(re.findall(r"[\d,.]+", line)[2].replace(",", ""))
    raise PeerError(f"bench_import.py printed no import row:\n{out.stdout[-800:]}{out.stderr[-800:]}")


def run(size: int, items_file: Path, tmp: Path, args: Any) -> dict[str, Any]:
    """Taxonomist's figures; PeerError when something fails (the study is deleted either way)."""
    slug = f"peers-{size}"
    var = tmp / "taxonomist-var"
    var.mkdir()
    values = {
        "DATABASE_URL": args.database_url,
        "TAXONOMIST_VAR_DIR": str(var),
        "DEBUG": "0",
        "ALLOWED_HOSTS": "127.0.0.1",
    }
    values.update({k: "" for k in ("REDIS_URL", "DJANGO_ENV") if k in os.environ})
    with environment(values) as env:
        env.pop("DJANGO_ENV", None)
        prepare_database(args.database_url, env)
        tokens = django_step("setup", slug, env)
        try:
            from bench_http import Server

            worker_cmd = [str(Path(sys.executable).parent / "celery"), "-A", "config", "worker"]
            worker_cmd += ["--loglevel=INFO", "--concurrency=1", "--pool=solo"]
            with stopping([]) as processes:
                processes.append(
                    Process(
                        "taxonomist worker", worker_cmd, env=env, cwd=ROOT, log=tmp / "taxonomist-worker.log"
                    )
                )
                ready = time.monotonic() + 120
                while " ready." not in processes[0].tail(200):
                    if not processes[0].alive() or time.monotonic() > ready:
                        raise PeerError(f"the Celery worker did not start:\n{processes[0].tail()}")
                    time.sleep(0.2)
                port = free_port()
                with Server(port) as url:
                    loopback_only(port)
                    result = workload(url, slug, tokens, items_file, size, args)
            figure = result["import"]
            figure["service_rate"] = service_import(items_file, env)
            figure["how"] = (
                f"the upload {figure['upload_seconds']:.1f} s, then a Celery job, "
                f"{figure['queued_seconds']:.1f} s queued + {figure['job_seconds']:.1f} s import, every body "
                f"rendered when it ends, the search index filled by the worker "
                f"{figure['search_index_seconds']:.1f} s later; the import service alone on the same file "
                f"(bench_import.py, rendering included): {figure['service_rate']:,.0f}/s"
            )
            return result
        finally:
            try:
                django_step("teardown", slug, env)
            except PeerError as exc:  # say so, without hiding why the run itself ended
                print(f"  could not delete the study {slug}: {exc}", file=sys.stderr, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("step", choices=["setup", "teardown"])
    parser.add_argument("--slug", required=True)
    args = parser.parse_args()
    if args.step == "setup":
        print(json.dumps(setup(args.slug)))
    else:
        teardown(args.slug)


if __name__ == "__main__":
    main()
