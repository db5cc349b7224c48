"""The items grid at 100,000 items: each kind of page, timed at the client under gunicorn (issue 26 point 5).

Usage (a study made by `bench/generate.py`, which also fills the grid's labelling columns):

    export DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench
    .venv/bin/python bench/bench_items_grid.py --slug bench-100000 [--requests 100] [--port 8791]

Logs in as the lead (`bench-lead`) and times, with `bench_http`'s server (2 sync gunicorn workers,
`DEBUG=0`, query counts in `X-Query-Count`) and lean client, GET requests of the grid (first pages of every
sort in both directions, a page deep into a sort, filters, full-text searches of a common and a rare word,
a search combined with a filter and a sort) and of the keyboard screening page; then one bulk screening of
a search result (POST, each time a different rare word so that it writes). Target: each page at most 50 ms
median at the client (docs/performance.md).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_http import Server, Timing, client_for, print_table, time_get

TARGET_MS = 50.0


def _fixtures(slug: str) -> dict[str, Any]:
    """Cursors deep into some sorts, read from the database as the grid would write them."""
    from generate import setup_django

    setup_django()
    from apps.accounts.models import Study
    from apps.corpus.grid import encode_cursor
    from apps.corpus.models import Item

    study = Study.objects.get(slug=slug)
    items = Item.objects.filter(study=study)
    total = items.count()
    deep: dict[str, str] = {}
    for sort, field in (("round", "round_number"), ("-progress", "progress"), ("decision", "decision")):
        order = [f"-{field}", "-id"] if sort.startswith("-") else [field, "id"]
        value, pk = items.order_by(*order).values_list(field, "id")[int(total * 0.9)]
        deep[sort] = encode_cursor(value, pk)
    return {"total": total, "deep": deep}


def pages(slug: str, fixtures: dict[str, Any]) -> list[tuple[str, dict[str, str]]]:
    grid = [
        ("grid, id order", {}),
        *((f"grid, sort {s}", {"sort": s}) for s in (
            "title", "-title", "source", "place", "created", "-created", "round", "-round", "progress",
            "-progress", "decision", "-decision", "screening",
        )),
        *((f"grid, page at 90 % of sort {s}", {"sort": s, "after": c}) for s, c in fixtures["deep"].items()),
        ("grid, filter source=github", {"source": "github"}),
        ("grid, filter progress=disagreement", {"progress": "disagreement"}),
        ("grid, filter decision=none, sort -round", {"decision": "none", "sort": "-round"}),
        ("grid, filter round=5, sort title", {"round": "5", "sort": "title"}),
        ("grid, filter place=stackoverflow", {"place": "stackoverflow"}),
        ("grid, search common word", {"q": "gradient"}),
        ("grid, search a phrase", {"q": '"nccl timeout"'}),
        ("grid, search a word no item has", {"q": "deadlock"}),
        ("grid, search + source + sort round", {"q": "allreduce", "source": "github", "sort": "round"}),
    ]  # fmt: skip
    return grid


def measure(base: str, slug: str, count: int, fixtures: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    session = client_for(base, "bench-lead", kind)
    rows = []
    for name, params in pages(slug, fixtures):
        query = f"?{urlencode(params)}" if params else ""
        rows.append(time_get(session, name, f"{base}/studies/{slug}/items/{query}", count).row())
    rows.append(time_get(session, "screening page", f"{base}/studies/{slug}/items/screen/", count).row())
    rows.append(
        time_get(
            session, "screening page, search", f"{base}/studies/{slug}/items/screen/?q=gradient", count
        ).row()
    )
    rows.append(_bulk(session, base, slug))
    return rows


def _bulk(session: Any, base: str, slug: str) -> dict[str, Any]:
    """Bulk screening of a search result: include then unscreen every match of a word (writes each time)."""
    timing = Timing("bulk screen a search (POST)", note="include/unscreen: 'gradient', round 2, disagreement")
    for n in range(10):
        action = "include" if n % 2 == 0 else "unscreen"
        data = {
            "csrfmiddlewaretoken": session.cookies["csrftoken"],
            "scope": "all",
            "query": "q=gradient&round=2&progress=disagreement",
            "action": action,
        }
        started = time.perf_counter()
        response = session.post(f"{base}/studies/{slug}/items/bulk/", data)
        timing.record(response, time.perf_counter() - started)
    return timing.row()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--slug", default="bench-100000")
    parser.add_argument("--requests", type=int, default=100)
    parser.add_argument("--port", type=int, default=8791)
    parser.add_argument("--client", choices=["lean", "requests"], default="lean")
    parser.add_argument("--json", help="Also write the rows to this file.")
    args = parser.parse_args()
    fixtures = _fixtures(args.slug)
    with Server(args.port) as base:
        rows = measure(base, args.slug, args.requests, fixtures, args.client)
    print_table(rows)
    gets = [r for r in rows if "POST" not in r["endpoint"]]
    over = [r["endpoint"] for r in gets if r["median_ms"] > TARGET_MS]
    middle = statistics.median(r["median_ms"] for r in gets)
    print(f"\n{fixtures['total']:,} items; median of the page medians {middle:.1f} ms")
    print(f"over {TARGET_MS:.0f} ms: {', '.join(over) or 'none'}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
