"""Export benchmark: 100,000 decided items to CSV and to the replication package.

Usage (PostgreSQL, a database of its own; the study `bench-export` in it is recreated):

    createdb -h 127.0.0.1 -U postgres bench_export
    export DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench_export DEBUG=0
    .venv/bin/python manage.py migrate
    .venv/bin/python bench/bench_export.py [--items 100000] [--annotators 0] [--skip-generate]

or, on a study that already exists (e.g. `bench/generate.py`'s, which this script never modifies):

    .venv/bin/python bench/bench_export.py --study bench-100000 [--runs 3] [--phases csv,zip]

Data (generated with bulk_create, deterministic): the TOSEM 2023 codebook (five dimensions, trees three
levels deep), N items (GitHub and Stack Overflow, titles of 5-12 words), each with a current decision of
1-2 findings labelled as the TOSEM study does (a fault: distributed flag, symptom leaf, 1-2 fix patterns;
or a how-to topic); with ``--annotators K``, K annotators' submitted labels per item in one round too.

Each phase runs in a fresh Python process so that its peak resident memory (``ru_maxrss``) is its own, and
goes through the whole export job (`services.export_in_foreground`: read in chunks, write, SHA-256, rename):

- csv: the consolidated dataset as CSV;
- csv-raw: the same with every annotator's rows (only with ``--annotators``);
- zip: the replication package (items, dataset CSV and JSON, raw labels, codebook, rounds, agreement,
  taxonomy counts, README, manifest).

Prints per phase: wall seconds, the export process's CPU seconds, the seconds spent waiting for the
database, and peak RSS. On a machine shared with other work, CPU + DB is what the export costs; wall time
adds the wait for a free CPU. Targets: 100,000 rows to CSV in under 10 s and under 300 MB peak RSS.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
STUDY = "bench-export"
WORDS = [
    "training",
    "hangs",
    "nccl",
    "allreduce",
    "gradient",
    "rank",
    "worker",
    "process",
    "group",
    "barrier",
    "timeout",
    "gpu",
    "node",
    "cluster",
    "distributed",
    "parallel",
    "batch",
    "loss",
    "optimizer",
    "checkpoint",
    "tensor",
    "device",
    "memory",
    "cuda",
    "launch",
    "backend",
    "error",
    "when",
    "using",
]
BATCH = 5000


def setup_django() -> None:
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()


def peak_rss_mb() -> float:
    # Linux reports kilobytes.
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def remove(study: Any) -> None:
    """Delete an earlier run's study: labels first, then the references between categories, which are
    protected (PROTECT) so that no label can lose its category."""
    from django.db import transaction

    from apps.adjudication.models import Decision
    from apps.annotation.models import Assignment
    from apps.taxonomy.models import Category, Dimension

    with transaction.atomic():
        Decision.objects.filter(study=study).update(supersedes=None)
        Decision.objects.filter(study=study).delete()
        Assignment.objects.filter(study=study).delete()
        Dimension.objects.filter(codebook__study=study).update(applies_when_category=None)
        Category.objects.filter(dimension__codebook__study=study).update(parent=None, merged_into=None)
        study.delete()


def generate(items: int, annotators: int) -> dict[str, Any]:
    """Recreate the study and fill it with `items` decided items (see the module docstring)."""
    from django.db import connection, transaction
    from django.utils import timezone

    from apps.accounts.models import Membership, Role, Study, User
    from apps.adjudication.models import Decision, DecisionFinding, DecisionValue, Provenance
    from apps.annotation.models import (
        Annotation,
        Assignment,
        AssignmentStatus,
        Finding,
        LabelValue,
        Round,
        RoundItem,
    )
    from apps.corpus.models import Item
    from apps.taxonomy.index import CodebookIndex
    from apps.taxonomy.loading import load_codebook_file

    started = time.perf_counter()
    old = Study.objects.filter(slug=STUDY).first()
    if old is not None:
        remove(old)
    study = Study.objects.create(slug=STUDY, name="Export benchmark")
    load_codebook_file(study, ROOT / "fixtures" / "tosem23" / "codebook.json")
    index = CodebookIndex.for_study(study)
    dims = {d.key: d.id for d in index.dimensions}

    def leaves(key: str) -> list[int]:
        tree = index.tree(key)
        return [c for c in tree if not tree.children(c)]

    fault, howto = (index.category_by_key("issue_type", k).id for k in ("fault", "howto"))
    yes_no = leaves("distributed_specific")
    symptoms, fixes, topics = leaves("symptom"), leaves("fix_pattern"), leaves("howto_topic")
    rng = random.Random(2023)
    now = timezone.now()
    users = []
    for n in range(annotators):
        user, _ = User.objects.get_or_create(username=f"bench-annotator-{n}")
        Membership.objects.create(study=study, user=user, role=Role.ANNOTATOR)
        users.append(user)
    round_ = Round.objects.create(study=study, number=1, name="Benchmark", seed=1) if users else None

    def labels() -> list[list[tuple[int, int]]]:
        findings = []
        for _ in range(1 if rng.random() < 0.9 else 2):
            if rng.random() < 0.56:
                values = [(dims["issue_type"], fault), (dims["distributed_specific"], rng.choice(yes_no))]
                values.append((dims["symptom"], rng.choice(symptoms)))
                values += [(dims["fix_pattern"], f) for f in rng.sample(fixes, rng.choice([1, 1, 1, 2]))]
            else:
                values = [(dims["issue_type"], howto), (dims["howto_topic"], rng.choice(topics))]
            findings.append(values)
        return findings

    with transaction.atomic():
        for start in range(0, items, BATCH):
            rows = [
                Item(
                    study=study,
                    url=f"https://github.com/bench/repo{n % 50}/issues/{n}"
                    if n % 3
                    else f"https://stackoverflow.com/questions/{n}",
                    source="github" if n % 3 else "stackoverflow",
                    title=" ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 12))).capitalize(),
                    body="",
                )
                for n in range(start, min(items, start + BATCH))
            ]
            Item.objects.bulk_create(rows)
            decisions = Decision.objects.bulk_create(
                Decision(
                    study=study,
                    item=item,
                    round=round_,
                    provenance=Provenance.ADJUDICATED,
                    rationale="settled in the weekly meeting" if rng.random() < 0.2 else "",
                    decided_at=now,
                    codebook_version=index.version,
                )
                for item in rows
            )
            gold = [labels() for _ in decisions]
            findings = DecisionFinding.objects.bulk_create(
                DecisionFinding(decision=d, number=k + 1)
                for d, g in zip(decisions, gold, strict=True)
                for k in range(len(g))
            )
            flat = [values for g in gold for values in g]
            DecisionValue.objects.bulk_create(
                DecisionValue(finding=f, dimension_id=dim, category_id=cat)
                for f, values in zip(findings, flat, strict=True)
                for dim, cat in values
            )
            if users and round_ is not None:
                RoundItem.objects.bulk_create(
                    RoundItem(round=round_, item=item, position=item.pk) for item in rows
                )
                assignments = Assignment.objects.bulk_create(
                    Assignment(
                        study=study,
                        round=round_,
                        item=item,
                        annotator=user,
                        status=AssignmentStatus.SUBMITTED,
                        submitted_at=now,
                    )
                    for item in rows
                    for user in users
                )
                annotations = Annotation.objects.bulk_create(
                    Annotation(assignment=a, submitted_at=now, imported=True) for a in assignments
                )
                per = [g if rng.random() < 0.7 else labels() for g in gold for _ in users]
                afindings = Finding.objects.bulk_create(
                    Finding(annotation=a, number=k + 1)
                    for a, g in zip(annotations, per, strict=True)
                    for k in range(len(g))
                )
                LabelValue.objects.bulk_create(
                    LabelValue(finding=f, dimension_id=dim, category_id=cat)
                    for f, values in zip(afindings, [v for g in per for v in g], strict=True)
                    for dim, cat in values
                )
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
    return {
        "phase": "generate",
        "items": items,
        "seconds": time.perf_counter() - started,
        "rss": peak_rss_mb(),
    }


def phase(name: str, items: int, annotators: int, slug: str = STUDY) -> dict[str, Any]:
    setup_django()
    if name == "generate":
        return generate(items, annotators)
    from django.db import connection

    from apps.accounts.models import Study

    study = Study.objects.get(slug=slug)
    baseline = peak_rss_mb()
    started, cpu = time.perf_counter(), time.process_time()
    # Imported inside the timing: a fresh worker process pays for it too.
    from apps.core.models import JobStatus
    from apps.export import services

    options = services.parse_options(study, format="zip" if name == "zip" else "csv", raw=name == "csv-raw")
    waited = [0.0]

    def timed(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        # psycopg2 cursors fetch the whole result in execute(): this is the time spent on the database.
        begun = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            waited[0] += time.perf_counter() - begun

    with connection.execute_wrapper(timed):
        job = services.export_in_foreground(study, options)
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    job.refresh_from_db()
    if job.status != JobStatus.SUCCEEDED:
        raise SystemExit(f"{name} failed: {job.error}")
    if slug != STUDY:
        # A study this script did not make: leave no job or file behind in it.
        path = services.stored_path(job)
        if path is not None:
            path.unlink(missing_ok=True)
        job.delete()
    return {
        "phase": name,
        "items": job.progress_total or 0,
        "rows": job.row_count,
        "bytes": job.file_size,
        "seconds": seconds,
        "cpu": cpu,
        "db": waited[0],
        "rss": peak_rss_mb(),
        "baseline": baseline,
    }


def run_phase(name: str, items: int, annotators: int, slug: str = STUDY) -> dict[str, Any]:
    output = subprocess.run(
        [
            sys.executable,
            __file__,
            "--phase",
            name,
            "--items",
            str(items),
            "--annotators",
            str(annotators),
            "--study",
            slug,
        ],
        check=True,
        capture_output=True,
        text=True,
        env=os.environ,
    ).stdout
    result: dict[str, Any] = json.loads(output.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--annotators", type=int, default=0, help="Annotators' labels per item (0: none).")
    parser.add_argument("--skip-generate", action="store_true", help="Reuse the study of an earlier run.")
    parser.add_argument(
        "--study",
        default=STUDY,
        help=f"Export this existing study (read only) instead of generating {STUDY!r}.",
    )
    parser.add_argument("--phases", help="Comma-separated phases to run (default: csv[,csv-raw],zip).")
    parser.add_argument("--runs", type=int, default=1, help="Runs of each phase, each in a fresh process.")
    parser.add_argument("--phase", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase:
        print(json.dumps(phase(args.phase, args.items, args.annotators, args.study)))
        return
    if not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        print("warning: DATABASE_URL is not PostgreSQL; figures will not be comparable", file=sys.stderr)
    if not args.skip_generate and args.study == STUDY:
        made = run_phase("generate", args.items, args.annotators)
        print(f"generated {made['items']} decided items in {made['seconds']:.1f} s", file=sys.stderr)
    phases = (
        args.phases.split(",") if args.phases else ["csv", *(["csv-raw"] if args.annotators else []), "zip"]
    )
    rows = [
        run_phase(name, args.items, args.annotators, args.study) for name in phases for _ in range(args.runs)
    ]
    print(
        f"{'phase':<8} {'items':>8} {'rows':>8} {'MB':>6} {'wall s':>7} {'CPU s':>6} {'DB s':>5} "
        f"{'rows/s':>8} {'peak RSS':>9} {'start RSS':>9}"
    )
    for row in rows:
        print(
            f"{row['phase']:<8} {row['items']:>8} {row['rows']:>8} {row['bytes'] / 1e6:>6.1f} "
            f"{row['seconds']:>7.1f} {row['cpu']:>6.1f} {row['db']:>5.1f} "
            f"{row['rows'] / row['seconds']:>8,.0f} {row['rss']:>6.0f} MB {row['baseline']:>6.0f} MB"
        )
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs", file=sys.stderr)


if __name__ == "__main__":
    main()
