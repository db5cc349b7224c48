"""Issue #26 points 5 and 6 in Chromium: a lead sorts, filters and full-text-searches the items grid, screens
out every match of a search at once (the bulk bar keeps its choices through the htmx swaps of the results),
and screens items one by one with the keyboard."""

from __future__ import annotations

import os
from typing import Any

import pytest
from playwright.sync_api import expect

from apps.accounts.models import Role
from apps.corpus.models import Item, Relevance
from tests.browser import sign_in, watched_page
from tests.factories import ItemFactory, MembershipFactory, StudyFactory, UserFactory

from .test_fix_evidence import PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
SHOTS = os.environ.get("SCREENSHOTS_DIR", "")


def _titles(page: Any) -> list[str]:
    return [t.strip() for t in page.locator("#item-results tbody tr td:nth-child(3)").all_inner_texts()]


def test_a_lead_sorts_filters_searches_and_screens_the_items_grid(live_server: Any, browser: Any) -> None:
    study = StudyFactory(slug="grid", name="Grid study")
    MembershipFactory(study=study, role=Role.LEAD, user=UserFactory(username="lena"))
    ItemFactory(study=study, title="Beta: NCCL allreduce hangs", body="The ring stalls.", source="github")
    ItemFactory(
        study=study, title="Alpha: DDP timeout", body="NCCL watchdog timeout on rank 3", source="github"
    )
    ItemFactory(study=study, title="Gamma: pandas merge", body="How to merge frames", source="stackoverflow")
    ItemFactory(study=study, url="https://github.com/horovod/horovod/issues/1981", title="", body="")
    base = live_server.url
    page = watched_page(browser)
    page.set_default_timeout(20_000)
    sign_in(page, base, "lena", password=PASSWORD)
    page.goto(f"{base}/studies/grid/items/")
    assert "horovod/horovod#1981" in _titles(page)

    # sort by title, then reverse it: the URL follows
    page.locator("[data-sort-link=title]").click()
    page.wait_for_url("**sort=title**")
    assert _titles(page)[:2] == ["horovod/horovod#1981", "Alpha: DDP timeout"]  # no title yet: first
    page.locator("[data-sort-link=title]").click()
    page.wait_for_url("**sort=-title**")
    assert _titles(page)[0] == "Gamma: pandas merge"

    # filter by source, then full-text search of the body as well
    page.get_by_label("Source").select_option("github")
    page.wait_for_url("**source=github**")
    assert len(_titles(page)) == 3
    page.get_by_label("Search title and body").fill("nccl")
    page.wait_for_url("**q=nccl**")
    expect(page.locator("#item-results tbody tr")).to_have_count(2)
    assert sorted(_titles(page)) == ["Alpha: DDP timeout", "Beta: NCCL allreduce hangs"]

    # bulk: choose the scope and reason first, then change the search (a swap), then apply
    page.get_by_label("every item matching the filters").check()
    page.get_by_label("Reason (to exclude)").fill("Not about training")
    page.get_by_label("Search title and body").fill("nccl timeout")
    expect(page.locator("#item-results tbody tr")).to_have_count(1)
    assert page.get_by_label("every item matching the filters").is_checked()
    assert page.get_by_label("Reason (to exclude)").input_value() == "Not about training"
    if SHOTS:
        page.screenshot(path=f"{SHOTS}/items-grid.png", full_page=True)
    page.get_by_role("button", name="Screen out").click()
    expect(page.locator(".messages")).to_contain_text("1 item marked irrelevant")
    screened = dict(Item.objects.values_list("title", "relevance"))
    assert screened["Alpha: DDP timeout"] == Relevance.IRRELEVANT
    assert screened["Beta: NCCL allreduce hangs"] == Relevance.UNSCREENED
    assert Item.objects.get(title="Alpha: DDP timeout").relevance_reason == "Not about training"

    # keyboard screening of what is left (id order, unscreened only)
    page.goto(f"{base}/studies/grid/items/")
    page.get_by_role("link", name="Screen these with the keyboard").click()
    page.wait_for_url("**/items/screen/**")
    assert page.locator("#screen-title").inner_text() == "Beta: NCCL allreduce hangs"
    if SHOTS:
        page.screenshot(path=f"{SHOTS}/screening-keyboard.png", full_page=True)
    page.keyboard.press("i")
    expect(page.locator("#screen-title")).to_contain_text("Gamma")
    page.keyboard.press("u")  # skip pandas: stays unscreened
    expect(page.locator("#screen-title")).to_contain_text("horovod")
    page.keyboard.press("x")
    expect(page.locator("#screen-title")).to_have_count(0)
    screened = dict(Item.objects.values_list("title", "relevance"))
    assert screened["Beta: NCCL allreduce hangs"] == Relevance.RELEVANT
    assert screened["Gamma: pandas merge"] == Relevance.UNSCREENED
    assert screened[""] == Relevance.IRRELEVANT
