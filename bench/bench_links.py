"""Fix-evidence benchmark: 1,000 GitHub issues with two links each (a closing commit and a pull request
that says "Fixes #N"), imported by URL from a local replay server over real HTTP.

Usage (a database of its own; the study `bench-links` in it is recreated):

    export DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench_links DEBUG=0   # or leave unset: SQLite
    .venv/bin/python manage.py migrate
    .venv/bin/python bench/bench_links.py [--issues 1000] [--runs 3]

The replay server (`http.server.ThreadingHTTPServer`, HTTP/1.1 keep-alive, on 127.0.0.1) answers the
GitHub shapes the importer reads: the issue, its timeline (a `closed` event with a commit and a
`cross-referenced` pull request), the pull request's files (two files with patches) and the commit
(one file). No comments (`"comments": 0`), so each issue costs four requests: the issue, one timeline
read, one read per link. The import is `import_github --urls` as a job runs it, without its render
phase. Prints issues/s per run and the median. Target (issue #23): >= 50 issues/s.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
STUDY = "bench-links"
REPO = "bench/fixes"
PATCH = (
    "@@ -10,7 +10,7 @@ def train(model):\n     opt = build()\n-    dist.init_process_group('nccl')\n"
    "+    dist.init_process_group('gloo')\n     return opt\n"
)


def issue(n: int, base: str) -> dict[str, Any]:
    return {
        "url": f"{base}/repos/{REPO}/issues/{n}", "html_url": f"https://github.com/{REPO}/issues/{n}",
        "repository_url": f"{base}/repos/{REPO}", "number": n, "title": f"Training hangs on rank {n}",
        "body": "NCCL timeout with DistributedDataParallel.\n\n```python\ndist.barrier()\n```\n",
        "state": "closed", "comments": 0, "user": {"login": "ann"}, "labels": [{"name": "bug"}],
        "created_at": "2021-01-01T00:00:00Z", "updated_at": "2021-02-01T00:00:00Z",
    }  # fmt: skip


def timeline(n: int, base: str) -> list[dict[str, Any]]:
    sha = f"{n:040x}"
    pull = {
        "number": 100_000 + n, "title": f"Use gloo for rank {n}", "state": "closed",
        "body": f"Fixes #{n}", "html_url": f"https://github.com/{REPO}/pull/{100_000 + n}",
        "repository": {"full_name": REPO}, "pull_request": {"merged_at": "2021-01-20T00:00:00Z"},
    }  # fmt: skip
    return [
        {"event": "labeled", "created_at": "2021-01-02T00:00:00Z"},
        {"event": "cross-referenced", "created_at": "2021-01-10T00:00:00Z",
         "source": {"type": "issue", "issue": pull}},
        {"event": "closed", "commit_id": sha, "commit_url": f"{base}/repos/{REPO}/commits/{sha}",
         "created_at": "2021-01-20T00:00:00Z"},
    ]  # fmt: skip


def files() -> list[dict[str, Any]]:
    return [
        {"filename": "train.py", "status": "modified", "additions": 1, "deletions": 1, "patch": PATCH},
        {"filename": "docs/faq.md", "status": "modified", "additions": 3, "deletions": 0,
         "patch": "@@ -1 +1,4 @@\n+a\n+b\n+c\n"},
    ]  # fmt: skip


class Replay(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    base = ""
    # Headers and body leave in two writes: without TCP_NODELAY, Nagle's algorithm holds the body until
    # the client's delayed ACK (40 ms), which would measure the kernel's timers, not the importer.
    disable_nagle_algorithm = True

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        prefix = f"/repos/{REPO}"
        body: Any
        if m := re.fullmatch(rf"{prefix}/issues/(\d+)", path):
            body = issue(int(m.group(1)), self.base)
        elif m := re.fullmatch(rf"{prefix}/issues/(\d+)/timeline", path):
            body = timeline(int(m.group(1)), self.base)
        elif re.fullmatch(rf"{prefix}/pulls/\d+/files", path):
            body = files()
        elif m := re.fullmatch(rf"{prefix}/commits/([0-9a-f]+)", path):
            body = {"sha": m.group(1), "commit": {"message": "Use gloo on CPU ranks\n\nFixes the hang."},
                    "files": files()[:1]}  # fmt: skip
        else:
            self.send_error(404)
            return
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        return


def serve() -> tuple[ThreadingHTTPServer, str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Replay)
    base = f"http://127.0.0.1:{server.server_address[1]}"
    Replay.base = base
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, base


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--issues", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from apps.accounts.models import Study
    from apps.core.jobs import claim_job
    from apps.core.models import JobStatus
    from apps.corpus.models import ImportJob, ItemLink
    from apps.corpus.params import GitHubUrlsParams
    from apps.corpus.services import create_import_job, run_import

    server, base = serve()
    rates = []
    with tempfile.TemporaryDirectory() as folder:
        urls = Path(folder) / "urls.txt"
        urls.write_text("".join(f"https://github.com/{REPO}/issues/{n}\n" for n in range(1, args.issues + 1)))
        for run in range(1, args.runs + 1):
            Study.objects.filter(slug=STUDY).delete()
            study = Study.objects.create(slug=STUDY, name="Fix-evidence benchmark")
            started = time.perf_counter()
            created = create_import_job(study, GitHubUrlsParams(api_url=base), upload=urls)
            claimed = claim_job(ImportJob, created.pk, task_id="bench")
            assert claimed is not None
            job = run_import(claimed, render=False)
            seconds = time.perf_counter() - started
            links = ItemLink.objects.filter(item__study=study).count()
            assert job.status == JobStatus.SUCCEEDED, job.error
            assert (job.created, links) == (args.issues, 2 * args.issues), (job.created, links)
            rates.append(args.issues / seconds)
            print(
                f"run {run}: {args.issues} issues, {links} links in {seconds:.1f} s "
                f"= {rates[-1]:.0f} issues/s"
            )
    server.shutdown()
    median = statistics.median(rates)
    print(f"median: {median:.0f} issues/s (target >= 50: {'met' if median >= 50 else 'MISSED'})")


if __name__ == "__main__":
    main()
