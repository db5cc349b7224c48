"""Request benchmarks: the hot pages under gunicorn, timed at the client, queries counted per request.

Usage (a study made by `bench/generate.py` in the bench database):

    export DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench
    .venv/bin/python bench/bench_http.py --slug bench-10000 [--requests 200] [--port 8790]

Starts gunicorn (2 sync workers, 127.0.0.1 only, DEBUG=0, ALLOWED_HOSTS=127.0.0.1, DJANGO_ENV unset) on
this module's `application`, loaded once before the workers fork (`--preload`, bench_wsgi.py): Django's
WSGI application wrapped so that every response carries ``X-Query-Count`` (the queries the request ran,
counted with `connection.execute_wrapper`) and ``X-Server-Ms`` (time inside the worker until the headers
were sent). Nothing in the product's settings changes; the wrapper exists only here.

Logs in as an annotator (next-item, workbench, submit) and as the lead (the other pages), warms each
endpoint up, then times ``--requests`` requests per endpoint and reports the median and 95th percentile at
the client, the median server time and the queries per request (min-max).

The client is `LeanClient`: `http.client`, one connection per request (gunicorn's sync workers close each
one), cookies kept by hand. `requests` costs about a millisecond of its own CPU per request on a 2-core
machine, which is the client's time, not the server's; ``--client requests`` measures with it instead.

Submitting consumes open assignments of round 5 (each annotator has 2·N/50 of them), in two passes:
*first submissions* (items nobody has labelled yet: the common case, the item stays ``annotating``), then
*completing submissions* (the other annotator of each of those items: the round of the item is complete
and it is consolidated, here into a unanimous decision). A run uses the annotator with the most open work
left, so repeated runs spread over the ten; regenerate the study when they run out.

`measure(base, slug, requests)` returns the rows; `bench/run_all.py` calls it.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PASSWORD = "bench-password"

# --- the server side: Django's WSGI application with the two headers -------------------------------------

_django: Any = None


def load_django() -> Any:
    """Django's WSGI application with its URLconf imported (what a worker's first request would do)."""
    global _django
    if _django is None:
        sys.path.insert(0, str(ROOT))
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
        from django.core.wsgi import get_wsgi_application
        from django.urls import get_resolver

        _django = get_wsgi_application()
        get_resolver().url_patterns  # noqa: B018  (imports every app's urls)
    return _django


def application(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    """Django's application, adding X-Query-Count and X-Server-Ms to every response."""
    django_app = load_django()
    from django.db import connection

    queries = [0]
    started = time.perf_counter()

    def count(execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any) -> Any:
        queries[0] += 1
        return execute(sql, params, many, context)

    def start(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
        elapsed = (time.perf_counter() - started) * 1000
        extra = [("X-Query-Count", str(queries[0])), ("X-Server-Ms", f"{elapsed:.2f}")]
        return start_response(status, [*headers, *extra], exc_info)

    with connection.execute_wrapper(count):
        result: Iterable[bytes] = django_app(environ, start)
    return result


# --- the client side ---------------------------------------------------------------------------------


@dataclass
class Timing:
    name: str
    client_ms: list[float] = field(default_factory=list)
    server_ms: list[float] = field(default_factory=list)
    queries: list[int] = field(default_factory=list)
    statuses: set[int] = field(default_factory=set)
    note: str = ""

    def record(self, response: Any, elapsed: float) -> None:
        self.client_ms.append(elapsed * 1000)
        # lower-case names: `LeanResponse` keeps them so, `requests` matches them in any case
        self.server_ms.append(float(response.headers.get("x-server-ms", "nan")))
        self.queries.append(int(response.headers.get("x-query-count", "-1")))
        self.statuses.add(response.status_code)

    def row(self) -> dict[str, Any]:
        ordered = sorted(self.client_ms)
        p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
        return {
            "endpoint": self.name,
            "n": len(self.client_ms),
            "median_ms": statistics.median(self.client_ms),
            "p95_ms": p95,
            "server_ms": statistics.median(self.server_ms),
            "queries_min": min(self.queries),
            "queries_max": max(self.queries),
            "statuses": sorted(self.statuses),
            "note": self.note,
        }


class LeanResponse:
    def __init__(self, status: int, headers: list[tuple[str, str]], body: bytes) -> None:
        self.status_code = status
        self.headers = {name.lower(): value for name, value in headers}
        self.body = body

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", "replace")


class LeanClient:
    """GET and POST over `http.client` with the session's cookies, one connection per request."""

    def __init__(self, base: str, cookies: dict[str, str]) -> None:
        self.host, port = base.removeprefix("http://").split(":")
        self.port = int(port)
        self.cookies = dict(cookies)

    def request(self, method: str, path: str, body: bytes | None = None) -> LeanResponse:
        import http.client
        from http.cookies import SimpleCookie

        headers = {"Cookie": "; ".join(f"{k}={v}" for k, v in self.cookies.items())}
        if body is not None:
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        connection = http.client.HTTPConnection(self.host, self.port, timeout=300)
        try:
            connection.request(method, path, body=body, headers=headers)
            raw = connection.getresponse()
            response = LeanResponse(raw.status, raw.getheaders(), raw.read())
            for value in raw.headers.get_all("Set-Cookie") or []:
                for name, morsel in SimpleCookie(value).items():
                    if morsel["max-age"] == "0" or morsel.value == "":
                        self.cookies.pop(name, None)
                    else:
                        self.cookies[name] = morsel.value
        finally:
            connection.close()
        return response

    def get(self, url: str, allow_redirects: bool = False) -> LeanResponse:
        return self.request("GET", _path(url))

    def post(self, url: str, data: dict[str, str], allow_redirects: bool = False) -> LeanResponse:
        from urllib.parse import urlencode

        return self.request("POST", _path(url), urlencode(data).encode())


def _path(url: str) -> str:
    return "/" + url.split("://", 1)[-1].split("/", 1)[-1] if "://" in url else url


def client_for(base: str, username: str, kind: str) -> Any:
    """A logged-in client of `kind` ("lean" or "requests")."""
    session = login(base, username)
    if kind == "requests":
        return session
    return LeanClient(base, session.cookies.get_dict())


def login(base: str, username: str) -> Any:
    import requests

    session = requests.Session()
    page = session.get(f"{base}/login/")
    page.raise_for_status()
    token = session.cookies["csrftoken"]
    answer = session.post(
        f"{base}/login/",
        data={"username": username, "password": PASSWORD, "csrfmiddlewaretoken": token},
        headers={"Referer": f"{base}/login/"},
        allow_redirects=False,
    )
    if answer.status_code != 302:
        raise SystemExit(f"login as {username} failed: HTTP {answer.status_code}")
    return session


def time_get(session: Any, name: str, url: str, count: int, *, warmup: int = 3, note: str = "") -> Timing:
    timing = Timing(name, note=note)
    print(f"  {name} ...", file=sys.stderr, flush=True)
    for _ in range(warmup):
        session.get(url, allow_redirects=False)
    for _ in range(count):
        started = time.perf_counter()
        response = session.get(url, allow_redirects=False)
        timing.record(response, time.perf_counter() - started)
        if response.status_code >= 400:
            raise SystemExit(f"{name}: HTTP {response.status_code} for {url}")
    return timing


PK = re.compile(r"/label/(\d+)/")
WARMUP = 3


def time_submit(
    sessions: dict[str, Any],
    base: str,
    slug: str,
    work: list[tuple[str, int]],
    labels: dict[str, str],
    version: int,
    *,
    name: str,
    note: str,
) -> Timing:
    """POST the labels to each (annotator, assignment) of `work` in order; each answer is the 302 to the
    annotator's next item (not followed). The first `WARMUP` are not timed."""
    timing = Timing(name, note=note)
    print(f"  {name} ...", file=sys.stderr, flush=True)
    for n, (username, pk) in enumerate(work):
        session = sessions[username]
        token = session.cookies["csrftoken"]
        data = {"csrfmiddlewaretoken": token, "codebook_version": str(version), "finding": "1", **labels}
        started = time.perf_counter()
        response = session.post(f"{base}/studies/{slug}/label/{pk}/submit/", data=data, allow_redirects=False)
        elapsed = time.perf_counter() - started
        if response.status_code != 302 or PK.search(response.headers.get("location", "")) is None:
            raise SystemExit(
                f"{name}: HTTP {response.status_code} for assignment {pk}: {response.text[:500]}"
            )
        if n >= WARMUP:
            timing.record(response, elapsed)
    return timing


def every_submission(first: Timing, completing: Timing) -> Timing:
    """The two submit rows as one sample: with overlap 2, as many submissions complete an item as start
    one, so this is the distribution of submitting a label over a whole round."""
    every = Timing("submit, every submission", note="the two rows above together (overlap 2: half of each)")
    for part in (first, completing):
        every.client_ms += part.client_ms
        every.server_ms += part.server_ms
        every.queries += part.queries
        every.statuses |= part.statuses
    return every


def _fixtures(slug: str, count: int) -> dict[str, Any]:
    """What the client needs from the database: ids for deep pages, a valid label, the annotator to use."""
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from apps.accounts.models import Study
    from apps.adjudication.forms import encode_cursor
    from apps.adjudication.models import Review, ReviewState
    from apps.annotation.models import Assignment, AssignmentStatus
    from apps.annotation.payload import value_field
    from apps.corpus.models import Item

    study = Study.objects.get(slug=slug)
    ids = Item.objects.filter(study=study).order_by("id").values_list("id", flat=True)
    total = ids.count()
    deep_item = ids[int(total * 0.9)]
    deep_filtered = ids.filter(source="github", relevance="relevant")
    deep_filtered_id = deep_filtered[int(deep_filtered.count() * 0.9)]
    reviews = Review.objects.filter(study=study, state=ReviewState.DISAGREEMENT).order_by(
        "updated_at", "item_id"
    )
    deep_review = reviews.values_list("updated_at", "item_id")[int(reviews.count() * 0.9)]
    # the annotator with the most open work left, so that repeated runs spread over the ten
    open_by = (
        Assignment.objects.filter(study=study, status=AssignmentStatus.OPEN)
        .values_list("annotator__username")
        .order_by("annotator__username")
    )
    counts: dict[str, int] = {}
    for (username,) in open_by.iterator():
        counts[username] = counts.get(username, 0) + 1
    annotator = max(sorted(counts), key=lambda u: counts[u])
    # Their open assignments on items nobody has submitted yet (first submissions), in queue order, and
    # the other annotator's assignment of each of those items (completing submissions).
    submitted_items = Assignment.objects.filter(study=study, status=AssignmentStatus.SUBMITTED).values(
        "item_id"
    )
    first = list(
        Assignment.objects.filter(study=study, status=AssignmentStatus.OPEN, annotator__username=annotator)
        .exclude(item_id__in=submitted_items)
        .order_by("round__number", "position", "id")
        .values_list("item_id", "id")[: count + WARMUP]
    )
    partners = {
        item_id: (username, pk)
        for item_id, username, pk in Assignment.objects.filter(
            item_id__in=[i for i, _ in first], status=AssignmentStatus.OPEN
        )
        .exclude(annotator__username=annotator)
        .values_list("item_id", "annotator__username", "id")
    }
    annotator_ids = list(
        Assignment.objects.filter(study=study).values_list("annotator_id", flat=True).distinct()[:2]
    )
    return {
        "queue_round": reviews.values_list("round_id", flat=True).first(),
        "queue_pair": annotator_ids,
        "deep_item": deep_item,
        "deep_filtered": deep_filtered_id,
        "deep_cursor": encode_cursor(deep_review),
        "annotator": annotator,
        "open_left": len(first),
        "first": [(annotator, pk) for _, pk in first],
        "completing": [partners[i] for i, _ in first if i in partners],
        "version": study.codebook.version,
        "labels": {value_field(1, "issue_type"): "howto", value_field(1, "howto_topic"): _a_topic(study)},
    }


def _a_topic(study: Any) -> str:
    from apps.taxonomy.index import CodebookIndex

    index = CodebookIndex.for_study(study)
    tree = index.tree("howto_topic")
    leaf = next(c for c in tree if not tree.children(c))
    return index.category(leaf).key


LABELLING = ("next-item", "workbench", "submit", "annotator queue")


def measure(
    base: str,
    slug: str,
    requests_per_endpoint: int,
    fixtures: dict[str, Any],
    client: str = "lean",
    only: tuple[str, ...] = (),
) -> list[dict[str, Any]]:
    """Time every endpoint, or those whose name starts with one of `only`."""
    n = requests_per_endpoint
    study = f"{base}/studies/{slug}"
    if fixtures["open_left"] < n + WARMUP or len(fixtures["completing"]) < n + WARMUP:
        raise SystemExit(
            f"only {fixtures['open_left']} unlabelled open assignments left: regenerate the study"
        )
    names = {fixtures["annotator"], *(username for username, _ in fixtures["completing"])}
    sessions = {name: client_for(base, name, client) for name in sorted(names)}
    annotator = sessions[fixtures["annotator"]]
    lead = client_for(base, "bench-lead", client)
    timings = [time_get(annotator, "next-item (GET, 302)", f"{study}/label/next/", n)]
    location = annotator.get(f"{study}/label/next/", allow_redirects=False).headers["location"]
    timings.append(time_get(annotator, "workbench page", f"{base}{location}", n))
    common = (base, slug)
    labels, version = fixtures["labels"], fixtures["version"]
    first, completing = fixtures["first"], fixtures["completing"]
    timings.append(
        time_submit(sessions, *common, first, labels, version, name="submit (POST, 302 to next)",
                    note="first of the item's 2: a how-to finding, 2 dimensions")
    )  # fmt: skip
    timings.append(
        time_submit(sessions, *common, completing, labels, version, name="submit, completing an item",
                    note="the item's 2nd: consolidated into a unanimous decision")
    )  # fmt: skip
    timings.append(every_submission(timings[-2], timings[-1]))
    timings.append(time_get(annotator, "annotator queue", f"{study}/queue/", n))
    pages = [
        ("study page (lead)", f"{study}/", ""),
        ("item list, first page", f"{study}/items/", ""),
        ("item list, deep page (90 %)", f"{study}/items/?after={fixtures['deep_item']}", "keyset"),
        ("item list, filtered", f"{study}/items/?source=github&relevance=relevant", "source + relevance"),
        (
            "item list, filtered, deep",
            f"{study}/items/?source=github&relevance=relevant&after={fixtures['deep_filtered']}",
            "",
        ),
        ("item list, search", f"{study}/items/?q=allreduce", "title contains"),
        ("disagreement queue, first", f"{study}/disagreements/", ""),
        (
            "disagreement queue, deep (90 %)",
            f"{study}/disagreements/?after={fixtures['deep_cursor']}",
            "keyset",
        ),
        (
            "disagreement queue, by round",
            f"{study}/disagreements/?round={fixtures['queue_round']}&sort=category",
            "a round, sorted by category",
        ),
        (
            "disagreement queue, by pair",
            f"{study}/disagreements/?annotator={fixtures['queue_pair'][0]}"
            f"&with_annotator={fixtures['queue_pair'][-1]}&dimension=issue_type",
            "two annotators, one dimension",
        ),
        ("rounds page", f"{study}/rounds/", "every round's progress per annotator"),
        ("agreement dashboard", f"{study}/agreement/", "stored snapshot or its job"),
        ("codebook page", f"{study}/codebook/", ""),
        ("export page", f"{study}/export/", ""),
    ]
    for name, url, note in pages:
        if not only or name.startswith(only):
            timings.append(time_get(lead, name, url, n, note=note))
    return [t.row() for t in timings if not only or t.name.startswith(only)]


# --- gunicorn ------------------------------------------------------------------------------------------


class Server:
    """gunicorn on 127.0.0.1:`port` serving `application` above, stopped on exit."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> str:
        import requests

        env = {k: v for k, v in os.environ.items() if k != "DJANGO_ENV"}
        env.update(DEBUG="0", ALLOWED_HOSTS="127.0.0.1", DJANGO_SETTINGS_MODULE="config.settings")
        self.process = subprocess.Popen(
            [
                str(Path(sys.executable).parent / "gunicorn"),
                "--workers",
                "2",
                # Django loaded before the workers fork (bench_wsgi.py), as the deployment does (`--preload`,
                # docker-compose.yml): else a worker's first request loads it, 2.5 s of the peers' upload
                "--preload",
                "--bind",
                f"127.0.0.1:{self.port}",
                "--chdir",
                str(ROOT),
                "--pythonpath",
                f"{ROOT},{ROOT / 'bench'}",
                "--log-level",
                "warning",
                "--timeout",
                "300",
                "bench_wsgi:application",
            ],
            env=env,
        )
        base = f"http://127.0.0.1:{self.port}"
        for _ in range(300):
            try:
                requests.get(f"{base}/login/", timeout=30)
                return base
            except (requests.ConnectionError, requests.Timeout):
                time.sleep(0.1)
        self.__exit__()
        raise SystemExit("gunicorn did not start")

    def __exit__(self, *exc: object) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=20)


def print_table(rows: list[dict[str, Any]]) -> None:
    print(f"{'endpoint':<34} {'n':>4} {'median ms':>10} {'p95 ms':>8} {'server ms':>10} {'queries':>8}  note")
    for r in rows:
        queries = (
            str(r["queries_min"])
            if r["queries_min"] == r["queries_max"]
            else f"{r['queries_min']}-{r['queries_max']}"
        )
        times = f"{r['median_ms']:>10.1f} {r['p95_ms']:>8.1f} {r['server_ms']:>10.1f}"
        print(f"{r['endpoint']:<34} {r['n']:>4} {times} {queries:>8}  {r['note']}")


def run(
    slug: str, requests_per_endpoint: int, port: int, client: str = "lean", only: tuple[str, ...] = ()
) -> list[dict[str, Any]]:
    fixtures = _fixtures(slug, requests_per_endpoint)
    with Server(port) as base:
        return measure(base, slug, requests_per_endpoint, fixtures, client, only)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--slug", default="bench-10000")
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--port", type=int, default=8790)
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    parser.add_argument(
        "--client", choices=["lean", "requests"], default="lean", help="the HTTP client timing the requests"
    )
    parser.add_argument(
        "--labelling", action="store_true", help="only the annotator's rows: " + ", ".join(LABELLING)
    )
    args = parser.parse_args()
    rows = run(args.slug, args.requests, args.port, args.client, LABELLING if args.labelling else ())
    if args.json:
        print(json.dumps(rows))
    else:
        print_table(rows)


if __name__ == "__main__":
    main()
