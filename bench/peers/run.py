"""`make bench-peers`: Taxonomist, Label Studio, doccano and Potato under the same workload, side by side.

    .venv/bin/python bench/peers/run.py [--size 10000] [--annotations 200] [--requests 100]
        [--dir .peers] [--database-url postgres://postgres@127.0.0.1:5432/bench_peers]
        [--only taxonomist,label-studio,doccano,potato] [--json FILE]

The same N items (~1.5 KB of text each, `common.make_items`) go to every tool, which then gets, through
its HTTP interface on 127.0.0.1 (Potato: its data file and its annotation endpoint, `potato_peer.py`):

1. import: all N items in one upload, timed at the client until the tool reports them stored (items/s);
2. submit: `--annotations` single-choice annotations (bug / question / feature), one request at a time
   (median / p95 ms at the client, after 3 warm-up requests);
3. list: `--requests` pages of 50 items at random positions, the same positions for every tool;
4. export: every item, timed until the file is downloaded (items/s).

Label Studio, doccano and Potato are installed from PyPI into virtualenvs under `--dir` (`install.py`) and
run with their default storage (SQLite; Potato's files), their data in a temporary folder; Taxonomist runs on
PostgreSQL under gunicorn (`bench_http.Server`). A tool that cannot be installed, started or driven gets
a column of `n/a` and its reason; the others are still measured. Every server is stopped at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import ROOT, PeerError, make_items, write_jsonl
from report import table

TOOLS = ("taxonomist", "label-studio", "doccano", "potato")
TITLES = {
    "taxonomist": "Taxonomist",
    "label-studio": "Label Studio",
    "doccano": "doccano",
    "potato": "Potato",
}


def measure(tool: str, items: list[dict[str, str]], tmp: Path, args: argparse.Namespace) -> dict[str, Any]:
    """One tool's figures, or {"error": reason}: nothing a tool does stops the others from running."""
    print(f"\n== {TITLES[tool]}", file=sys.stderr, flush=True)
    folder = tmp / tool
    folder.mkdir()
    started = time.perf_counter()
    try:
        if tool == "taxonomist":
            import taxonomist_peer

            path = write_jsonl(
                [{"url": i["url"], "title": i["title"], "body": i["text"]} for i in items],
                folder / "items.jsonl",
            )
            result = taxonomist_peer.run(len(items), path, folder, args)
            result["version"] = commit()
        else:
            import install

            peers_dir = Path(args.dir).resolve()
            if not args.install and not install.installed(tool, peers_dir):
                reason = f"not installed under {peers_dir} (--install, or bench/peers/install.py {tool})"
                print(f"  {TITLES[tool]} skipped: {reason}", file=sys.stderr, flush=True)
                return {"error": reason}
            bin_dir = install.ensure(tool, peers_dir)
            if tool == "label-studio":
                import label_studio_peer as peer
            elif tool == "potato":
                import potato_peer as peer  # type: ignore[no-redef]
            else:
                import doccano_peer as peer  # type: ignore[no-redef]
            result = peer.run(bin_dir, items, folder, args)
    except (PeerError, SystemExit) as exc:
        print(f"  {TITLES[tool]} failed: {exc}", file=sys.stderr, flush=True)
        return {"error": str(exc).strip() or type(exc).__name__}
    except Exception as exc:  # a client bug or an unexpected answer: report it, go on with the next tool
        traceback.print_exc()
        return {"error": f"{type(exc).__name__}: {exc}"}
    print(f"  {TITLES[tool]} done in {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
    return result


def commit() -> str:
    """Taxonomist's version: the checked-out commit, `-dirty` with uncommitted changes."""
    out = subprocess.run(["git", "describe", "--always", "--dirty"], cwd=ROOT, capture_output=True, text=True)
    return out.stdout.strip() or "?"


def interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=10_000, help="items imported into each tool")
    parser.add_argument("--annotations", type=int, default=200, help="annotations submitted, one at a time")
    parser.add_argument("--requests", type=int, default=100, help="random list pages requested")
    parser.add_argument("--dir", default=str(ROOT / ".peers"), help="where the peers' virtualenvs live")
    parser.add_argument(
        "--database-url",
        default=os.environ.get("PEERS_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/bench_peers"),
        help="Taxonomist's PostgreSQL database (created and migrated if needed; used for nothing else)",
    )
    parser.add_argument(
        "--only", default=",".join(TOOLS), help=f"comma-separated, some of {', '.join(TOOLS)}"
    )
    parser.add_argument("--json", metavar="FILE", help="also write every figure to FILE")
    parser.add_argument(
        "--install", action="store_true", help="install a missing peer from PyPI (else it is skipped, n/a)"
    )
    args = parser.parse_args()
    tools = [t.strip() for t in args.only.split(",") if t.strip()]
    if unknown := set(tools) - set(TOOLS):
        parser.error(f"unknown tool(s): {', '.join(sorted(unknown))}")
    if args.annotations + 3 > args.size:
        parser.error("--annotations must leave 3 warm-up items: use a smaller number or a larger --size")
    # SIGTERM (make interrupted, a CI timeout) unwinds like Ctrl-C, so every `finally` stops its servers.
    signal.signal(signal.SIGTERM, interrupt)

    started = time.strftime("%Y-%m-%d %H:%M")
    items = make_items(args.size)
    kb = sum(len(i["text"].encode()) for i in items) / len(items) / 1024
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-peers-") as tmp:
        for tool in tools:
            results[TITLES[tool]] = measure(tool, items, Path(tmp), args)
    load = os.getloadavg()
    print(
        f"\nbench-peers: {args.size:,} items of {kb:.2f} KB text, {started}, "
        f"{os.cpu_count()} CPUs, load {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}"
    )
    versions = ", ".join(f"{title} {r['version']}" for title, r in results.items() if r.get("version"))
    print(f"versions: {versions}")
    print("\n".join(table(results, size=args.size, annotations=args.annotations, requests=args.requests)))
    if args.json:
        Path(args.json).write_text(
            json.dumps({"size": args.size, "load": load, "results": results}, indent=2)
        )


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt as exc:  # every server was stopped on the way out
        sys.exit(f"interrupted ({exc or 'Ctrl-C'}); servers stopped")
