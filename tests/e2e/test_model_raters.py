"""Issue #21's done-when, in Chromium: a lead adds a model rater for an OpenAI-compatible endpoint (a local
fake server) on the Models screen, runs it on round 1 and watches its row poll from running, with its
progress bar, to succeeded; the comparison screen then shows the model against the people; an annotator of
the round sees neither the rater nor its model in the workbench, and gets 403 on both screens.

Tasks run eagerly in tests (``CELERY_TASK_ALWAYS_EAGER``): the run executes inside the request that
started it, in a thread of the live server. The fake server holds its answers until the test has seen the
running row, so a second page of the lead's watches the row poll (htmx, every 2 s) to its end.

With ``TAXONOMIST_E2E_SHOTS=DIR`` the screenshots are kept in DIR (else in the test's tmp_path).
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect
from sklearn.metrics import cohen_kappa_score

from apps.accounts.models import Membership, Role, Study, User
from apps.annotation.models import Assignment
from apps.annotation.services import assign_round, draw_round, submit_annotation
from apps.corpus.models import Item, Source
from apps.taxonomy.codebook_spec import codebook_from_data
from apps.taxonomy.index import CodebookIndex
from apps.taxonomy.loading import load_codebook
from tests.browser import sign_in, watched_page
from tests.raters.fake_openai import FakeServer, fake_server

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SLUG = "llm-check"
PASSWORD = "a-long-study-password"
RATER = "oracle-judge"
MODEL = "oracle-7b-instruct"
REPORTED_MODEL = "oracle-7b-instruct-0917"  # the model id the server says answered
KEY_ENV = "MODEL_KEY_E2E_ORACLE"
KEY = "sk-e2e-not-a-real-key-4711"
KINDS = ("bug", "question", "feature")
CODEBOOK = {
    "name": "Issue kinds",
    "dimensions": [
        {
            "key": "kind",
            "name": "Issue kind",
            "multiple": False,
            "categories": [
                {"key": "bug", "name": "Bug", "definition": "Something is broken."},
                {"key": "question", "name": "Question", "definition": "Asks how to do something."},
                {"key": "feature", "name": "Feature request", "definition": "Asks for something new."},
            ],
        }
    ],
}
# 32 items: the alternative-annotator test counts an annotator with 30 items or more only.
N_ITEMS = 32
TITLES = [f"Distributed training issue {n:02d}" for n in range(N_ITEMS)]
TRUTH = {title: KINDS[n % 3] for n, title in enumerate(TITLES)}


def _other(kind: str) -> str:
    return KINDS[(KINDS.index(kind) + 1) % 3]


ALICE = dict(TRUTH)
BOB = {t: _other(k) if n in (4, 13, 22) else k for n, (t, k) in enumerate(TRUTH.items())}
ANSWERS = {t: _other(k) if n in (7, 25) else k for n, (t, k) in enumerate(TRUTH.items())}
BOB_OPEN = TITLES[-1]  # bob has not labelled this item yet: his open assignment in round 1


@pytest.fixture
def shots(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("TAXONOMIST_E2E_SHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture
def gate() -> Iterator[threading.Event]:
    """Set once the test has seen the run's running row; the fake server answers only then."""
    event = threading.Event()
    yield event
    event.set()  # never leave the live server's request waiting on a failed test


@pytest.fixture
def model_server(gate: threading.Event) -> Iterator[FakeServer]:
    def answer(title: str) -> str:
        gate.wait(timeout=30)
        return json.dumps({"findings": [{"kind": ANSWERS[title]}]})

    with fake_server(FakeServer(answer=answer, model_id=lambda n: REPORTED_MODEL)) as running:
        yield running


def build_study() -> Study:
    """A lead, two annotators, a one-dimension codebook and round 1 of 32 items given to both annotators:
    alice labelled every item, bob all but one."""
    study = Study.objects.create(slug=SLUG, name="LLM check", overlap=2)
    users: dict[str, User] = {}
    for name, role in (("lena", Role.LEAD), ("alice", Role.ANNOTATOR), ("bob", Role.ANNOTATOR)):
        users[name] = User.objects.create_user(name, password=PASSWORD)
        Membership.objects.create(user=users[name], study=study, role=role)
    load_codebook(study, codebook_from_data(CODEBOOK), actor=users["lena"])
    for n, title in enumerate(TITLES):
        Item.objects.create(
            study=study,
            url=f"https://github.com/example/trainer/issues/{100 + n}",
            source=Source.GITHUB,
            external_id=str(100 + n),
            title=title,
            body=f"Rank {n % 4} stops after the all-reduce; see the log below.",
        )
    draw_round(study, number=1, size=N_ITEMS, seed=7, actor=users["lena"])
    assign_round(study, 1, ["alice", "bob"], overlap=2, actor=users["lena"])
    version = CodebookIndex.for_study(study).version
    plans = {"alice": ALICE, "bob": BOB}
    for assignment in Assignment.objects.filter(study=study).select_related("item", "annotator"):
        name, title = assignment.annotator.username, assignment.item.title
        if name == "bob" and title == BOB_OPEN:
            continue
        payload = {"findings": [{"values": {"kind": [plans[name][title]]}}], "memo": ""}
        submit_annotation(assignment, payload, users[name], codebook_version=version)
    return study


log_in = partial(sign_in, password=PASSWORD)


def new_page(browser: Any, **options: Any) -> Any:
    page = watched_page(browser, **options)
    page.set_default_timeout(15_000)
    return page


def shoot(page: Any, folder: Path, name: str) -> None:
    # caret="initial": hiding the caret injects a <style> that the CSP blocks
    page.screenshot(path=str(folder / f"{name}.png"), full_page=True, caret="initial")


def add_rater(page: Any, server: FakeServer) -> None:
    form = page.locator("#add-rater")
    form.get_by_label("Name", exact=True).fill(RATER)
    form.get_by_label("Kind", exact=True).select_option("openai")
    form.get_by_label("Base URL").fill(server.url)
    form.get_by_label("Model", exact=True).fill(MODEL)
    form.get_by_label("API key variable").fill(KEY_ENV)
    form.get_by_label("Concurrency").fill("2")
    form.get_by_label("Timeout").fill("30")
    form.get_by_role("button", name="Add", exact=True).click()
    page.wait_for_url(f"**/studies/{SLUG}/models/")
    expect(page.locator(".messages")).to_contain_text(f"Model rater {RATER} added.")
    row = page.locator(f"#raters tr[data-rater='{RATER}']")
    expect(row).to_contain_text(MODEL)
    expect(row).to_contain_text(server.url.split("/")[2])  # the host, 127.0.0.1:port
    expect(row).to_contain_text("OpenAI-compatible")


def wait_until(condition: Any, seconds: float = 15.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def expected_kappas() -> tuple[float, float]:
    """The model's kappa with each person (mean), and the people's with each other (scikit-learn)."""
    both = [t for t in TITLES if t != BOB_OPEN]
    with_alice = cohen_kappa_score([ANSWERS[t] for t in TITLES], [ALICE[t] for t in TITLES])
    with_bob = cohen_kappa_score([ANSWERS[t] for t in both], [BOB[t] for t in both])
    people = cohen_kappa_score([ALICE[t] for t in both], [BOB[t] for t in both])
    return (with_alice + with_bob) / 2, people


@pytest.mark.overlapping_requests  # the run is held open by its fake server while a second page watches
def test_a_lead_runs_a_model_rater_and_compares_it_while_annotators_never_see_it(
    live_server: Any,
    browser: Any,
    model_server: FakeServer,
    gate: threading.Event,
    settings: Any,
    monkeypatch: pytest.MonkeyPatch,
    shots: Path,
) -> None:
    settings.MODEL_BASE_URLS = [model_server.url]  # the operator lists the one server a lead may use
    monkeypatch.setenv(KEY_ENV, KEY)
    build_study()
    base = live_server.url
    models_url = f"{base}/studies/{SLUG}/models/"
    comparison_url = f"{base}/studies/{SLUG}/agreement/models/"

    # 1. The lead adds the rater on the Models screen.
    lead = new_page(browser)
    log_in(lead, base, "lena")
    lead.goto(f"{base}/studies/{SLUG}/")
    lead.get_by_role("navigation", name="Study").get_by_role("link", name="Models", exact=True).click()
    lead.wait_for_url(models_url)
    add_rater(lead, model_server)

    # 2. ... runs it on round 1 from its row. The run executes inside this request (eager tasks), so the
    # click does not wait for the answer; a second page watches the row while the server holds its answers.
    row = lead.locator(f"#raters tr[data-rater='{RATER}']")
    row.get_by_label("Scope").select_option(label="A round")
    row.get_by_label("Round").select_option("1")
    row.get_by_role("button", name="Run").click(no_wait_after=True)
    wait_until(lambda: len(model_server.requests) > 0)  # the run is running, its first requests held

    watcher = new_page(browser)
    log_in(watcher, base, "lena")
    watcher.goto(models_url)
    run_row = watcher.locator("#runs tr[id^='model-run-']")
    expect(run_row).to_have_count(1)
    expect(run_row).to_have_attribute("data-status", "running")
    expect(run_row).to_have_attribute("hx-trigger", "every 2s")
    bar = run_row.get_by_role("progressbar", name=re.compile(r"Run #\d+ progress"))
    expect(bar).to_be_visible()
    expect(run_row).to_contain_text(RATER)
    expect(run_row).to_contain_text("A round 1")
    shoot(watcher, shots, "models-running")
    gate.set()
    expect(run_row).to_have_attribute("data-status", "succeeded", timeout=30_000)  # swapped by the poll
    expect(run_row.locator(".pill.job-succeeded")).to_have_text("succeeded")
    expect(run_row.get_by_role("progressbar")).to_have_count(0)
    expect(run_row).not_to_have_attribute("hx-get", re.compile(".*"))  # polling stopped

    lead.wait_for_url(models_url)  # the start request's answer, once the run is done
    expect(lead.locator(".messages")).to_contain_text(f"of {RATER} started.")
    done = lead.locator("#runs tr[id^='model-run-']")
    expect(done).to_have_attribute("data-status", "succeeded")
    expect(done.locator("td.num").first).to_have_text(str(N_ITEMS))  # answered
    expect(done.locator("td.num").nth(1)).to_have_text("0")  # refused
    expect(row.locator("td.num").nth(1)).to_have_text(str(N_ITEMS))  # the rater's answers
    assert len(model_server.requests) == N_ITEMS
    assert {h["Authorization"] for h in model_server.headers} == {f"Bearer {KEY}"}
    assert KEY not in lead.content() and KEY not in watcher.content()
    shoot(lead, shots, "models-after-run")

    # 3. The comparison screen, from the agreement dashboard.
    lead.get_by_role("navigation", name="Study").get_by_role("link", name="Agreement", exact=True).click()
    lead.get_by_role("link", name="Models against the people and the decisions").click()
    lead.wait_for_url(comparison_url)
    table = lead.locator("table.models-comparison")
    for header in ("κ with people", "κ people\N{EN DASH}people", "Winning rate", "Replaces one annotator?"):
        expect(table.get_by_role("columnheader", name=header, exact=True)).to_be_visible()
    model_row = table.locator(f"tr[data-rater='{RATER}'][data-dimension='kind']")
    expect(model_row).to_have_count(1)
    cells = model_row.locator("td")
    expect(cells.nth(1)).to_have_text("Issue kind")
    expect(cells.nth(2)).to_have_text(str(N_ITEMS))
    with_people, people = expected_kappas()
    expect(cells.nth(3)).to_have_text(f"{with_people:.3f}")
    expect(cells.nth(4)).to_have_text(f"{people:.3f}")
    expect(cells.nth(8).locator(".pill")).to_have_text("yes")  # the alt-test: 31 items each, testable
    shoot(lead, shots, "comparison")
    assert lead.problems == [] and watcher.problems == []

    # 4. An annotator of round 1 labels without a trace of the model, and is refused both screens.
    bob = new_page(browser, expected_console=("403",))
    log_in(bob, base, "bob")
    bob.goto(f"{base}/studies/{SLUG}/queue/")
    bob.get_by_role("link", name="Start labelling").click()
    bob.wait_for_url("**/label/*/")
    bob.wait_for_selector("#workbench .dim.focused")
    expect(bob.locator("#item-title")).to_have_text(BOB_OPEN)
    html = bob.content()
    for secret in (RATER, MODEL, REPORTED_MODEL, model_server.url.split("/")[2]):
        assert secret not in html, secret
    expect(bob.get_by_role("navigation", name="Study").get_by_role("link", name="Models")).to_have_count(0)
    for url in (models_url, comparison_url):
        response = bob.goto(url)
        assert response is not None and response.status == 403, url
        assert RATER not in bob.content() and MODEL not in bob.content()
    assert bob.problems == []
