"""Agreement benchmark: every coefficient of docs/design.md §6 on 100,000 items, and our alpha against the
`krippendorff` package on the same data.

Usage:

    .venv/bin/python bench/bench_agreement.py [--items 100000] [--replicates 1000] [--seed 0]
    # with a database of its own (the study `bench-agreement` in it is recreated):
    createdb -h 127.0.0.1 -U postgres bench_agreement
    export DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench_agreement DEBUG=0
    .venv/bin/python manage.py migrate
    .venv/bin/python bench/bench_agreement.py --db

Generated data (seeded): each item has a true category of K = 30; each annotator gives it with probability
0.7, else a random category; 10 % of ratings are missing. Multi-choice: each annotator picks the item's true
set of 1-3 categories with probability 0.7, else a random set.

Phases, each timed with `time.perf_counter` (best of ``--repeat`` runs):

- metrics: `agreement_report` (all coefficients, per category, pairwise) and a bootstrap of alpha, for
  3 annotators (single-label and multi-choice) and 10 annotators; our nominal alpha against
  ``krippendorff.alpha(level_of_measurement="nominal")`` on the same matrix (values checked equal to 1e-9);
- tables: `ratings.build_table` from a study's label rows in memory (what follows the one query), for a
  flat dimension, and for a tree compared at the top level and at full depth;
- ``--db``: a study of ``--items`` items x 3 annotators x 2 dimensions written to the database, then
  `ratings.load_study_ratings` (queries counted) and a whole dashboard computation (every dimension, every
  round and all rounds, with the bootstrap).

Prints one table. Targets (2-core container): the whole report with a 1,000-replicate bootstrap on
100,000 x 3 under 5 s; our alpha no slower than the `krippendorff` package.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

K = 30
ROWS: list[tuple[str, str, str, str]] = []


def timed[T](label: str, size: str, fn: Callable[[], T], repeat: int = 1, note: str = "") -> tuple[T, float]:
    best, result = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    ROWS.append((label, size, f"{best:8.3f}", note))
    return result, best  # type: ignore[return-value]


def single_codes(rng: np.random.Generator, n: int, raters: int) -> np.ndarray[Any, np.dtype[np.int64]]:
    truth = rng.integers(0, K, n)
    codes = np.where(rng.random((n, raters)) < 0.7, truth[:, None], rng.integers(0, K, (n, raters)))
    codes[rng.random((n, raters)) < 0.1] = -1
    return codes.astype(np.int64)


def multi_sets(
    rng: np.random.Generator, n: int, raters: int
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    truth = rng.integers(0, K, n)
    size = rng.integers(1, 4, n)
    present = np.zeros((n, raters, K), dtype=np.bool_)
    for a in range(raters):
        agree = rng.random(n) < 0.7
        for j in range(3):
            use = j < size
            pick = np.where(agree, (truth + j) % K, rng.integers(0, K, n))
            present[np.arange(n)[use], a, pick[use]] = True
    rated = rng.random((n, raters)) >= 0.1
    present &= rated[:, :, None]
    return present, rated


def metrics_phase(n: int, replicates: int, seed: int, repeat: int) -> None:
    import krippendorff

    from apps.agreement.metrics import (
        MultiRatingTable,
        RatingTable,
        agreement_report,
        bootstrap_alpha_ci,
        krippendorff_alpha_nominal,
    )

    rng = np.random.default_rng(seed)
    categories = tuple(f"c{k}" for k in range(K))
    items = tuple(f"https://example.org/issues/{i}" for i in range(n))

    def single(raters: int) -> None:
        size = f"{n:,} x {raters}"
        names = tuple(f"annotator{a}" for a in range(raters))
        codes = single_codes(rng, n, raters)
        table, _ = timed("table (RatingTable)", size, lambda: RatingTable(codes, categories, items, names))
        report, t_report = timed("report: all coefficients", size, lambda: agreement_report(table), repeat)
        _, t_boot = timed(
            f"bootstrap alpha, {replicates:,} replicates",
            size,
            lambda: bootstrap_alpha_ci(table, replicates, seed=seed),
            repeat,
        )
        ROWS.append(
            ("report + bootstrap", size, f"{t_report + t_boot:8.3f}", "the dashboard's cost per table")
        )
        ours, t_ours = timed(
            "alpha, ours (exact)", size, lambda: krippendorff_alpha_nominal(table).value, repeat
        )
        data = np.where(codes >= 0, codes, np.nan).T.astype(np.float64)
        domain = np.arange(K, dtype=np.float64)
        theirs, t_theirs = timed(
            "alpha, krippendorff package",
            size,
            lambda: krippendorff.alpha(data, value_domain=domain, level_of_measurement="nominal"),
            repeat,
        )
        assert ours is not None and abs(ours - theirs) < 1e-9, (ours, theirs)
        ROWS.append(
            (
                "alpha: ours / krippendorff",
                size,
                f"{t_ours / t_theirs:8.4f}",
                f"ratio of times ({t_theirs / t_ours:,.0f}x faster); "
                f"alpha {report['krippendorff_alpha']:.6f} both",
            )
        )

    single(3)
    single(10)

    size = f"{n:,} x 3 sets"
    present, rated = multi_sets(rng, n, 3)
    multi, _ = timed(
        "table (MultiRatingTable)",
        size,
        lambda: MultiRatingTable(present, rated, categories, items, ("a", "b", "c")),
    )
    _, t_report = timed("report incl. MASI, Jaccard", size, lambda: agreement_report(multi), repeat)
    _, t_boot = timed(
        f"bootstrap alpha, {replicates:,} replicates",
        size,
        lambda: bootstrap_alpha_ci(multi, replicates, seed=seed),
    )
    ROWS.append(("report + bootstrap", size, f"{t_report + t_boot:8.3f}", ""))

    codes = single_codes(rng, n, 3)
    triples = [
        (items[i], ("a", "b", "c")[a], categories[int(codes[i, a])])
        for i in range(n)
        for a in range(3)
        if codes[i, a] >= 0
    ]
    timed(
        "RatingTable.from_triples",
        f"{len(triples):,} triples",
        lambda: RatingTable.from_triples(triples, categories),
    )


def _tosem_like_index() -> Any:
    """A codebook in memory: `kind` (flat, 30 categories) and `symptom` (5 stages x 6 leaves)."""
    from apps.taxonomy.index import CategoryInfo, CodebookIndex, DimensionInfo

    def category(pk: int, dimension: int, parent: int | None, key: str) -> CategoryInfo:
        return CategoryInfo(pk, dimension, parent, key, key, "", "", "", (), pk, "active", None, None)

    dimensions = [
        DimensionInfo(1, "kind", "Kind", "", False, 0, None, None, False),
        DimensionInfo(2, "symptom", "Symptom", "", False, 1, None, None, False),
    ]
    categories = [category(100 + k, 1, None, f"kind-{k}") for k in range(K)]
    for stage in range(5):
        categories.append(category(200 + stage, 2, None, f"stage-{stage}"))
        categories += [
            category(300 + 6 * stage + leaf, 2, 200 + stage, f"leaf-{stage}-{leaf}") for leaf in range(6)
        ]
    return CodebookIndex(codebook_id=1, name="bench", version=1, dimensions=dimensions, categories=categories)


def tables_phase(n: int, seed: int, repeat: int) -> None:
    import django

    django.setup()
    from apps.agreement.ratings import RoundInfo, StudyRatings, build_table

    rng = np.random.default_rng(seed)
    index = _tosem_like_index()
    codes = single_codes(rng, n, 3)
    leaf = single_codes(rng, n, 3)
    item, annotator = np.nonzero(codes >= 0)
    item2, annotator2 = np.nonzero(leaf >= 0)
    dtype = np.dtype(
        [(c, np.int64) for c in ("round", "item", "annotator", "finding", "dimension", "category")]
    )
    rows = np.zeros(len(item) + len(item2), dtype=dtype)
    rows["round"] = 1 + (np.concatenate([item, item2]) % 5)
    rows["item"] = np.concatenate([item, item2])
    rows["annotator"] = np.concatenate([annotator, annotator2]) + 1
    rows["finding"] = 1
    rows["dimension"] = np.concatenate([np.full(len(item), 1), np.full(len(item2), 2)])
    rows["category"] = np.concatenate([100 + codes[item, annotator], 300 + leaf[item2, annotator2]])
    ratings = StudyRatings(
        1, index, tuple(RoundInfo(r, r, "") for r in range(1, 6)), {1: "a", 2: "b", 3: "c"}, rows
    )
    size = f"{n:,} x 3"
    timed("build_table: flat dimension", size, lambda: build_table(ratings, "kind"), repeat)
    timed("build_table: tree at level 1", size, lambda: build_table(ratings, "symptom", level=1), repeat)
    timed("build_table: tree at full depth", size, lambda: build_table(ratings, "symptom"), repeat)
    timed(
        "build_table: one round of five", size, lambda: build_table(ratings, "kind", round_number=3), repeat
    )


def db_phase(n: int, seed: int) -> None:
    import django

    django.setup()
    from django.db import connection, transaction
    from django.test.utils import CaptureQueriesContext
    from django.utils import timezone

    from apps.accounts.models import Role, Study, User
    from apps.agreement.metrics import agreement_report
    from apps.agreement.models import AgreementSnapshot
    from apps.agreement.ratings import build_table, load_study_ratings
    from apps.agreement.services import DASHBOARD_BOOTSTRAP, DASHBOARD_SEED, fingerprint, run_snapshot
    from apps.annotation.models import Annotation, Assignment, AssignmentStatus, Finding, LabelValue, Round
    from apps.corpus.models import Item
    from apps.taxonomy.models import Category, Codebook, Dimension

    rng = np.random.default_rng(seed)
    size = f"{n:,} x 3 x 2 dims"

    def create() -> Study:
        with transaction.atomic():
            old = Study.objects.filter(slug="bench-agreement").first()
            if old is not None:
                AgreementSnapshot.objects.filter(study=old).delete()
                LabelValue.objects.filter(finding__annotation__assignment__study=old).delete()
                Assignment.objects.filter(study=old).delete()
                Category.objects.filter(dimension__codebook__study=old).update(parent=None)
                Category.objects.filter(dimension__codebook__study=old).delete()
                old.delete()
            study = Study.objects.create(slug="bench-agreement", name="Agreement benchmark")
            users = [User.objects.get_or_create(username=f"bench-annotator-{a}")[0] for a in range(3)]
            book = Codebook.objects.create(study=study, name="bench", version=1)
            kind = Dimension.objects.create(codebook=book, key="kind", name="Kind", position=0)
            symptom = Dimension.objects.create(codebook=book, key="symptom", name="Symptom", position=1)
            kinds = Category.objects.bulk_create(
                Category(dimension=kind, key=f"kind-{k}", name=f"Kind {k}", position=k) for k in range(K)
            )
            leaves = []
            for stage in range(5):
                top = Category.objects.create(dimension=symptom, key=f"stage-{stage}", name=f"Stage {stage}")
                leaves += Category.objects.bulk_create(
                    Category(dimension=symptom, parent=top, key=f"leaf-{stage}-{leaf}", name=f"Leaf {leaf}")
                    for leaf in range(6)
                )
            round_ = Round.objects.create(study=study, number=1)
            items = Item.objects.bulk_create(
                (Item(study=study, url=f"https://example.org/bench/{i}") for i in range(n)), batch_size=5000
            )
            codes, leaf_codes = single_codes(rng, n, 3), single_codes(rng, n, 3)
            now = timezone.now()
            assignments = Assignment.objects.bulk_create(
                (
                    Assignment(
                        study=study,
                        round=round_,
                        item=item,
                        annotator=user,
                        status=AssignmentStatus.SUBMITTED,
                    )
                    for item in items
                    for user in users
                ),
                batch_size=5000,
            )
            annotations = Annotation.objects.bulk_create(
                (Annotation(assignment=a, submitted_at=now, updated_at=now) for a in assignments),
                batch_size=5000,
            )
            findings = Finding.objects.bulk_create(
                (Finding(annotation=a) for a in annotations), batch_size=5000
            )
            values = []
            for position, finding in enumerate(findings):
                i, a = divmod(position, 3)
                if codes[i, a] >= 0:
                    values.append(LabelValue(finding=finding, dimension=kind, category=kinds[codes[i, a]]))
                if leaf_codes[i, a] >= 0:
                    values.append(
                        LabelValue(finding=finding, dimension=symptom, category=leaves[leaf_codes[i, a]])
                    )
            LabelValue.objects.bulk_create(values, batch_size=5000)
            for user in users:
                study.memberships.create(user=user, role=Role.ANNOTATOR)
            return study

    study, _ = timed("db: write the study", size, create)
    with CaptureQueriesContext(connection) as queries:
        ratings, _ = timed("db: load_study_ratings", size, lambda: load_study_ratings(study))
    ROWS[-1] = (*ROWS[-1][:3], f"{len(queries.captured_queries)} queries, {len(ratings.rows):,} label values")
    timed(
        "db: build_table + report (kind)", size, lambda: agreement_report(build_table(ratings, "kind").table)
    )

    def dashboard() -> AgreementSnapshot:
        # What the Celery task does for a large study: a queued dashboard snapshot, then run_snapshot.
        params = {
            "kind": "dashboard",
            "level": None,
            "bootstrap": DASHBOARD_BOOTSTRAP,
            "seed": DASHBOARD_SEED,
        }
        snapshot = AgreementSnapshot.objects.create(
            study=study, params={**params, "fingerprint": fingerprint(study)}
        )
        return run_snapshot(snapshot)

    snapshot, _ = timed("db: dashboard snapshot (the task)", size, dashboard)
    ROWS[-1] = (*ROWS[-1][:3], f"{snapshot.status}; 2 dimensions x (1 round + all), bootstrap 1,000")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--replicates", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=3, help="best of N runs for the fast steps")
    parser.add_argument("--db", action="store_true", help="also write a study to DATABASE_URL and time it")
    args = parser.parse_args()
    metrics_phase(args.items, args.replicates, args.seed, args.repeat)
    tables_phase(args.items, args.seed, args.repeat)
    if args.db:
        db_phase(args.items, args.seed)
    width = max(len(r[0]) for r in ROWS) + 2
    size_width = max(len(r[1]) for r in ROWS) + 2
    print(f"{'step':<{width}}{'data':<{size_width}}{'seconds':>8}  note")
    print("-" * (width + size_width + 30))
    for label, size, seconds, note in ROWS:
        print(f"{label:<{width}}{size:<{size_width}}{seconds}  {note}")
    print(f"\n{os.cpu_count()} CPU(s), numpy {np.__version__}, Python {sys.version.split()[0]}")


if __name__ == "__main__":
    main()
