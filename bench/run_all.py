"""Every benchmark at one study size, on PostgreSQL, printed as one table (`make bench`).

Usage:

    createdb -h 127.0.0.1 -U postgres bench          # once
    .venv/bin/python bench/run_all.py --size 10000|100000 [--runs 3] [--requests 200] [--skip-generate]

DATABASE_URL must point at a PostgreSQL database used for nothing else (default
postgres://postgres@127.0.0.1:5432/bench); the command migrates it. Steps:

1. generate the study ``bench-SIZE`` (`bench/generate.py`; skipped with ``--skip-generate`` when it exists);
2. import: `bench/bench_import.py --items SIZE --skip-render` (the import service end to end, items/s and
   peak RSS of its own process);
3. requests: `bench/bench_http.py` under gunicorn (median and p95 at the client, queries per request);
4. agreement: the `agreement` command's computation for the whole study (all dimensions, all rounds, every
   coefficient) and the dashboard job (every dimension x every round and all rounds, bootstrap);
5. export: the CSV and the replication package (zip) through the export job;
6. import_study: the package back into a new study (then deleted).

Steps 4-6 run each in a fresh process (``--runs`` times; the median is printed) so that the peak RSS is
the step's own. Targets (issue 10) are printed beside each figure.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BENCH = Path(__file__).resolve().parent
DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/bench"


def peak_rss_mb() -> float:
    # Linux reports kilobytes.
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# --- steps run in a child process ----------------------------------------------------------------------


def step(name: str, slug: str, workdir: Path) -> dict[str, Any]:
    """One timed step in this (fresh) process; returns seconds, peak RSS and what the step counted."""
    sys.path.insert(0, str(BENCH))
    from generate import delete_study, setup_django

    setup_django()
    from django.core.management import call_command

    from apps.accounts.models import Study

    study = Study.objects.get(slug=slug)
    baseline = peak_rss_mb()
    started = time.perf_counter()
    detail: dict[str, Any] = {}
    if name == "agreement":
        with open(os.devnull, "w") as sink:
            call_command("agreement", slug, "--format", "json", stdout=sink)
    elif name == "dashboard":
        from apps.agreement.models import AgreementSnapshot
        from apps.agreement.services import DASHBOARD_BOOTSTRAP, DASHBOARD_SEED, fingerprint, run_snapshot

        params = {
            "kind": "dashboard",
            "level": None,
            "bootstrap": DASHBOARD_BOOTSTRAP,
            "seed": DASHBOARD_SEED,
        }
        snapshot = AgreementSnapshot.objects.create(
            study=study, params={**params, "fingerprint": fingerprint(study)}
        )
        snapshot = run_snapshot(snapshot)
        detail["status"] = snapshot.status
    elif name in ("csv", "zip"):
        from apps.export import services

        options = services.parse_options(study, format=name, raw=False)
        job = services.export_in_foreground(study, options)
        job.refresh_from_db()
        if job.status != "succeeded":
            raise SystemExit(f"export {name} failed: {job.error}")
        detail.update(rows=job.row_count, bytes=job.file_size)
        path = services.stored_path(job)
        if name == "zip" and path is not None:
            # Copied by blocks: reading the file whole would add its size to the step's peak RSS.
            shutil.copyfile(path, workdir / "package.zip")
    elif name == "import_study":
        from apps.export.package import import_study

        target = f"{slug}-restored"
        delete_study(target)
        baseline = peak_rss_mb()
        started = time.perf_counter()
        import_study(target, workdir / "package.zip", echo=lambda line: None)
        seconds = time.perf_counter() - started
        detail["items"] = study.items.count()
        rss = peak_rss_mb()
        delete_study(target)
        return {"step": name, "seconds": seconds, "rss": rss, "baseline": baseline, **detail}
    else:
        raise SystemExit(f"unknown step {name}")
    return {
        "step": name,
        "seconds": time.perf_counter() - started,
        "rss": peak_rss_mb(),
        "baseline": baseline,
        **detail,
    }


def run_step(name: str, slug: str, workdir: Path, runs: int) -> dict[str, Any]:
    """The step `runs` times, each in a fresh process: median seconds, highest peak RSS."""
    results = []
    for _ in range(runs):
        out = subprocess.run(
            [sys.executable, __file__, "--step", name, "--slug", slug, "--workdir", str(workdir)],
            check=True,
            capture_output=True,
            text=True,
            env=os.environ,
        ).stdout
        results.append(json.loads(out.strip().splitlines()[-1]))
    best = dict(results[0])
    best["seconds"] = statistics.median(r["seconds"] for r in results)
    best["rss"] = max(r["rss"] for r in results)
    best["runs"] = runs
    return best


# --- the parent ----------------------------------------------------------------------------------------


def run(cmd: list[str]) -> str:
    print("$ " + " ".join(cmd), file=sys.stderr, flush=True)
    return subprocess.run(cmd, check=True, capture_output=True, text=True, env=os.environ, cwd=ROOT).stdout


def import_figures(size: int) -> dict[str, Any]:
    """bench_import's `import` row: items/s and peak RSS."""
    out = run([sys.executable, str(BENCH / "bench_import.py"), "--items", str(size), "--skip-render"])
    for line in out.splitlines():
        if line.startswith("import "):
            fields = re.findall(r"[\d,.]+", line)
            return {
                "items": int(fields[0]),
                "seconds": float(fields[1]),
                "rate": float(fields[2].replace(",", "")),
                "rss": float(fields[3]),
            }
    raise SystemExit(f"bench_import printed no import row:\n{out}")


def verdict(ok: bool | None) -> str:
    return "" if ok is None else ("met" if ok else "MISSED")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=10_000, help="items in the study (10000 or 100000)")
    parser.add_argument("--runs", type=int, default=3, help="runs of each job step (median printed)")
    parser.add_argument("--requests", type=int, default=200, help="requests per endpoint")
    parser.add_argument("--port", type=int, default=8790)
    parser.add_argument("--skip-generate", action="store_true", help="reuse the study bench-SIZE")
    parser.add_argument("--skip-import", action="store_true", help="skip bench_import")
    parser.add_argument("--json", metavar="FILE", help="also write every figure to FILE as JSON")
    parser.add_argument("--step", help=argparse.SUPPRESS)
    parser.add_argument("--slug", help=argparse.SUPPRESS)
    parser.add_argument("--workdir", help=argparse.SUPPRESS)
    args = parser.parse_args()
    os.environ.setdefault("DATABASE_URL", DEFAULT_URL)
    os.environ["DEBUG"] = "0"
    if args.step:
        print(json.dumps(step(args.step, args.slug, Path(args.workdir))))
        return
    if not os.environ["DATABASE_URL"].startswith("postgres"):
        raise SystemExit("DATABASE_URL must point at a PostgreSQL bench database (createdb bench)")
    slug = f"bench-{args.size}"
    python = sys.executable
    run([python, "manage.py", "migrate", "--noinput", "-v", "0"])
    figures: dict[str, Any] = {"size": args.size, "started": time.strftime("%Y-%m-%d %H:%M")}
    if not args.skip_generate:
        print(run([python, str(BENCH / "generate.py"), "--size", str(args.size)]), file=sys.stderr)
    if not args.skip_import:
        figures["import"] = import_figures(args.size)
    http = json.loads(
        run(
            [
                python,
                str(BENCH / "bench_http.py"),
                "--slug",
                slug,
                "--requests",
                str(args.requests),
                "--port",
                str(args.port),
                "--json",
            ]
        )
        .strip()
        .splitlines()[-1]
    )
    figures["http"] = http
    with tempfile.TemporaryDirectory(prefix="bench-") as tmp:
        for name in ("agreement", "dashboard", "csv", "zip", "import_study"):
            print(f"$ step {name} x{args.runs}", file=sys.stderr, flush=True)
            figures[name] = run_step(name, slug, Path(tmp), args.runs)
    figures["load"] = os.getloadavg()
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2))
    print_report(figures)


def print_report(f: dict[str, Any]) -> None:
    size = f["size"]
    print(
        f"\nTaxonomist benchmarks, {size:,} items, {f['started']}, "
        f"{os.cpu_count()} CPUs, load {f['load'][0]:.1f}"
    )
    print(f"{'what':<36} {'median':>10} {'p95':>9} {'queries':>8} {'peak RSS':>9}  target")
    if "import" in f:
        i = f["import"]
        ok = i["rate"] >= 7000 and i["rss"] <= 300
        print(
            f"{'import (items/s)':<36} {i['rate']:>10,.0f} {'':>9} {'':>8} {i['rss']:>6.0f} MB  "
            f">= 7,000/s, <= 300 MB {verdict(ok)}"
        )
    for r in f["http"]:
        queries = (
            str(r["queries_min"])
            if r["queries_min"] == r["queries_max"]
            else f"{r['queries_min']}-{r['queries_max']}"
        )
        name = r["endpoint"]
        if name.startswith(("next-item", "submit")):
            target, ok = "<= 5 ms median, <= 10 ms p95", r["median_ms"] <= 5 and r["p95_ms"] <= 10
        elif "list" in name or "queue" in name:
            target, ok = "<= 20 ms median", r["median_ms"] <= 20
        else:
            target, ok = "", None
        print(
            f"{name:<36} {r['median_ms']:>7.1f} ms {r['p95_ms']:>6.1f} ms {queries:>8} {'':>9}  "
            f"{target} {verdict(ok)}"
        )
    for key, label in (("agreement", "agreement: whole study"), ("dashboard", "agreement: dashboard job")):
        r = f[key]
        ok = r["seconds"] <= 5 and r["rss"] <= 300 if key == "agreement" else r["rss"] <= 300
        print(
            f"{label:<36} {r['seconds']:>8.2f} s {'':>9} {'':>8} {r['rss']:>6.0f} MB  "
            f"{'<= 5 s, ' if key == 'agreement' else ''}<= 300 MB {verdict(ok)}"
        )
    for key in ("csv", "zip"):
        r = f[key]
        rate = r["rows"] / r["seconds"] if r["seconds"] else 0.0
        ok = (rate >= 10_000 if key == "csv" else True) and r["rss"] <= 300
        label = f"export {key} ({r['rows']:,} rows)"
        print(
            f"{label:<36} {r['seconds']:>8.2f} s {rate:>7,.0f}/s {'':>8} "
            f"{r['rss']:>6.0f} MB  {'>= 10,000 rows/s, ' if key == 'csv' else ''}<= 300 MB {verdict(ok)}"
        )
    r = f["import_study"]
    print(
        f"{'import_study (the zip)':<36} {r['seconds']:>8.2f} s {'':>9} {'':>8} {r['rss']:>6.0f} MB  "
        f"<= 300 MB {verdict(r['rss'] <= 300)}"
    )
    print(
        "(requests: client-side times over --requests requests after a warm-up; jobs: median of --runs runs,"
        " each in a fresh process, peak RSS the highest)"
    )


if __name__ == "__main__":
    main()
