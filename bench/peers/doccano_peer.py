"""doccano's column: its WSGI app under gunicorn on 127.0.0.1 and `doccano task`, on its default SQLite.

`doccano webserver` would run gunicorn bound to 0.0.0.0, so the same gunicorn (doccano's own pin, in its
virtualenv) is started here as `webserver` configures it (2 x CPUs + 1 workers, `config.wsgi`, chdir to
the backend, settings `config.settings.production`) but bound to 127.0.0.1. Everything else is the
command line's default: `DOCCANO_HOME` (here a temporary folder) holds `db.sqlite3`, which is also the
Celery broker (`sqla+sqlite`) and result store, and the media folder; `doccano init`, `doccano createuser`
and `doccano task` (the Celery worker, 2 processes) run as documented.

Workload: a DocumentClassification project with three category types; import is the page's two steps
(`POST /v1/fp/process/` with the JSONL file, then `POST /v1/projects/<id>/upload`) and is timed until
`/v1/tasks/status/<task>` reports it ready; submit is `POST /v1/projects/<id>/examples/<id>/categories`;
list is `GET /v1/projects/<id>/examples?limit=50&offset=<n>`; export is `POST /v1/projects/<id>/download`
(JSONL), then the status, then the zip.
"""

from __future__ import annotations

import io
import os
import secrets
import subprocess
import sys
import time
import zipfile
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
    poll,
    random_pages,
    session,
    stopping,
    time_requests,
    wait_until_up,
    write_jsonl,
)

USER = "bench"


def run(bin_dir: Path, items: list[dict[str, str]], tmp: Path, args: Any) -> dict[str, Any]:
    python = bin_dir / "python"
    backend = Path(
        subprocess.run(
            [str(python), "-c", "import backend, os; print(os.path.dirname(backend.__file__))"],
            capture_output=True,
            text=True,
        ).stdout.strip()
    )
    if not (backend / "config" / "wsgi.py").exists():
        raise PeerError(f"doccano's backend package was not found in {bin_dir.parent}")
    home = tmp / "doccano-home"
    password = secrets.token_hex(12)
    env = {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "HOME": str(tmp),
        "LANG": os.environ.get("LANG", "C.UTF-8"),
        # what `doccano` (backend/cli.py) sets before it starts anything
        "DOCCANO_HOME": str(home),
        "STANDALONE": "True",
        "DJANGO_SETTINGS_MODULE": "config.settings.production",
        "DATABASE_URL": f"sqlite:///{home}/db.sqlite3",
        "MEDIA_ROOT": str(home / "media"),
    }
    log = tmp / "doccano.log"
    for step in (["init"], ["createuser", "--username", USER, "--password", password]):
        with log.open("ab") as handle:
            done = subprocess.run(
                [str(bin_dir / "doccano"), *step], env=env, cwd=tmp, stdout=handle, stderr=subprocess.STDOUT
            )
        if done.returncode != 0:
            tail = "\n".join(log.read_text(errors="replace").splitlines()[-12:])
            raise PeerError(f"doccano {step[0]} failed:\n{tail}")
    port = free_port()
    workers = 2 * (os.cpu_count() or 1) + 1
    server = [
        str(bin_dir / "gunicorn"), "--bind", f"127.0.0.1:{port}", "--workers", str(workers), "--chdir",
        str(backend), "--capture-output", "--log-level", "info", "config.wsgi",
    ]  # fmt: skip
    with stopping([]) as processes:
        processes.append(Process("doccano gunicorn", server, env=env, cwd=tmp, log=log))
        processes.append(
            Process(
                "doccano task",
                [str(bin_dir / "doccano"), "task"],
                env=env,
                cwd=tmp,
                log=tmp / "doccano-task.log",
            )
        )
        url = f"http://127.0.0.1:{port}"
        wait_until_up(f"{url}/v1/health/", processes, timeout=300, ok=lambda r: r.status_code == 200)
        loopback_only(port)
        ready = time.monotonic() + 300
        while " ready." not in processes[1].tail(200):
            if not processes[1].alive() or time.monotonic() > ready:
                raise PeerError(f"`doccano task` did not start:\n{processes[1].tail()}")
            time.sleep(0.2)
        login = check(
            session("").post(f"{url}/v1/auth/login/", json={"username": USER, "password": password})
        )
        result = workload(url, login["key"], items, tmp, args)
    result["version"] = package_version(bin_dir, "doccano")
    return result


def workload(url: str, key: str, items: list[dict[str, str]], tmp: Path, args: Any) -> dict[str, Any]:
    size = len(items)
    api = session(f"Token {key}")
    project = check(
        api.post(
            f"{url}/v1/projects",
            json={
                "name": "bench-peers",
                "description": "bench-peers",
                "guideline": "",
                "project_type": "DocumentClassification",
                "resourcetype": "TextClassificationProject",
                "random_order": False,
                "collaborative_annotation": False,
                "single_class_classification": False,
                "allow_member_to_create_label_type": False,
                "tags": [],
            },
        )
    )
    base = f"{url}/v1/projects/{project['id']}"
    colours = ("#d62728", "#1f77b4", "#2ca02c")
    label_ids = [
        check(
            api.post(
                f"{base}/category-types",
                json={"text": label, "background_color": colour, "text_color": "#ffffff"},
            )
        )["id"]
        for label, colour in zip(LABELS, colours, strict=True)
    ]
    path = write_jsonl(items, tmp / "items.jsonl")
    result: dict[str, Any] = {}

    def finished(task_id: str) -> dict[str, Any]:
        status: dict[str, Any] = poll(
            lambda: check(api.get(f"{url}/v1/tasks/status/{task_id}")), lambda s: s["ready"], timeout=3600
        )
        if status.get("error"):
            raise PeerError(f"task {task_id} failed: {status['error']}")
        return status

    print("  import ...", file=sys.stderr, flush=True)
    started = time.perf_counter()
    with path.open("rb") as handle:
        upload = api.post(
            f"{url}/v1/fp/process/", files={"filepond": ("items.jsonl", handle, "application/octet-stream")}
        )
    if upload.status_code != 200:
        raise PeerError(f"file upload: HTTP {upload.status_code}: {upload.text[:300]}")
    task = check(
        api.post(
            f"{base}/upload",
            json={
                "uploadIds": [upload.text.strip()],
                "format": "JSONL",
                "task": "DocumentClassification",
                "column_data": "text",
                "column_label": "label",
                "encoding": "utf_8",
            },
        )
    )
    status = finished(task["task_id"])
    seconds = time.perf_counter() - started
    # unlabelled items are reported as "Column label not found"; they are imported all the same
    errors = [e for e in (status.get("result") or {}).get("error") or [] if "Column label" not in str(e)]
    stored = check(api.get(f"{base}/examples", params={"limit": 1}))["count"]
    if errors or stored != size:
        raise PeerError(f"import stored {stored} of {size} examples; errors: {str(errors)[:300]}")
    result["import"] = {"items": size, "seconds": seconds, "rate": size / seconds, "how": "a Celery task"}

    count = args.annotations + WARMUP
    examples = check(api.get(f"{base}/examples", params={"limit": count, "offset": 0}))["results"]
    calls = [
        partial(
            api.post,
            f"{base}/examples/{example['id']}/categories",
            json={"example": example["id"], "label": label_ids[n % 3]},
        )
        for n, example in enumerate(examples)
    ]
    result["submit"] = time_requests("doccano submit", calls, statuses=(201,))

    calls = [
        partial(api.get, f"{base}/examples", params={"limit": PAGE_SIZE, "offset": page * PAGE_SIZE})
        for page in random_pages(size, args.requests)
    ]
    result["list"] = time_requests("doccano list", calls, statuses=(200,))

    print("  export ...", file=sys.stderr, flush=True)
    started = time.perf_counter()
    task = check(api.post(f"{base}/download", json={"format": "JSONL", "exportApproved": False}))
    finished(task["task_id"])
    response = api.get(f"{base}/download", params={"taskId": task["task_id"]})
    content = response.content
    seconds = time.perf_counter() - started
    if response.status_code != 200:
        raise PeerError(f"export download: HTTP {response.status_code}: {content[:300]!r}")
    with zipfile.ZipFile(io.BytesIO(content)) as archive:
        exported = sum(1 for line in archive.read(f"{USER}.jsonl").splitlines() if line.strip())
    if exported != size:
        raise PeerError(f"export held {exported} of {size} examples")
    result["export"] = {
        "items": exported,
        "seconds": seconds,
        "rate": size / seconds,
        "bytes": len(content),
        "how": "a Celery task, JSONL in a zip",
    }
    return result
