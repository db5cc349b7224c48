"""Label Studio's column: `label-studio start` (its default server and SQLite database) on 127.0.0.1.

Started as its documentation shows, plus what keeps it on loopback: `--internal-host 127.0.0.1` (the
default binds 0.0.0.0), `SENTRY_DSN` and `FRONTEND_SENTRY_DSN` empty (error reports), `COLLECT_ANALYTICS`
off (a usage record per request to an outside host, from a thread) and `LATEST_VERSION_CHECK` off (a PyPI
request at start). The first user is created by the start command with a fixed legacy API token
(`--enable-legacy-api-token`: `Authorization: Token ...`). The environment holds nothing of ours: Label
Studio reads plain names such as `DEBUG`, `HOST` and `PORT` too.

Workload: a Text + Choices project; import is one `POST /api/projects/<id>/import` of the JSON task list
(synchronous in the Community edition); submit is `POST /api/tasks/<id>/annotations/`; list is
`GET /api/tasks/?project=<id>&page=<n>&page_size=50`; export is
`GET /api/projects/<id>/export?exportType=JSON&download_all_tasks=true`.
"""

from __future__ import annotations

import json
import os
import secrets
import sys
import time
from functools import partial
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
    session,
    stopping,
    time_requests,
    wait_until_up,
)

LABEL_CONFIG = (
    '<View><Text name="text" value="$text"/><Choices name="label" toName="text" choice="single">'
    + "".join(f'<Choice value="{label}"/>' for label in LABELS)
    + "</Choices></View>"
)


def run(bin_dir: Path, items: list[dict[str, str]], tmp: Path, args: Any) -> dict[str, Any]:
    home = tmp / "home"
    home.mkdir()
    token = secrets.token_hex(20)
    port = free_port()
    env = {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "HOME": str(home),
        "LANG": os.environ.get("LANG", "C.UTF-8"),
        "LABEL_STUDIO_BASE_DATA_DIR": str(tmp / "data"),
        "SENTRY_DSN": "",
        "FRONTEND_SENTRY_DSN": "",
        "COLLECT_ANALYTICS": "false",
        "LATEST_VERSION_CHECK": "false",
    }
    cmd = [
        str(bin_dir / "label-studio"), "start", "--no-browser", "--internal-host", "127.0.0.1", "--port",
        str(port), "--data-dir", str(tmp / "data"), "--username", "bench@example.com", "--password",
        secrets.token_hex(12), "--user-token", token, "--enable-legacy-api-token",
    ]  # fmt: skip
    with stopping([]) as processes:
        processes.append(Process("label-studio", cmd, env=env, cwd=tmp, log=tmp / "label-studio.log"))
        url = f"http://127.0.0.1:{port}"
        # the first start migrates its SQLite database: minutes on a busy machine
        wait_until_up(f"{url}/health", processes, timeout=900, ok=lambda r: r.status_code == 200)
        loopback_only(port)
        result = workload(url, token, items, args)
    result["version"] = package_version(bin_dir, "label-studio")
    return result


def workload(url: str, token: str, items: list[dict[str, str]], args: Any) -> dict[str, Any]:
    size = len(items)
    api = session(f"Token {token}")
    project = check(
        api.post(f"{url}/api/projects/", json={"title": "bench-peers", "label_config": LABEL_CONFIG})
    )
    pid = project["id"]
    result: dict[str, Any] = {}

    print("  import ...", file=sys.stderr, flush=True)
    body = json.dumps(items).encode()
    started = time.perf_counter()
    answer = check(
        api.post(f"{url}/api/projects/{pid}/import", data=body, headers={"Content-Type": "application/json"}),
        201,
    )
    seconds = time.perf_counter() - started
    if answer.get("task_count") != size:
        raise PeerError(f"import stored {answer.get('task_count')} of {size} tasks: {str(answer)[:300]}")
    result["import"] = {"items": size, "seconds": seconds, "rate": size / seconds, "how": "in the request"}

    count = args.annotations + WARMUP
    tasks = check(api.get(f"{url}/api/tasks/", params={"project": pid, "page": 1, "page_size": count}))[
        "tasks"
    ]
    calls = [
        partial(
            api.post,
            f"{url}/api/tasks/{task['id']}/annotations/",
            json={
                "result": [
                    {
                        "from_name": "label",
                        "to_name": "text",
                        "type": "choices",
                        "value": {"choices": [LABELS[n % 3]]},
                    }
                ],
                "lead_time": 1.0,
            },
        )
        for n, task in enumerate(tasks)
    ]
    result["submit"] = time_requests("label-studio submit", calls, statuses=(201,))

    calls = [
        partial(
            api.get, f"{url}/api/tasks/", params={"project": pid, "page": page + 1, "page_size": PAGE_SIZE}
        )
        for page in random_pages(size, args.requests)
    ]
    result["list"] = time_requests("label-studio list", calls, statuses=(200,))

    print("  export ...", file=sys.stderr, flush=True)
    started = time.perf_counter()
    response = api.get(
        f"{url}/api/projects/{pid}/export", params={"exportType": "JSON", "download_all_tasks": "true"}
    )
    content = response.content
    seconds = time.perf_counter() - started
    if response.status_code != 200:
        raise PeerError(f"export: HTTP {response.status_code}: {content[:300]!r}")
    exported = len(json.loads(content))
    if exported != size:
        raise PeerError(f"export held {exported} of {size} tasks")
    result["export"] = {
        "items": exported,
        "seconds": seconds,
        "rate": size / seconds,
        "bytes": len(content),
        "how": "in the request, JSON",
    }
    return result
