"""Locust scenario: annotators labelling and leads adjudicating one study (run by bench/load_run.py).

- `Annotator` (50 by default): logs in, then loops: open my next item (``label/next/`` → the workbench),
  read it for a moment, submit random labels (one finding: ``kind`` single-choice, ``tags`` several).
  Every submission the server accepted (a redirect) is recorded, so load_run.py can check afterwards
  that each of them is in the database exactly once.
- `Lead` (2): logs in, then loops: open the disagreement queue, open one disagreement at random, decide
  it. Two leads may pick the same item: the loser's 409 (the conflict page) is the designed answer
  and counts as a success.

Environment: ``LOAD_STUDY`` (slug), ``LOAD_PASSWORD``, ``LOAD_ANNOTATORS`` / ``LOAD_LEADS`` (counts),
``LOAD_THINK`` (an annotator's pause between items, ``min,max`` seconds, default ``5,15``),
``LOAD_RESULTS`` (a JSON file written at the end with the accepted submissions), ``LOAD_SESSIONS`` (a
JSON file username → session key: users start logged in, as people who logged in this morning; without
it each user logs in through the form first, which costs about a second of CPU each (PBKDF2, by design)).
"""

from __future__ import annotations

import itertools
import json
import os
import random
import re
from typing import Any
from urllib.parse import urlsplit

from locust import HttpUser, between, events, task

STUDY = os.environ.get("LOAD_STUDY", "bench-load")
PASSWORD = os.environ.get("LOAD_PASSWORD", "load-test-password")
KINDS = ["bug", "question", "docs", "perf"]
TAGS = ["gpu", "network", "config", "api"]
_CSRF = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')
_VERSION = re.compile(r'name="codebook_version"[^>]*value="(\d+)"|value="(\d+)"[^>]*name="codebook_version"')
_EXPECTED = re.compile(
    r'name="expected_decision"[^>]*value="(\d*)"|value="(\d*)"[^>]*name="expected_decision"'
)
_WORKBENCH = re.compile(r"/label/(\d+)/$")

SESSIONS: dict[str, str] = {}
if os.environ.get("LOAD_SESSIONS"):
    with open(os.environ["LOAD_SESSIONS"], encoding="utf-8") as _handle:
        SESSIONS = json.load(_handle)
# An annotator's seconds between two submissions. People take 30-120 s per item (the TOSEM 2023
# annotators about a minute); 5-15 s makes 50 annotators behave like 200-500 real ones.
THINK = tuple(float(x) for x in os.environ.get("LOAD_THINK", "5,15").split(","))
_annotators = itertools.count(1)
_leads = itertools.count(1)
accepted: list[int] = []  # assignment ids whose submission the server accepted


def first_group(match: re.Match[str] | None) -> str | None:
    if match is None:
        return None
    return next((g for g in match.groups() if g is not None), None)


class Member(HttpUser):
    abstract = True
    username = ""

    def login(self) -> None:
        if self.username in SESSIONS:
            host = urlsplit(self.host or "").hostname or "127.0.0.1"
            self.client.cookies.set("sessionid", SESSIONS[self.username], domain=host)
            return
        page = self.client.get("/login/", name="login page")
        token = first_group(_CSRF.search(page.text)) or ""
        with self.client.post(
            "/login/",
            {"username": self.username, "password": PASSWORD, "csrfmiddlewaretoken": token},
            headers={"Referer": f"{self.host}/login/"},
            allow_redirects=False,
            name="login",
            catch_response=True,
        ) as response:
            if response.status_code != 302:
                response.failure(f"login of {self.username} failed: {response.status_code}")

    def csrf(self) -> str:
        return str(self.client.cookies.get("csrftoken", ""))


class Annotator(Member):
    fixed_count = int(os.environ.get("LOAD_ANNOTATORS", "50"))
    wait_time = between(*THINK)  # reading the item and picking labels

    def on_start(self) -> None:
        self.username = f"annotator{next(_annotators)}"
        self.done = False
        self.login()

    @task
    def label_next(self) -> None:
        if self.done:
            return
        with self.client.get(f"/studies/{STUDY}/label/next/", name="open next", catch_response=True) as page:
            found = _WORKBENCH.search(page.url or "")
            if found is None:  # the queue is empty: this annotator is done
                self.done = page.status_code == 200
                if not self.done:
                    page.failure(f"no workbench: {page.status_code} {page.url}")
                return
            version = first_group(_VERSION.search(page.text))
            if version is None:
                page.failure("the workbench has no codebook_version")
                return
        pk = int(found.group(1))
        data: dict[str, Any] = {
            "csrfmiddlewaretoken": self.csrf(),
            "codebook_version": version,
            "finding": "1",
            "v-1-kind": random.choice(KINDS),
            "v-1-tags": random.sample(TAGS, random.randint(1, 2)),
            "memo": "",
            "seconds": str(random.randint(5, 90)),
        }
        with self.client.post(
            f"/studies/{STUDY}/label/{pk}/submit/",
            data,
            headers={"Referer": f"{self.host}/studies/{STUDY}/label/{pk}/"},
            allow_redirects=False,
            name="submit",
            catch_response=True,
        ) as response:
            if response.status_code == 302:
                accepted.append(pk)
            else:
                response.failure(f"submit {pk}: {response.status_code}")


class Lead(Member):
    fixed_count = int(os.environ.get("LOAD_LEADS", "2"))
    wait_time = between(2, 4)  # comparing the annotators' labels, writing a rationale

    def on_start(self) -> None:
        self.username = f"lead{next(_leads)}"
        self.login()

    @task
    def adjudicate(self) -> None:
        queue = self.client.get(f"/studies/{STUDY}/disagreements/", name="disagreement queue")
        ids = sorted(set(re.findall(rf"/studies/{STUDY}/disagreements/(\d+)/", queue.text)))
        if not ids:
            return
        item = random.choice(ids)
        url = f"/studies/{STUDY}/disagreements/{item}/"
        page = self.client.get(url, name="disagreement")
        self.client.post(  # what the page sends once loaded: the lead claims the item
            f"{url}claim/",
            {"csrfmiddlewaretoken": self.csrf()},
            headers={"Referer": f"{self.host}{url}", "HX-Request": "true"},
            name="claim",
        )
        expected = first_group(_EXPECTED.search(page.text)) or ""
        data: dict[str, Any] = {
            "csrfmiddlewaretoken": self.csrf(),
            "action": "save",
            "expected_decision": expected,
            "finding": "1",
            "v-1-kind": random.choice(KINDS),
            "v-1-tags": random.sample(TAGS, 1),
            "rationale": "load test decision",
        }
        with self.client.post(
            url, data, headers={"Referer": f"{self.host}{url}"}, allow_redirects=False, name="decide",
            catch_response=True,
        ) as response:  # fmt: skip
            if response.status_code in (302, 409):  # saved, or the other lead was first (by design)
                response.success()
            else:
                response.failure(f"decide {item}: {response.status_code}")


@events.test_stop.add_listener
def write_results(environment: Any, **kwargs: Any) -> None:
    path = os.environ.get("LOAD_RESULTS")
    if path:
        with open(path, "w", encoding="utf-8") as handle:
            json.dump({"accepted": accepted}, handle)
