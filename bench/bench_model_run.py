"""Model-run benchmark (issue #21): a run over ``--items`` items (2,000) against a local fake
OpenAI-compatible server answering in ``--delay`` seconds (0.2) at concurrency ``--concurrency`` (8).

Usage (a database of its own; each run adds a study `bench-models-<time>`):

    export DATABASE_URL=sqlite:////tmp/bench_models.sqlite3    # or a PostgreSQL database of its own
    .venv/bin/python manage.py migrate
    .venv/bin/python bench/bench_model_run.py [--items 2000] [--delay 0.2] [--concurrency 8]

Target: wall time at most 20 % above items x delay / concurrency (60 s for the defaults), peak RSS of
this process at most 300 MB. Prints the figures and ``met`` / ``MISSED``.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--delay", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args()

    import django

    django.setup()
    from apps.accounts.models import Study
    from apps.annotation.models import Round, RoundItem
    from apps.corpus.models import Item
    from apps.raters.runs import create_model_run, execute_model_run
    from apps.raters.services import RaterSettings, add_model_rater
    from apps.taxonomy.codebook_spec import codebook_from_data
    from apps.taxonomy.loading import load_codebook
    from tests.raters.fake_openai import FakeServer, fake_server

    study = Study.objects.create(slug=f"bench-models-{int(time.time())}", name="Model run benchmark")

    def categories(*keys: str) -> list[dict[str, str]]:
        return [{"key": k, "name": k.title()} for k in keys]

    codebook = {
        "name": "bench",
        "dimensions": [
            {"key": "kind", "name": "Kind", "categories": categories("bug", "question")},
            {"key": "fix", "name": "Fix", "multiple": True, "categories": categories("code", "docs")},
        ],
    }
    load_codebook(study, codebook_from_data(codebook), actor=None)
    items = Item.objects.bulk_create(
        Item(
            study=study,
            url=f"https://github.com/bench/models/issues/{n}",
            title=f"Issue {n}",
            body="x" * 1500,
        )
        for n in range(args.items)
    )
    round_ = Round.objects.create(study=study, number=1)
    RoundItem.objects.bulk_create(
        RoundItem(round=round_, item=item, position=k) for k, item in enumerate(items)
    )

    with fake_server(FakeServer(delay=args.delay)) as server:
        settings = RaterSettings(
            kind="openai", base_url=server.url, model="fake", concurrency=args.concurrency
        )
        rater = add_model_rater(study, "bench-llm", settings, actor=None)
        run = create_model_run(study, rater, round_number=1, actor=None)
        start = time.perf_counter()
        run = execute_model_run(run)
        seconds = time.perf_counter() - start
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    ideal = args.items * args.delay / args.concurrency
    print(f"run: {run.status}, {run.asked} answered, {run.refused} refused, {run.failed} failed")
    verdict = "met" if seconds <= 1.2 * ideal else "MISSED"
    print(f"wall {seconds:.1f} s (ideal {ideal:.1f} s, target <= {1.2 * ideal:.1f} s): {verdict}")
    print(f"peak RSS {peak_mb:.0f} MB (target ≤ 300 MB): {'met' if peak_mb <= 300 else 'MISSED'}")


if __name__ == "__main__":
    main()
