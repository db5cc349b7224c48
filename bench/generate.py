"""A realistic synthetic study, written fast: the benchmark data of `bench/run_all.py`.

Usage (PostgreSQL, a database of its own):

    createdb -h 127.0.0.1 -U postgres bench
    export DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench DEBUG=0
    .venv/bin/python manage.py migrate
    .venv/bin/python bench/generate.py --size 100000          # study `bench-100000`, recreated

The study (deterministic for a seed):

- the TOSEM 2023 codebook (`fixtures/tosem23/codebook.json`: five dimensions, trees three levels deep);
- a lead (`bench-lead`) and 10 annotators (`bench-a0` ... `bench-a9`), password `bench-password`;
- N items, GitHub issues and Stack Overflow questions, Markdown bodies of 1-3 KB with fenced code blocks
  and tracebacks, a sanitized-looking `body_html` already rendered, tags and metadata;
- 5 rounds of N/5 items each; every item goes to 2 annotators (overlap 2), the 45 annotator pairs in turn;
- rounds 1-4 are labelled: each item has a "true" set of findings (labelled as the TOSEM study does: a
  fault with distributed flag, symptom leaf and 1-2 fix patterns, or a how-to topic); each annotator
  gives the truth, except with probability ``--disagreement`` (default 0.25) where one dimension of one
  finding is changed; items whose two annotators agree are decided (unanimous); of the others, half are
  adjudicated and half wait in the disagreement queue;
- round 5 is open: assigned, nothing submitted (what next-item and submit work on).

Rows are written with explicit ids: by ``COPY`` on PostgreSQL, by ``bulk_create`` elsewhere (the tests'
SQLite), never through the services and without signals. 100,000 items take about a minute.

`generate_study(slug, size)` is the API the benchmarks and `tests/performance/` call.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import io
import json
import os
import random
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from itertools import combinations
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CODEBOOK = ROOT / "fixtures" / "tosem23" / "codebook.json"
PASSWORD = "bench-password"
ANNOTATORS = 10
ROUNDS = 5
BATCH = 5000

WORDS = [
    "training", "hangs", "nccl", "allreduce", "gradient", "rank", "worker", "process", "group", "barrier",
    "timeout", "gpu", "node", "cluster", "distributed", "parallel", "batch", "loss", "optimizer",
    "checkpoint", "tensor", "device", "memory", "cuda", "launch", "backend", "error", "when", "using",
    "multiple", "machines", "the", "model", "does", "not", "converge", "after", "epoch", "with", "horovod",
]  # fmt: skip
TAGS = ["bug", "nccl", "question", "ddp", "performance", "docs"]
CODE = [
    "import torch\nimport torch.distributed as dist\n\ndist.init_process_group('nccl')\nmodel = DDP(model)\n",
    "hvd.init()\nopt = hvd.DistributedOptimizer(opt)\nfor step in range(1000):\n    loss = model(x)\n",
    "strategy = tf.distribute.MirroredStrategy()\nwith strategy.scope():\n    model = build()\n",
]


def setup_django() -> None:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()


# --- text ----------------------------------------------------------------------------------------------


def _sentence(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + "."


def _body_pool(rng: random.Random, count: int = 997) -> list[tuple[str, str]]:
    """Bodies to draw from: drawing words one by one for 100,000 items would take minutes."""
    return [_body(rng) for _ in range(count)]


def _body(rng: random.Random) -> tuple[str, str]:
    """A 1-3 KB Markdown body and an HTML rendering of it (escaped prose, <pre><code> blocks)."""
    import html

    target = rng.randint(1000, 3000)
    parts: list[tuple[str, str]] = [("p", _sentence(rng, rng.randint(20, 60))), ("code", rng.choice(CODE))]
    size = sum(len(text) for _, text in parts)
    while size < target:
        if rng.random() < 0.2:
            part = (
                "code",
                f'Traceback (most recent call last):\n  File "train.py", line {rng.randint(1, 900)}\n',
            )
        else:
            part = ("p", _sentence(rng, rng.randint(15, 50)))
        parts.append(part)
        size += len(part[1])
    markdown = "\n\n".join(f"```python\n{t}```" if kind == "code" else t for kind, t in parts)
    rendered = "".join(
        f'<pre><code class="language-python">{html.escape(t)}</code></pre>'
        if kind == "code"
        else f"<p>{html.escape(t)}</p>"
        for kind, t in parts
    )
    return markdown, rendered


# --- labels --------------------------------------------------------------------------------------------

#: One finding: dimension id → chosen category ids (sorted tuple).
Labels = dict[int, tuple[int, ...]]


@dataclass
class Codes:
    """The category ids the generator draws from (leaves of the TOSEM trees)."""

    dims: dict[str, int]
    fault: int
    howto: int
    yes_no: list[int]
    symptoms: list[int]
    fixes: list[int]
    topics: list[int]

    def truth(self, rng: random.Random) -> list[Labels]:
        """1 finding (90 %) or 2: a fault (56 %, as in TOSEM 2023) or a how-to question."""
        return [self._finding(rng) for _ in range(1 if rng.random() < 0.9 else 2)]

    def _finding(self, rng: random.Random) -> Labels:
        d = self.dims
        if rng.random() < 0.56:
            return {
                d["issue_type"]: (self.fault,),
                d["distributed_specific"]: (rng.choice(self.yes_no),),
                d["symptom"]: (rng.choice(self.symptoms),),
                d["fix_pattern"]: tuple(sorted(rng.sample(self.fixes, rng.choice([1, 1, 1, 2])))),
            }
        return {d["issue_type"]: (self.howto,), d["howto_topic"]: (rng.choice(self.topics),)}

    def perturb(self, rng: random.Random, truth: list[Labels]) -> list[Labels]:
        """The truth with one dimension of one finding given another (valid) value."""
        out = [dict(f) for f in truth]
        finding = rng.choice(out)
        d = self.dims
        choices = [k for k in finding if k != d["issue_type"]]
        dim = rng.choice(choices) if choices and rng.random() < 0.85 else d["issue_type"]
        if dim == d["issue_type"]:  # a fault read as a how-to or the other way round: the whole finding
            other = self._finding(rng)
            while other[d["issue_type"]] == finding[d["issue_type"]]:
                other = self._finding(rng)
            out[out.index(finding)] = other
            return out
        pool = {
            d["distributed_specific"]: self.yes_no,
            d["symptom"]: self.symptoms,
            d["fix_pattern"]: self.fixes,
            d["howto_topic"]: self.topics,
        }[dim]
        value = finding[dim]
        while finding[dim] == value:
            value = (rng.choice(pool),)
        finding[dim] = value
        return out


def _codes(study: Any) -> Codes:
    from apps.taxonomy.index import CodebookIndex

    index = CodebookIndex.for_study(study)

    def leaves(key: str) -> list[int]:
        tree = index.tree(key)
        return [c for c in tree if not tree.children(c)]

    return Codes(
        dims={d.key: d.id for d in index.dimensions},
        fault=index.category_by_key("issue_type", "fault").id,
        howto=index.category_by_key("issue_type", "howto").id,
        yes_no=leaves("distributed_specific"),
        symptoms=leaves("symptom"),
        fixes=leaves("fix_pattern"),
        topics=leaves("howto_topic"),
    )


# --- writing -------------------------------------------------------------------------------------------


@dataclass
class Table:
    """Rows for one model, with ids allocated here so that child rows can point at them."""

    model: Any
    fields: list[str]
    rows: list[tuple[Any, ...]] = field(default_factory=list)
    next_id: int = 0

    def add(self, *values: Any) -> int:
        pk = self.next_id
        self.next_id += 1
        self.rows.append((pk, *values))
        return pk


def _table(model: Any, fields: Sequence[str]) -> Table:
    from django.db.models import Max

    top = model.objects.aggregate(top=Max("id"))["top"] or 0
    return Table(model, list(fields), next_id=top + 1)


def _copy_value(value: Any) -> Any:
    if value is None:
        return r"\N"
    if isinstance(value, dict | list):
        return json.dumps(value)
    if isinstance(value, datetime):
        return value.isoformat()
    return value


def flush(table: Table) -> int:
    """Write and forget the table's rows: COPY on PostgreSQL, bulk_create elsewhere."""
    from django.db import connection

    count = len(table.rows)
    if not count:
        return 0
    columns = ["id", *table.fields]
    if connection.vendor == "postgresql":
        buffer = io.StringIO()
        writer = csv.writer(buffer)
        for row in table.rows:
            writer.writerow([_copy_value(v) for v in row])
        buffer.seek(0)
        names = ", ".join(connection.ops.quote_name(table.model._meta.get_field(f).column) for f in columns)
        name = connection.ops.quote_name(table.model._meta.db_table)
        sql = f"COPY {name} ({names}) FROM STDIN WITH (FORMAT csv, NULL '\\N')"
        with connection.cursor() as cursor:
            cursor.copy_expert(sql, buffer)
    else:
        table.model.objects.bulk_create(
            (table.model(**dict(zip(columns, row, strict=True))) for row in table.rows), batch_size=BATCH
        )
    table.rows.clear()
    return count


def _reset_sequences(models: Iterable[Any]) -> None:
    from django.core.management.color import no_style
    from django.db import connection

    with connection.cursor() as cursor:
        for sql in connection.ops.sequence_reset_sql(no_style(), list(models)):
            cursor.execute(sql)


# --- the study -----------------------------------------------------------------------------------------


@dataclass
class Generated:
    slug: str
    items: int
    rows: int
    seconds: float
    counts: dict[str, int]


def delete_study(slug: str) -> None:
    """Remove a study with its rows, fast: raw deletes in dependency order (no collector walking 100,000
    items), then `Study.delete()` for the few rows left (rounds, codebook, memberships, jobs)."""
    from django.db import connection

    from apps.accounts.models import Study
    from apps.adjudication.models import Decision, DecisionFinding, DecisionValue, Review
    from apps.annotation.models import Annotation, Assignment, Finding, LabelValue, RoundItem
    from apps.corpus.models import Item, ItemComment
    from apps.taxonomy.models import Category, Dimension

    study = Study.objects.filter(slug=slug).first()
    if study is None:
        return
    sid = study.pk
    Decision.objects.filter(study_id=sid).update(supersedes=None)
    Dimension.objects.filter(codebook__study_id=sid).update(applies_when_category=None)
    Category.objects.filter(dimension__codebook__study_id=sid).update(parent=None, merged_into=None)
    doomed = [
        DecisionValue.objects.filter(finding__decision__study_id=sid),
        Decision.source_annotations.through.objects.filter(decision__study_id=sid),
        DecisionFinding.objects.filter(decision__study_id=sid),
        Decision.objects.filter(study_id=sid),
        Review.objects.filter(study_id=sid),
        LabelValue.objects.filter(finding__annotation__assignment__study_id=sid),
        Finding.objects.filter(annotation__assignment__study_id=sid),
        Annotation.objects.filter(assignment__study_id=sid),
        Assignment.objects.filter(study_id=sid),
        RoundItem.objects.filter(round__study_id=sid),
        ItemComment.objects.filter(item__study_id=sid),
        Item.objects.filter(study_id=sid),
    ]
    for queryset in doomed:
        queryset._raw_delete(connection.alias)  # no collector, no signals
    study.delete()


def generate_study(slug: str, size: int, *, seed: int = 2023, disagreement: float = 0.25) -> Generated:
    """Recreate study `slug` with `size` items as described in the module docstring."""
    from django.contrib.auth.hashers import make_password
    from django.db import connection, transaction
    from django.utils import timezone

    from apps.accounts.models import Membership, Role, Study, User
    from apps.adjudication.models import (
        Decision,
        DecisionFinding,
        DecisionValue,
        Provenance,
        Review,
        ReviewState,
    )
    from apps.annotation.models import (
        Annotation,
        Assignment,
        AssignmentStatus,
        Finding,
        LabelValue,
        Round,
        RoundItem,
        SampleMethod,
    )
    from apps.corpus.models import Item
    from apps.taxonomy.loading import load_codebook_file

    if size < ROUNDS:
        raise ValueError(f"size must be at least {ROUNDS}, got {size}")
    started = time.perf_counter()
    rng = random.Random(seed)
    now = timezone.now()
    delete_study(slug)
    password = make_password(PASSWORD)
    with transaction.atomic():
        study = Study.objects.create(slug=slug, name=f"Benchmark study ({size:,} items)", overlap=2)
        lead, _ = User.objects.get_or_create(username="bench-lead", defaults={"password": password})
        annotators = [
            User.objects.get_or_create(username=f"bench-a{n}", defaults={"password": password})[0]
            for n in range(ANNOTATORS)
        ]
        User.objects.filter(pk__in=[lead.pk, *(a.pk for a in annotators)]).update(password=password)
        Membership.objects.create(study=study, user=lead, role=Role.LEAD)
        Membership.objects.bulk_create(
            Membership(study=study, user=a, role=Role.ANNOTATOR) for a in annotators
        )
        load_codebook_file(study, CODEBOOK)
        codes = _codes(study)
        version = study.codebook.version
        per_round = size // ROUNDS
        rounds = [
            Round.objects.create(
                study=study,
                number=n + 1,
                name=f"Round {n + 1}",
                method=SampleMethod.UNIFORM,
                seed=n,
                requested_size=per_round if n < ROUNDS - 1 else size - per_round * (ROUNDS - 1),
            )
            for n in range(ROUNDS)
        ]
        pairs = list(combinations(range(ANNOTATORS), 2))
        bodies = _body_pool(rng, min(997, size))
        titles = [_sentence(rng, rng.randint(5, 12))[:180] for _ in range(min(1009, size))]
        if connection.vendor == "postgresql":  # the rows are consistent by construction: skip FK triggers
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL session_replication_role = replica")
        items = _table(Item, [
            "study_id", "url", "source", "external_id", "title", "body", "body_format", "body_html",
            "rendered_at", "tags", "metadata", "raw", "content_hash", "created_at", "imported_at",
            "updated_at", "relevance", "relevance_reason",
        ])  # fmt: skip
        round_items = _table(RoundItem, ["round_id", "item_id", "position"])
        assignments = _table(
            Assignment,
            [
                "study_id",
                "round_id",
                "item_id",
                "annotator_id",
                "status",
                "position",
                "created_at",
                "submitted_at",
            ],
        )
        annotations = _table(Annotation, [
            "assignment_id", "memo", "draft", "codebook_version", "started_at", "submitted_at", "updated_at",
            "seconds_spent", "imported",
        ])  # fmt: skip
        findings = _table(Finding, ["annotation_id", "number"])
        values = _table(
            LabelValue, ["finding_id", "dimension_id", "category_id", "original_category_id", "pending"]
        )
        reviews = _table(
            Review, ["item_id", "study_id", "round_id", "state", "disagreeing_dimensions", "updated_at"]
        )
        decisions = _table(Decision, [
            "study_id", "item_id", "round_id", "provenance", "rationale", "decided_by_id", "decided_at",
            "is_current", "changes", "codebook_version",
        ])  # fmt: skip
        sources = _table(Decision.source_annotations.through, ["decision_id", "annotation_id"])
        gold_findings = _table(DecisionFinding, ["decision_id", "number"])
        gold_values = _table(
            DecisionValue, ["finding_id", "dimension_id", "category_id", "original_category_id"]
        )
        tables = [
            items, round_items, assignments, annotations, findings, values, reviews, decisions, sources,
            gold_findings, gold_values,
        ]  # fmt: skip
        counts = dict.fromkeys((t.model._meta.model_name for t in tables), 0)
        queue_position = [0] * ANNOTATORS
        dim_keys = {v: k for k, v in codes.dims.items()}

        def write_labels(annotation: int, labels: list[Labels]) -> None:
            for number, finding in enumerate(labels, start=1):
                fid = findings.add(annotation, number)
                for dim, cats in finding.items():
                    for cat in cats:
                        values.add(fid, dim, cat, None, False)

        def write_gold(decision: int, labels: list[Labels]) -> None:
            for number, finding in enumerate(labels, start=1):
                fid = gold_findings.add(decision, number)
                for dim, cats in finding.items():
                    for cat in cats:
                        gold_values.add(fid, dim, cat, None)

        for n in range(size):
            round_index = min(n // per_round, ROUNDS - 1)
            round_ = rounds[round_index]
            labelled = round_index < ROUNDS - 1
            stack = n % 3 == 0
            markdown, rendered = bodies[rng.randrange(len(bodies))]
            markdown, rendered = f"Item {n}. {markdown}", f"<p>Item {n}.</p>{rendered}"
            title = f"{titles[rng.randrange(len(titles))]} ({n})"
            url = (
                f"https://stackoverflow.com/questions/{n}"
                if stack
                else f"https://github.com/bench/repo{n % 50}/issues/{n}"
            )
            created = now - timedelta(days=rng.randint(1, 2500))
            item = items.add(
                study.pk, url, "stackoverflow" if stack else "github", str(n), title, markdown, "markdown",
                rendered, now, rng.sample(TAGS, rng.randint(0, 3)),
                {"framework": rng.choice(["pytorch", "tensorflow", "horovod"]), "state": "closed"}, {},
                hashlib.sha256(markdown.encode()).hexdigest(), created, now, now,
                rng.choice(["unscreened", "relevant", "relevant", "irrelevant"]), "",
            )  # fmt: skip
            round_items.add(round_.pk, item, n)
            pair = pairs[n % len(pairs)]
            truth = codes.truth(rng)
            given: list[tuple[int, list[Labels]]] = []
            for a in pair:
                queue_position[a] += 1
                at = now - timedelta(seconds=size - n)
                status = AssignmentStatus.SUBMITTED if labelled else AssignmentStatus.OPEN
                assignment = assignments.add(
                    study.pk, round_.pk, item, annotators[a].pk, status, queue_position[a], now,
                    at if labelled else None,
                )  # fmt: skip
                if labelled:
                    annotation = annotations.add(
                        assignment, "", {}, version, at, at, at, rng.randint(20, 300), False
                    )
                    labels = codes.perturb(rng, truth) if rng.random() < disagreement else truth
                    write_labels(annotation, labels)
                    given.append((annotation, labels))
            if labelled:
                (first_annotation, first), (second_annotation, second) = given
                differ = sorted(
                    {
                        dim_keys[d]
                        for a, b in zip(first, second, strict=False)
                        for d in {*a, *b}
                        if a.get(d) != b.get(d)
                    }
                    | (set(codes.dims) if len(first) != len(second) else set())
                )
                at = now - timedelta(seconds=size - n)
                if not differ:
                    decision = decisions.add(
                        study.pk, item, round_.pk, Provenance.UNANIMOUS, "", None, at, True, {}, version
                    )
                    sources.add(decision, first_annotation)
                    sources.add(decision, second_annotation)
                    write_gold(decision, first)
                    reviews.add(item, study.pk, round_.pk, ReviewState.DECIDED, [], at)
                elif n % 2:
                    decision = decisions.add(
                        study.pk, item, round_.pk, Provenance.ADJUDICATED, "Settled in the weekly meeting.",
                        lead.pk, at, True, {}, version,
                    )  # fmt: skip
                    write_gold(decision, first)
                    reviews.add(item, study.pk, round_.pk, ReviewState.DECIDED, differ, at)
                else:
                    reviews.add(item, study.pk, round_.pk, ReviewState.DISAGREEMENT, differ, at)
            if len(values.rows) >= BATCH * 4 or n == size - 1:
                for table in tables:
                    counts[table.model._meta.model_name] += flush(table)
        _reset_sequences(t.model for t in tables)
        # The items grid's labelling columns, as the services would have kept them (no signals here).
        from apps.adjudication.progress import refresh_progress

        refresh_progress(study=study)
    from apps.corpus.services.search_index import fill_search_vectors

    fill_search_vectors(study.pk)  # as the worker does after an import
    if connection.vendor == "postgresql" and not connection.in_atomic_block:
        # VACUUM too: recreating a study leaves the old one's rows dead in the indexes, and the planner's
        # probes of index ends (get_actual_variable_range) then cost 13 ms of planning per query until
        # autovacuum passes: a benchmark artefact, not what a live database shows.
        with connection.cursor() as cursor:
            cursor.execute("VACUUM ANALYZE")
    elif connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
    return Generated(slug, size, sum(counts.values()), time.perf_counter() - started, counts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=10_000, help="Number of items (default 10000).")
    parser.add_argument("--slug", help="Study slug (default bench-SIZE).")
    parser.add_argument("--seed", type=int, default=2023)
    parser.add_argument("--disagreement", type=float, default=0.25)
    args = parser.parse_args()
    setup_django()
    made = generate_study(
        args.slug or f"bench-{args.size}", args.size, seed=args.seed, disagreement=args.disagreement
    )
    print(f"study {made.slug}: {made.items:,} items, {made.rows:,} rows in {made.seconds:.1f} s")
    for name, count in made.counts.items():
        print(f"  {name:<28} {count:>10,}")


if __name__ == "__main__":
    main()
