"""Import benchmark: 100,000 JSONL items through the import service, then the render pass.

Usage (PostgreSQL, a database of its own; the study `bench-import` in it is recreated):

    createdb -h 127.0.0.1 -U postgres bench_import
    export DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench_import DEBUG=0
    .venv/bin/python manage.py migrate
    .venv/bin/python bench/bench_import.py [--items 100000] [--comments] [--skip-render]

Each phase runs in a fresh Python process so that its peak resident memory (`ru_maxrss`) is its own:

- generate: write the JSONL file (1-3 KB Markdown bodies with fenced code blocks, tags, an extra
  column; 0-3 comments each with --comments), deterministic (seeded);
- import: the file import of a job, as `import_items` runs it but without its render phase (on
  PostgreSQL: one pass over the file, batches of 1,000 written by the background writer in one
  transaction; on SQLite: a checking pass, then the batches);
- index (PostgreSQL): the full-text vectors of the imported items, which a worker fills after an import
  job (`corpus.services.search_index`; searches parse the items still waiting meanwhile);
- reimport: the same file again; every item is unchanged, nothing is written;
- render: the render pass over the 100,000 unrendered items (Markdown -> HTML, Pygments, nh3).

Prints a table of items/s and peak RSS per phase. Targets: import >= 7,000 items/s, peak < 300 MB.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
STUDY = "bench-import"
WORDS = [
    "training", "hangs", "nccl", "allreduce", "gradient", "rank", "worker", "process", "group", "barrier",
    "timeout", "gpu", "node", "cluster", "distributed", "parallel", "batch", "loss", "optimizer",
    "checkpoint", "tensor", "device", "memory", "cuda", "launch", "backend", "error", "when", "using",
    "multiple", "machines", "the", "model", "does", "not", "converge", "after", "epoch", "with", "horovod",
]  # fmt: skip
CODE = [
    "import torch\nimport torch.distributed as dist\n\ndist.init_process_group('nccl')\nmodel = DDP(model)\n",
    "hvd.init()\nopt = hvd.DistributedOptimizer(opt)\nfor step in range(1000):\n    loss = model(x)\n",
    "strategy = tf.distribute.MirroredStrategy()\nwith strategy.scope():\n    model = build()\n",
]


def paragraph(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + "."


def body(rng: random.Random) -> str:
    """A 1-3 KB Markdown body: prose, a fenced code block, more prose, sometimes a traceback."""
    target = rng.randint(1000, 3000)
    parts = [paragraph(rng, rng.randint(20, 60))]
    parts.append(f"```python\n{rng.choice(CODE)}```")
    while sum(len(p) for p in parts) < target:
        if rng.random() < 0.2:
            parts.append(
                f'```\nTraceback (most recent call last):\n  File "train.py", line {rng.randint(1, 900)}\n```'
            )
        else:
            parts.append(paragraph(rng, rng.randint(15, 50)))
    return "\n\n".join(parts)[:target]


def generate(path: Path, count: int, comments: bool = False) -> None:
    rng = random.Random(2023)
    with path.open("w", encoding="utf-8") as handle:
        for n in range(1, count + 1):
            row: dict[str, Any] = {
                "url": f"https://github.com/bench/repo{n % 50}/issues/{n}",
                "title": paragraph(rng, rng.randint(5, 12))[:200],
                "body": body(rng),
                "created_at": f"20{rng.randint(16, 23)}-0{rng.randint(1, 9)}-1{rng.randint(0, 9)}T10:00:00Z",
                "tags": rng.sample(
                    ["bug", "module: ddp", "question", "nccl", "performance", "docs"], rng.randint(0, 3)
                ),
                "component": rng.choice(["runtime", "api", "docs"]),
            }
            if comments:
                row["comments"] = [
                    {"author": f"user{rng.randint(1, 999)}", "body": paragraph(rng, rng.randint(10, 40))}
                    for _ in range(rng.randint(0, 3))
                ]
            handle.write(json.dumps(row) + "\n")


def setup_django() -> None:
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()


def peak_rss_mb() -> float:
    # Linux reports kilobytes.
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class ServerCpu:
    """CPU seconds of the database server's backends serving this database during a phase.

    Samples pg_stat_activity and /proc/<pid>/stat twice a second (the server runs on this machine);
    Linux only. Lets the table tell this process's work from the server's on a loaded machine.
    """

    def __init__(self) -> None:
        self.seen: dict[int, float] = {}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.ticks = os.sysconf("SC_CLK_TCK")

    def run(self) -> None:
        from django.db import connection

        with connection.cursor() as cursor:
            while not self.stop.is_set():
                cursor.execute(
                    "SELECT pid FROM pg_stat_activity "
                    "WHERE datname = current_database() AND pid <> pg_backend_pid()"
                )
                for (pid,) in cursor.fetchall():
                    try:
                        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                    except OSError:
                        continue
                    self.seen[pid] = (int(fields[11]) + int(fields[12])) / self.ticks
                self.stop.wait(0.5)
        connection.close()

    def __enter__(self) -> ServerCpu:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()

    @property
    def seconds(self) -> float:
        return sum(self.seen.values())


def phase(name: str, path: Path) -> dict[str, Any]:
    setup_django()
    from django.db import connection

    from apps.accounts.models import Study
    from apps.core.jobs import claim_job
    from apps.core.models import JobStatus
    from apps.corpus import services
    from apps.corpus.models import ImportJob, Item, ItemComment
    from apps.corpus.params import FileParams

    if name == "reset":
        Study.objects.filter(slug=STUDY).delete()
        Study.objects.create(slug=STUDY, name="Import benchmark")
        if connection.vendor == "postgresql":  # start from tables without the dead rows of earlier runs
            with connection.cursor() as cursor:
                cursor.execute(f"VACUUM ANALYZE {Item._meta.db_table}, {ItemComment._meta.db_table}")
        return {}
    study = Study.objects.get(slug=STUDY)
    baseline = peak_rss_mb()
    server = ServerCpu() if connection.vendor == "postgresql" else None
    if server is not None:
        server.__enter__()
    started = time.perf_counter()
    cpu_started = time.process_time()
    if name in ("import", "reimport"):
        job = services.create_import_job(study, FileParams(format="jsonl"), upload=path)
        claimed = claim_job(ImportJob, job.pk)
        assert claimed is not None
        services.run_import(claimed, render=False, search_index="skip")
        claimed.refresh_from_db()
        if claimed.status != JobStatus.SUCCEEDED:
            raise SystemExit(f"import failed: {claimed.error}")
        count = claimed.created + claimed.updated + claimed.unchanged
        detail = services.summarize(claimed)
    elif name == "index":
        from apps.corpus.services.search_index import fill_search_vectors, pending_search_vectors

        count = fill_search_vectors(study.pk)
        detail = f"{pending_search_vectors(study.pk)} left without a search vector"
    elif name == "render":
        count = services.render_pending(study)
        detail = f"{Item.objects.in_study(study).unrendered().count()} left unrendered"
    else:
        raise SystemExit(f"unknown phase {name}")
    seconds = time.perf_counter() - started
    cpu = time.process_time() - cpu_started
    if server is not None:
        server.__exit__()
    return {
        "cpu": cpu,
        "server_cpu": server.seconds if server is not None else 0.0,
        "phase": name,
        "items": count,
        "seconds": seconds,
        "rate": count / seconds if seconds else 0.0,
        "rss": peak_rss_mb(),
        "baseline": baseline,
        "detail": detail,
        "load": os.getloadavg()[0],
    }


def run_phase(name: str, path: Path) -> dict[str, Any]:
    output = subprocess.run(
        [sys.executable, __file__, "--phase", name, "--file", str(path)],
        check=True,
        capture_output=True,
        text=True,
        env=os.environ,
    ).stdout
    result: dict[str, Any] = json.loads(output.strip().splitlines()[-1]) if output.strip() else {}
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--phase", help=argparse.SUPPRESS)
    parser.add_argument("--file", help="Reuse this JSONL file instead of generating one.")
    parser.add_argument("--skip-render", action="store_true", help="Time the import phases only.")
    parser.add_argument("--comments", action="store_true", help="Give items 0-3 comments each.")
    args = parser.parse_args()
    if args.phase:
        print(json.dumps(phase(args.phase, Path(args.file))))
        return
    if not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        print("warning: DATABASE_URL is not PostgreSQL; figures will not be comparable", file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="bench-import-") as tmp:
        path = Path(args.file) if args.file else Path(tmp) / "items.jsonl"
        if not args.file:
            started = time.perf_counter()
            generate(path, args.items, comments=args.comments)
            size = path.stat().st_size / 1e6
            print(
                f"generated {args.items} items ({size:.0f} MB) in {time.perf_counter() - started:.1f} s",
                file=sys.stderr,
            )
        run_phase("reset", path)
        rows = [run_phase("import", path)]
        if os.environ.get("DATABASE_URL", "").startswith("postgres"):
            rows.append(run_phase("index", path))
        rows.append(run_phase("reimport", path))
        if not args.skip_render:
            rows.append(run_phase("render", path))
    columns = [("phase", "<10"), ("items", ">8"), ("seconds", ">8"), ("items/s", ">9"), ("peak RSS", ">9")]
    columns += [("start RSS", ">9"), ("py CPU s", ">8"), ("db CPU s", ">8"), ("load", ">5")]
    print(" ".join(f"{name:{spec}}" for name, spec in columns) + "  result")
    for row in rows:
        print(
            f"{row['phase']:<10} {row['items']:>8} {row['seconds']:>8.1f} {row['rate']:>9,.0f} "
            f"{row['rss']:>6.0f} MB {row['baseline']:>6.0f} MB {row['cpu']:>8.1f} {row['server_cpu']:>8.1f} "
            f"{row['load']:>5.1f}  {row['detail']}"
        )
    print(
        f"({os.cpu_count()} CPUs; py CPU: this process's CPU seconds, all threads; db CPU: the server's "
        "backends for this database; load: the 1-minute load average when the phase ended)"
    )


if __name__ == "__main__":
    main()
