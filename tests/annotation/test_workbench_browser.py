"""The workbench's keyboard traps, in real Chromium with real key presses: the search never picks a
category the annotator did not see, and a refused submission takes the focus to the dimension at fault."""

from __future__ import annotations

from typing import Any

import pytest
from django.utils import timezone

from apps.accounts.models import Study, User
from apps.annotation.models import Assignment
from apps.corpus.models import Item
from tests.annotation.conftest import Book, make_round
from tests.browser import browser, watched_page  # noqa: F401  (browser is a fixture)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "correct-horse-battery"  # tests/factories.py
SYMPTOM = '.dim[data-dimension="symptom"]'


@pytest.fixture
def workbench(
    live_server: Any,
    browser: Any,  # noqa: F811  (the shared fixture imported above)
    study: Study,
    book: Book,
    items: list[Item],
    annotator_a: User,
) -> Any:
    """Alice's workbench on her first item, logged in with the keyboard, the first dimension focused."""
    Item.objects.filter(pk=items[0].pk).update(body_html="<p>NCCL hangs</p>", rendered_at=timezone.now())
    make_round(study, 1, items[:1], {annotator_a: items[:1]})
    assignment = Assignment.objects.get(annotator=annotator_a)
    page = watched_page(browser, expected_console=("422",))
    page.goto(f"{live_server.url}/login/")
    page.fill("input[name=username]", "alice")
    page.fill("input[name=password]", PASSWORD)
    page.keyboard.press("Enter")
    page.wait_for_url(lambda url: "/login/" not in url)
    page.goto(f"{live_server.url}/studies/{study.slug}/label/{assignment.pk}/")
    page.wait_for_selector("#workbench .dim.focused")
    return page


def _press(page: Any, *keys: str) -> None:
    for key in keys:
        page.keyboard.press(key)


def _chosen(page: Any, dimension: str) -> list[str]:
    return page.eval_on_selector_all(
        f'.dim[data-dimension="{dimension}"] .opt input:checked', "inputs => inputs.map(i => i.value)"
    )


def _shown(page: Any, dimension: str) -> list[str]:
    return page.eval_on_selector_all(
        f'.dim[data-dimension="{dimension}"] .opt:not([hidden])', "items => items.map(i => i.dataset.key)"
    )


def _focused_dimension(page: Any) -> str:
    return page.evaluate(
        "document.activeElement.closest('.dim') && document.activeElement.closest('.dim').dataset.dimension"
    )


def test_a_digit_after_leaving_a_search_picks_among_the_matches_shown_never_from_the_full_list(
    workbench: Any,
) -> None:
    page = workbench
    _press(page, "1")  # issue type: fault; the symptom dimension appears and takes the focus
    page.wait_for_selector(f"{SYMPTOM}.focused")
    assert _shown(page, "symptom") == ["training", "hang", "crash", "deployment", "deploy-crash"]
    # The two "Crash" show where they are even without a search.
    assert page.is_visible(f'{SYMPTOM} .opt[data-key="crash"] .opt-context')
    assert page.is_visible(f'{SYMPTOM} .opt[data-key="deploy-crash"] .opt-context')
    assert not page.is_visible(f'{SYMPTOM} .opt[data-key="hang"] .opt-context')

    # The case: /hang, Esc, 3 chose the third category of the full list ("Crash").
    _press(page, "/")
    page.keyboard.type("hang")
    _press(page, "Escape")
    assert _focused_dimension(page) == "symptom"
    assert _shown(page, "symptom") == ["hang"]  # the filter stays on screen, numbered
    assert page.inner_text(f'{SYMPTOM} .opt[data-key="hang"] .num') == "1"
    _press(page, "3")
    assert _chosen(page, "symptom") == []
    _press(page, "Escape")  # Esc again: the full list
    assert _shown(page, "symptom") == ["training", "hang", "crash", "deployment", "deploy-crash"]

    # Two matches of the same name, each with its path; 2 picks the second match.
    _press(page, "/")
    page.keyboard.type("crash")
    assert _shown(page, "symptom") == ["crash", "deploy-crash"]
    assert page.inner_text(f'{SYMPTOM} .opt[data-key="deploy-crash"]').split() == [
        "2",
        "Crash",
        "in",
        "Deployment",
    ]
    _press(page, "Escape")
    page.screenshot(path="/tmp/f-search-filter-kept.png")
    _press(page, "2")
    assert _chosen(page, "symptom") == ["deploy-crash"]
    page.wait_for_selector('.dim.focused[data-dimension="fix_pattern"]')
    _press(page, "k")  # back on symptom: its filter went with the focus
    assert _shown(page, "symptom") == ["training", "hang", "crash", "deployment", "deploy-crash"]

    # A search with no match says so, and Enter picks nothing.
    _press(page, "/")
    page.keyboard.type("zzz")
    assert page.inner_text(f"{SYMPTOM} .no-match") == "No category matches “zzz”. Esc twice shows them all."
    page.screenshot(path="/tmp/f-search-no-match.png")
    _press(page, "Enter")
    assert _chosen(page, "symptom") == ["deploy-crash"]
    assert page.evaluate("document.activeElement.classList.contains('dim-search')")
    _press(page, "Escape", "Escape")
    assert not page.is_visible(f"{SYMPTOM} .no-match")
    assert page.problems == []


def test_a_refused_submission_moves_the_focus_to_the_dimension_it_names(workbench: Any) -> None:
    page = workbench
    url = page.url
    _press(page, "1")  # fault; symptom takes the focus and is left unanswered
    page.wait_for_selector(f"{SYMPTOM}.focused")
    _press(page, "j", "1", "s")  # a fix pattern, then submit
    page.wait_for_selector("#wb-errors")
    assert page.url.endswith("/submit/") and url != page.url
    assert page.inner_text("#wb-errors li") == "Finding 1, Symptom: choose a category or mark it pending"
    assert _focused_dimension(page) == "symptom"
    assert page.evaluate("document.activeElement.classList.contains('wb-invalid')")
    page.screenshot(path="/tmp/f-refused-focus.png")
    _press(page, "3")  # the keyboard goes on where the problem is: Crash
    assert _chosen(page, "symptom") == ["crash"]
    assert page.problems == []


def test_a_category_retired_since_the_draft_shows_ticked_and_flagged_and_digits_skip_it(
    workbench: Any, book: Book, lead: User, annotator_a: User
) -> None:
    from apps.annotation.models import Annotation
    from apps.taxonomy.services import retire_category

    page = workbench
    _press(page, "1", "2")  # fault, then Hang; the draft is saved as the annotator goes
    page.wait_for_selector("#draft-status:has-text('Draft saved')")
    assert Annotation.objects.get(assignment__annotator=annotator_a).draft["findings"][0]["values"][
        "symptom"
    ] == ["hang"]
    retire_category(book.categories["hang"], actor=lead)
    page.reload()
    page.wait_for_selector("#wb-no-longer")
    assert page.is_checked(f'{SYMPTOM} .opt.inactive input[value="hang"]')
    assert page.inner_text(f"{SYMPTOM} .opt.inactive .pill") == "retired"
    page.screenshot(path="/tmp/f-retired-in-draft.png")
    _press(page, "j", "2")  # symptom; 2 is the second category still offered (Crash), not the retired one
    assert _chosen(page, "symptom") == ["crash"]
    assert page.problems == []
