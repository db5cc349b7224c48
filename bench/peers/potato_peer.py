"""Potato's column: `potato start` (2.12, Flask) on 127.0.0.1, driven through its own HTTP interface.

Potato has no upload endpoint for items: its data files are named in the project's YAML and loaded when
the server starts. So the project (a `radio` scheme `topic` with bug / question / feature, the items as
`{"id", "text"}` JSON lines, open registration) is written to a temporary folder and:

1. import: `potato start config.yaml --host 127.0.0.1 -p PORT`, timed from the start of the process until
   `GET /api/current_instance` of a signed-in annotator answers with all N instances (items/s; Potato's
   own start-up, about 5 s, is included: it is when its items become usable);
2. submit: `POST /updateinstance` with `{"instance_id", "annotations": {"topic:<label>": "true"}}`, what
   its page sends, timed; moving to the next instance (`POST /annotate` with `next_instance`) is not;
3. list: `GET /admin/api/instances?page=P&page_size=50` with the admin key (`X-API-Key`), the same random
   positions as the others;
4. export: none over HTTP for items with their labels in 2.12 (annotations live in per-annotator files
   under `annotation_output/`), so the row says n/a and why.

The annotator signs up through `POST /register` (`email`, `pass`) and signs in through `POST /auth`.
"""

from __future__ import annotations

import json
import secrets
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from common import (
    LABELS,
    PAGE_SIZE,
    WARMUP,
    PeerError,
    Process,
    check,
    free_port,
    loopback_only,
    package_version,
    random_pages,
    stopping,
    time_requests,
)

USER = "bench"
CONFIG = """\
annotation_task_name: "Peers benchmark"
task_dir: "."
output_annotation_dir: "annotation_output/"
output_annotation_format: "jsonl"
data_files:
  - "data/items.jsonl"
item_properties:
  id_key: "id"
  text_key: "text"
user_config:
  allow_all_users: true
  users: []
alert_time_each_instance: 10000000
annotation_schemes:
  - annotation_type: "radio"
    name: "topic"
    description: "Topic"
    labels: ["bug", "question", "feature"]
site_dir: "default"
"""


def run(bin_dir: Path, items: list[dict[str, str]], tmp: Path, args: Any) -> dict[str, Any]:
    import requests

    size = len(items)
    project = tmp / "project"
    (project / "data").mkdir(parents=True)
    (project / "config.yaml").write_text(CONFIG, encoding="utf-8")
    with (project / "data" / "items.jsonl").open("w", encoding="utf-8") as handle:
        for n, item in enumerate(items):
            handle.write(json.dumps({"id": f"item-{n}", "text": f"{item['title']}\n\n{item['text']}"}) + "\n")
    admin_key = secrets.token_urlsafe(24)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(tmp), "POTATO_ADMIN_API_KEY": admin_key}
    command = [str(bin_dir / "potato"), "start", "config.yaml", "--host", "127.0.0.1", "-p", str(port)]
    result: dict[str, Any] = {"version": package_version(bin_dir, "potato-annotation")}
    annotator = requests.Session()
    with stopping([]) as processes:
        print("  import (start with the data file) ...", file=sys.stderr, flush=True)
        started = time.perf_counter()
        processes.append(Process("potato", command, env=env, cwd=project, log=tmp / "potato.log"))
        total = _sign_in_when_up(annotator, url, processes[0], timeout=600)
        seconds = time.perf_counter() - started
        if total != size:
            raise PeerError(f"potato loaded {total} of {size} instances")
        loopback_only(port)
        result["import"] = {
            "items": size,
            "seconds": seconds,
            "rate": size / seconds,
            "how": "the data file loaded by `potato start`, start-up included",
        }
        result["submit"] = _submit(annotator, url, args.annotations + WARMUP)
        admin = requests.Session()
        admin.headers["X-API-Key"] = admin_key
        calls = [
            (
                lambda page=page: admin.get(
                    f"{url}/admin/api/instances", params={"page": page + 1, "page_size": PAGE_SIZE}
                )
            )
            for page in random_pages(size, args.requests)
        ]
        result["list"] = time_requests("potato list", calls, statuses=(200,))
    result["notes"] = {"export": "no HTTP export of items with their labels in Potato 2.12"}
    return result


def _sign_in_when_up(annotator: Any, url: str, process: Process, *, timeout: float) -> int:
    """Register and sign in the annotator as soon as the server answers; the number of instances."""
    deadline = time.monotonic() + timeout
    while True:
        if not process.alive():
            raise PeerError(f"potato exited:\n{process.tail()}")
        try:
            annotator.post(f"{url}/register", data={"email": USER, "pass": "bench-pass-1"}, timeout=5)
            annotator.post(f"{url}/auth", data={"email": USER, "pass": "bench-pass-1"}, timeout=5)
            current = annotator.get(f"{url}/api/current_instance", timeout=5)
            if current.status_code == 200:
                return int(current.json()["total_instances"])
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise PeerError(f"potato did not answer within {timeout:.0f} s:\n{process.tail()}")
        time.sleep(0.2)


def _submit(annotator: Any, url: str, count: int) -> dict[str, Any]:
    print("  potato submit ...", file=sys.stderr, flush=True)
    times: list[float] = []
    sizes: list[int] = []
    for n in range(count):
        instance = check(annotator.get(f"{url}/api/current_instance"))["instance_id"]
        body = {
            "instance_id": instance,
            "annotations": {f"topic:{LABELS[n % 3]}": "true"},
            "span_annotations": [],
        }
        started = time.perf_counter()
        response = annotator.post(f"{url}/updateinstance", json=body)
        elapsed = time.perf_counter() - started
        if response.status_code != 200 or response.json().get("status") != "success":
            raise PeerError(f"potato submit: HTTP {response.status_code}: {response.text[:300]}")
        if n >= WARMUP:
            times.append(elapsed * 1000)
            sizes.append(len(response.content))
        annotator.post(f"{url}/annotate", json={"action": "next_instance", "instance_id": instance})
    ordered = sorted(times)
    return {
        "endpoint": "potato submit",
        "n": len(times),
        "median_ms": statistics.median(times),
        "p95_ms": ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))],
        "bytes": statistics.median(sizes),
    }
