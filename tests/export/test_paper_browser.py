"""Issue #22 done-when: in real Chromium a lead downloads each table of the agreement dashboard and of the
Paper screen, and each figure, and every file holds what it says (CSV rows, Markdown, booktabs LaTeX,
JSON, SVG, PDF)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from apps.accounts.models import Study, User
from apps.annotation import services
from tests.browser import watched_page

pytestmark = pytest.mark.browser


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    page = watched_page(browser, accept_downloads=True)
    yield page
    assert page.problems == [], page.problems


def log_in(page: Any, live_server: Any) -> None:
    page.goto(f"{live_server.url}/login/")
    page.fill("#id_username", "lena")
    page.fill("#id_password", "correct-horse-battery")
    page.click("button[type=submit]")


def download(page: Any, link: Any, tmp_path: Path) -> tuple[str, bytes]:
    with page.expect_download() as info:
        link.click()
    target = tmp_path / info.value.suggested_filename
    info.value.save_as(target)
    assert info.value.failure() is None
    return info.value.suggested_filename, target.read_bytes()


def fresh(page: Any, n: int) -> None:
    """Reload the page every few downloads: Chromium stops a tab's automatic downloads after ten."""
    if n and n % 8 == 0:
        page.reload()


def check(name: str, content: bytes) -> None:
    suffix = name.rsplit(".", 1)[-1]
    if suffix == "csv":
        assert b"," in content.splitlines()[0], name
    elif suffix == "md":
        assert content.count(b"|") > 4, name
    elif suffix == "tex":
        assert b"\\toprule" in content and b"\\bottomrule" in content, name
    elif suffix == "json":
        assert "counts" in json.loads(content), name
    elif suffix == "svg":
        assert ET.fromstring(content).tag.endswith("svg"), name
    else:
        assert suffix == "pdf" and content.startswith(b"%PDF-") and b"/FontFile2" in content, name


def test_a_lead_downloads_every_table_and_figure(
    live_server: Any, page: Any, labelled: Study, lead: User, tmp_path: Path
) -> None:
    # Round 1 revealed for discussion: the dashboard adds its "Before and after discussion" table.
    labelled.discuss_after_reveal = True
    labelled.save(update_fields=["discuss_after_reveal"])
    services.reveal_round(labelled, 1, force=True, actor=lead)
    log_in(page, live_server)
    page.goto(f"{live_server.url}/studies/{labelled.slug}/agreement/?dimension=type&round=1")
    assert page.locator("#before-after-title").is_visible()
    links = page.locator("p.downloads a")
    assert links.count() == 18  # six tables, three formats
    names = set()
    for n in range(links.count()):
        fresh(page, n)
        name, content = download(page, links.nth(n), tmp_path)
        check(name, content)
        names.add(name)
    assert {n.split("-agreement-")[1].split("-")[0] for n in names} == {
        "summary",
        "rounds",
        "discussion",
        "categories",
        "pairs",
        "confusion",
    }
    page.reload()
    # The confusion matrix of the two annotators, as a figure under its table.
    figure_links = page.locator("#confusion-figure a")
    assert figure_links.count() == 2
    kinds = set()
    for n in range(2):
        name, content = download(page, figure_links.nth(n), tmp_path)
        check(name, content)
        kinds.add(name.rsplit(".", 1)[1])
    assert kinds == {"svg", "pdf"}

    page.goto(
        f"{live_server.url}/studies/{labelled.slug}/paper/?rows=symptom&rows_level=1&cols=fix&dimension=type"
    )
    page.wait_for_selector("#crosstab table.crosstab")
    for figure in ("#saturation img", "#crosstab img"):
        # Drawn on request by matplotlib: wait until the browser has it, then it must be a real image.
        page.wait_for_function(f"() => document.querySelector({figure!r})?.complete")
        assert page.locator(figure).evaluate("img => img.naturalWidth > 0"), figure
    paper_links = page.locator("#crosstab p.downloads a, #figures a[download]")
    assert paper_links.count() == 4 + 2 * (3 * 3 + 1)  # cross-tab formats; 3 kinds x 3 dimensions + heatmap
    for n in range(paper_links.count()):
        fresh(page, n)
        check(*download(page, paper_links.nth(n), tmp_path))

    page.click("text=methods section")
    page.wait_for_selector("#methods-agreement")
    for n in range(3):
        name, content = download(page, page.locator("p.downloads a").nth(n), tmp_path)
        assert content.strip(), name
