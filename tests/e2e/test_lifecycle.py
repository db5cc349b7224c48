"""A study's whole life in real Chromium, on a fresh database, the way a research team clicks through it.

The owner creates the study from the study list, adds two annotators, loads the codebook file on the
codebook page, imports two GitHub issues (from recorded API responses) and a CSV file, draws a seeded
round and assigns it to both annotators with overlap 2. Each annotator labels their queue with the
keyboard alone. The owner reads the agreement dashboard, resolves every disagreement side by side,
renames a category and merges another into it in the codebook editor, and downloads the replication
package; the test opens the zip and checks its dataset and agreement figures against what was clicked.

With ``TAXONOMIST_SCREENSHOTS=1`` every step is saved to docs/img/ (``make guide-screenshots``), at the
size of a laptop screen (1366 by 768): docs/guide.md shows them.
"""

from __future__ import annotations

import csv
import io
import json
import os
import zipfile
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect
from sklearn.metrics import cohen_kappa_score

from apps.accounts.models import User
from apps.adjudication.models import Decision, Provenance
from tests.browser import sign_in, watched_page

from .conftest import GITHUB_ISSUES

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

DATA = Path(__file__).parent / "data"
IMG = Path(__file__).resolve().parents[2] / "docs" / "img"
SHOOT = os.environ.get("TAXONOMIST_SCREENSHOTS") == "1"
PASSWORD = "a-long-study-password"
SLUG = "ddp-faults"

# The keys the workbench gives the codebook's options, in its order (tests/e2e/data/codebook.yaml).
KIND_KEY = {"bug": "1", "question": "2", "feature": "3"}
SYMPTOM_KEY = {"crash": "1", "hang": "2", "deadlock": "3", "wrong-output": "4"}

# What each annotator picks, per item title: (issue kind, symptom or None when it does not apply).
Pick = tuple[str, str | None]
PLAN: dict[str, dict[str, Pick]] = {
    "Document two factor auth": {"alice": ("question", None), "bob": ("question", None)},
    "Issue created by PyGithub": {"alice": ("bug", "crash"), "bob": ("bug", "crash")},
    "Training hangs after NCCL init on 2 nodes": {"alice": ("bug", "hang"), "bob": ("bug", "deadlock")},
    "Loss becomes NaN only with 8 GPUs": {"alice": ("bug", "wrong-output"), "bob": ("bug", "wrong-output")},
    "How do I pin one GPU per process with Horovod?": {"alice": ("question", None), "bob": ("bug", "hang")},
    "Add an option for gradient compression": {"alice": ("feature", None), "bob": ("feature", None)},
}
# The owner's rulings on the two disagreements: whose labels to take, and why.
RULINGS = {
    "Training hangs after NCCL init on 2 nodes": ("bob", "Both ranks wait on each other's all-reduce."),
    "How do I pin one GPU per process with Horovod?": ("alice", "Asks how to configure; nothing is broken."),
}
# The dataset the package must hold once the owner has renamed Hang and merged Deadlock into it.
NAMES = {
    "bug": "Bug",
    "question": "Question",
    "feature": "Feature request",
    "crash": "Crash",
    "hang": "Hang or deadlock",
    "deadlock": "Hang or deadlock",
    "wrong-output": "Wrong output",
}


def gold(title: str) -> Pick:
    ruling = RULINGS.get(title)
    picks = PLAN[title]
    return picks[ruling[0]] if ruling else picks["alice"]


def watched_page_for(browser: Any) -> Any:
    """A laptop-sized page that keeps downloads and gives up on a missing element after 15 s."""
    page = watched_page(browser, accept_downloads=True)
    page.set_default_timeout(15_000)
    return page


def shoot(page: Any, name: str, *, full_page: bool = False) -> None:
    """Save the page as docs/img/NAME.png when screenshots are asked for (make guide-screenshots)."""
    if SHOOT:
        IMG.mkdir(parents=True, exist_ok=True)
        # caret="initial": hiding the caret (or animations) injects a <style> that the CSP blocks
        page.screenshot(path=str(IMG / f"{name}.png"), full_page=full_page, caret="initial")


log_in = partial(sign_in, password=PASSWORD)


def nav(page: Any, name: str) -> None:
    """Follow a link of the study's navigation bar."""
    page.get_by_role("navigation", name="Study").get_by_role("link", name=name, exact=True).click()
    page.wait_for_load_state()


def create_study(page: Any, base: str) -> None:
    page.goto(f"{base}/")
    shoot(page, "00-no-studies")
    if page.locator("details.create-study:not([open])").count():
        page.get_by_text("Create a study", exact=True).click()
    page.get_by_label("Name").fill("Distributed training faults")
    page.get_by_label("Slug").fill(SLUG)
    page.get_by_label("Description").fill("Faults and questions in distributed deep-learning training.")
    page.get_by_label("Overlap").fill("2")
    shoot(page, "01-create-study")
    page.get_by_role("button", name="Create study").click()
    page.wait_for_url(f"**/studies/{SLUG}/")
    assert "created" in page.inner_text(".messages")


def add_annotators(page: Any) -> None:
    nav(page, "Members")
    for username in ("alice", "bob"):
        page.get_by_label("Username").fill(username)
        page.locator("#id_role").select_option("annotator")  # the add form (invite has a Role too)
        page.get_by_label("Password").fill(PASSWORD)
        page.get_by_role("button", name="Add", exact=True).click()
        page.wait_for_selector(f".messages:has-text('{username} added as annotator')")
    shoot(page, "02-members")


def load_codebook(page: Any) -> None:
    nav(page, "Codebook")
    shoot(page, "03-codebook-empty")
    page.get_by_role("link", name="Load a file").click()
    page.get_by_label("File").set_input_files(str(DATA / "codebook.yaml"))
    page.get_by_role("button", name="Preview the changes").click()
    page.wait_for_selector(".change-list")
    shoot(page, "04-codebook-preview")
    page.get_by_role("button", name="Apply").click()
    page.wait_for_url(f"**/studies/{SLUG}/codebook/")
    page.wait_for_selector("#codebook-trees a.category-link:text-is('Deadlock')")
    shoot(page, "05-codebook")


def import_items(page: Any) -> None:
    nav(page, "Import")
    page.get_by_role("link", name="GitHub REST API").click()
    page.get_by_label("Issue URLs", exact=False).first.check()
    page.locator("#id_urls").fill("\n".join(GITHUB_ISSUES))
    shoot(page, "06-import-github")
    page.get_by_role("button", name="Start import").click()
    wait_for_import(page)
    nav(page, "Import")
    page.get_by_role("link", name="File (CSV, JSON, JSONL, URL list)").click()
    page.get_by_label("File", exact=True).set_input_files(str(DATA / "items.csv"))
    page.get_by_role("button", name="Start import").click()
    wait_for_import(page)
    shoot(page, "07-import-job")
    nav(page, "Items")
    page.wait_for_selector("text=Add an option for gradient compression")
    shoot(page, "08-items")


def wait_for_import(page: Any) -> None:
    """The job page refreshes itself (htmx) until the import has succeeded."""
    page.wait_for_url(f"**/studies/{SLUG}/import/*/")
    page.wait_for_selector(".pill.job-succeeded")


def draw_and_assign(page: Any) -> None:
    nav(page, "Rounds")
    draw = page.locator("form[action$='/rounds/draw/']")
    draw.locator("input[name=number]").fill("1")
    draw.get_by_label("Sample size").fill("6")
    draw.get_by_label("Seed").fill("2023")
    draw.get_by_role("button", name="Draw").click()
    page.wait_for_load_state()
    assign = page.locator("form[action$='/rounds/assign/']")
    # by name: the three forms of the page share the id "id_number", so its label points at the first
    assign.locator("select[name=number]").select_option("1")
    assign.get_by_label("alice").check()
    assign.get_by_label("bob").check()
    assign.get_by_label("Annotators per item (k)").fill("2")
    assign.get_by_role("button", name="Assign").click()
    page.wait_for_load_state()
    page.wait_for_selector(".round-card:has-text('alice')")
    shoot(page, "09-rounds")


def label_queue(page: Any, base: str, annotator: str) -> list[str]:
    """Label every item of the annotator's queue with the keyboard; returns the titles in queue order."""
    log_in(page, base, annotator)
    page.goto(f"{base}/studies/{SLUG}/queue/")
    if annotator == "alice":
        shoot(page, "10-queue")
    page.get_by_role("link", name="Start labelling").click()
    seen: list[str] = []
    while "/label/" in page.url:
        page.wait_for_selector("#workbench .dim.focused")
        title = page.inner_text("#item-title")
        kind, symptom = PLAN[title][annotator]
        page.keyboard.press(KIND_KEY[kind])
        if symptom:
            page.wait_for_selector('.dim.focused[data-dimension="symptom"]')
            page.keyboard.press(SYMPTOM_KEY[symptom])
        if annotator == "alice" and len(seen) == 2:
            shoot(page, "11-workbench")
        url = page.url
        page.keyboard.press("s")
        page.wait_for_url(lambda u, previous=url: u != previous)
        seen.append(title)
    assert "Nothing left to label" in page.content()
    return seen


def read_agreement(page: Any) -> str:
    nav(page, "Agreement")
    page.wait_for_selector("text=Issue kind")
    shoot(page, "12-agreement", full_page=True)
    return page.inner_text("main")


def resolve_disagreements(page: Any) -> None:
    """Resolve every open disagreement from the queue, taking one annotator's labels with a rationale."""
    nav(page, "Disagreements")
    shoot(page, "13-disagreements")
    resolved: list[str] = []
    while page.locator("a[data-row-link]").count():
        page.locator("a[data-row-link]").first.click()
        page.wait_for_selector("[data-testid=annotator-name]")
        title = next(t for t in RULINGS if t in page.inner_text("h1"))
        annotator, rationale = RULINGS[title]
        name = page.locator(f"[data-testid=annotator-name]:text-is('{annotator}')")
        # htmx swaps the form in (the page's own claim, also a POST, is not that answer)
        with page.expect_response(lambda r: r.request.method == "POST" and not r.url.endswith("/claim/")):
            page.locator("th.adj-annotator", has=name).get_by_role("button", name="Use all").click()
        kind, symptom = PLAN[title][annotator]
        expect(page.get_by_test_id("decide-1-kind")).to_have_value(kind)
        expect(page.get_by_test_id("decide-1-symptom")).to_have_value(symptom or "")
        page.get_by_label("Rationale").fill(rationale)
        if not resolved:
            shoot(page, "14-resolve")
        page.get_by_label("Rationale").press("Control+Enter")
        expect(page.locator(".messages")).to_contain_text(f"Decision saved on “{title}”")
        resolved.append(title)
        nav(page, "Disagreements")
    assert sorted(resolved) == sorted(RULINGS)
    expect(page.locator("main")).to_contain_text("No open disagreements")


def evolve_codebook(page: Any) -> None:
    nav(page, "Codebook")
    page.click("#codebook-trees a.category-link:text-is('Hang')")
    page.wait_for_selector("#category-panel h2:has-text('Hang')")
    page.fill("#id_edit-name", "Hang or deadlock")
    page.click("#category-panel button:text-is('Save')")
    page.wait_for_selector("#codebook-trees a.category-link:text-is('Hang or deadlock')")
    page.click("#codebook-trees a.category-link:text-is('Deadlock')")
    page.wait_for_selector("#category-panel h2:has-text('Deadlock')")
    page.locator("#id_target").select_option(label="Hang or deadlock")
    shoot(page, "15-codebook-merge")
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("#category-panel button:text-is('Merge')")
    page.wait_for_selector("#category-panel [role=status]:has-text('Merged')")
    expect(page.locator("#codebook-trees .category-tree a.category-link:text-is('Deadlock')")).to_have_count(
        0
    )


def download_package(page: Any, folder: Path) -> Path:
    nav(page, "Export")
    page.get_by_label("Format").select_option("zip")
    page.get_by_role("button", name="Start export").click()
    download_link = page.locator("#export-jobs a:text-is('Download')").first
    download_link.wait_for()
    shoot(page, "16-export", full_page=True)
    with page.expect_download() as info:
        download_link.click()
    path = folder / "package.zip"
    info.value.save_as(path)
    return path


def test_a_study_goes_from_an_empty_database_to_a_replication_package(
    live_server: Any, browser: Any, github_replay: Any, private_folders: Path
) -> None:
    base = live_server.url
    User.objects.create_user("olivia", password=PASSWORD)

    owner = watched_page_for(browser)
    log_in(owner, base, "olivia")
    create_study(owner, base)
    add_annotators(owner)
    load_codebook(owner)
    import_items(owner)
    draw_and_assign(owner)

    annotators = {name: watched_page_for(browser) for name in ("alice", "bob")}
    for name, page in annotators.items():
        assert sorted(label_queue(page, base, name)) == sorted(PLAN), name

    figures = read_agreement(owner)
    resolve_disagreements(owner)
    evolve_codebook(owner)
    package = download_package(owner, private_folders)

    with zipfile.ZipFile(package) as archive:
        dataset = list(csv.DictReader(io.StringIO(archive.read("dataset.csv").decode("utf-8"))))
        agreement = json.loads(archive.read("agreement.json"))
    by_title = {row["title"]: row for row in dataset}
    assert sorted(by_title) == sorted(PLAN)
    for title, row in by_title.items():
        kind, symptom = gold(title)
        assert row["kind"] == NAMES[kind], title
        assert row["symptom"] == (NAMES[symptom] if symptom else ""), title
        expected = Provenance.ADJUDICATED if title in RULINGS else Provenance.UNANIMOUS
        assert row["provenance"] == expected, title
        assert row["rationale"] == (RULINGS[title][1] if title in RULINGS else ""), title

    # Agreement: the dashboard (codebook v1) and the package (after the merge) against scikit-learn.
    both = [t for t in sorted(PLAN) if PLAN[t]["alice"][1] and PLAN[t]["bob"][1]]  # symptom rated by both
    kind_kappa = cohen_kappa_score(*([PLAN[t][a][0] for t in sorted(PLAN)] for a in ("alice", "bob")))
    symptom_kappa = cohen_kappa_score(*([PLAN[t][a][1] for t in both] for a in ("alice", "bob")))
    assert f"κ {kind_kappa:.3f}" in figures and f"κ {symptom_kappa:.3f}" in figures
    assert symptom_kappa < 1.0  # Hang and Deadlock were told apart before the merge
    rounds = agreement["all_rounds"]
    assert rounds["kind"]["cohen_kappa"] == pytest.approx(kind_kappa, abs=1e-9)
    assert rounds["symptom"]["codebook_version"] == 3  # loaded, renamed, merged
    assert rounds["symptom"]["cohen_kappa"] == pytest.approx(1.0)  # merged, Deadlock counts as Hang
    assert Decision.objects.filter(is_current=True).count() == len(PLAN)
    problems = [*owner.problems, *annotators["alice"].problems, *annotators["bob"].problems]
    assert problems == [], "\n".join(problems)  # no script error, no CSP violation on any page
