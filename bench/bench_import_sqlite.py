"""The embedded default: a JSONL import on SQLite against a raw parse-and-insert of the same file.

Usage (no server needed; everything goes into a temporary folder):

    .venv/bin/python bench/bench_import_sqlite.py [--items 20000] [--runs 3]

Each run, in the same process tree and one after the other, so that the machine's load weighs on
both alike:

- raw: `json.loads` of every line and one `executemany` INSERT of (url, title, body, tags, the row)
  into a table with a unique URL, with the standard library's sqlite3, in one transaction: what the
  import cannot do faster than;
- import: the import job of Taxonomist (`run_import`, as the Celery task runs it) on a migrated
  SQLite database (WAL, as in settings), from the same file: checking pass, upsert, every body
  rendered (cmark-gfm, Pygments, nh3) and stored rendered by the time the job ends.

Prints both times and their ratio per run, and the median ratio. Target (issue 25): ratio <= 6.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from bench_import import generate  # noqa: E402  (bench/ is not a package)

TARGET_RATIO = 6.0


def raw_insert(path: Path, database: Path) -> float:
    """Seconds to parse the file and insert its rows into a fresh SQLite table."""
    started = time.perf_counter()
    connection = sqlite3.connect(database)
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute(
        "CREATE TABLE item (id INTEGER PRIMARY KEY, url TEXT UNIQUE NOT NULL, title TEXT, body TEXT, "
        "tags TEXT, raw TEXT)"
    )
    with path.open(encoding="utf-8") as handle, connection:
        rows = (json.loads(line) for line in handle if line.strip())
        connection.executemany(
            "INSERT INTO item (url, title, body, tags, raw) VALUES (?, ?, ?, ?, ?)",
            (
                (row["url"], row.get("title", ""), row.get("body", ""), json.dumps(row.get("tags", [])),
                 json.dumps(row))
                for row in rows
            ),
        )  # fmt: skip
    connection.close()
    return time.perf_counter() - started


def taxonomist_import(path: Path, database: Path) -> float:
    """Seconds of the import job in a fresh process (migrations before the clock starts)."""
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{database}", "DEBUG": "0"}
    env.pop("REDIS_URL", None)
    manage = [sys.executable, str(ROOT / "manage.py")]
    subprocess.run([*manage, "migrate", "-v0"], check=True, env=env, cwd=ROOT)
    output = subprocess.run(
        [sys.executable, __file__, "--job", str(path)],
        check=True,
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
    ).stdout
    return float(output.strip().splitlines()[-1])


def job(path: Path) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from apps.accounts.models import Study
    from apps.core.jobs import claim_job
    from apps.core.models import JobStatus
    from apps.corpus import services
    from apps.corpus.models import ImportJob, Item
    from apps.corpus.params import FileParams

    study = Study.objects.create(slug="bench-sqlite", name="SQLite import benchmark")
    created = services.create_import_job(study, FileParams(format="jsonl"), upload=path)
    claimed = claim_job(ImportJob, created.pk)
    assert claimed is not None
    started = time.perf_counter()
    done = services.run_import(claimed)
    seconds = time.perf_counter() - started
    if done.status != JobStatus.SUCCEEDED:
        raise SystemExit(f"import failed: {done.error}")
    left = Item.objects.in_study(study).unrendered().count()
    if left:
        raise SystemExit(f"{left} items left unrendered when the job ended")
    print(seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--file", help="Reuse this JSONL file instead of generating one.")
    parser.add_argument("--job", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.job:
        job(Path(args.job))
        return
    ratios = []
    with tempfile.TemporaryDirectory(prefix="bench-sqlite-") as tmp:
        path = Path(args.file) if args.file else Path(tmp) / "items.jsonl"
        if not args.file:
            generate(path, args.items)
        count = sum(1 for line in path.open(encoding="utf-8") if line.strip())
        print(f"{count} items, {path.stat().st_size / 1e6:.0f} MB; {os.cpu_count()} CPUs")
        print(f"{'run':>3} {'raw s':>7} {'import s':>9} {'items/s':>8} {'ratio':>6} {'load':>5}")
        for run in range(1, args.runs + 1):
            raw = raw_insert(path, Path(tmp) / f"raw-{run}.sqlite3")
            imported = taxonomist_import(path, Path(tmp) / f"taxonomist-{run}.sqlite3")
            ratios.append(imported / raw)
            print(
                f"{run:>3} {raw:>7.2f} {imported:>9.2f} {count / imported:>8,.0f} {imported / raw:>6.1f} "
                f"{os.getloadavg()[0]:>5.1f}"
            )
    median = statistics.median(ratios)
    verdict = "met" if median <= TARGET_RATIO else "MISSED"
    print(f"median ratio {median:.1f} (target <= {TARGET_RATIO:g}: {verdict})")


if __name__ == "__main__":
    main()
