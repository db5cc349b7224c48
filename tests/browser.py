"""The one way our browser tests start Chromium: headless, through Playwright's sync API.

``browser`` is a fixture of tests/conftest.py, so every test can ask for it (mark the test ``browser``)::

    from tests.browser import watched_page

    pytestmark = pytest.mark.browser

    def test_something(live_server, browser):
        page = watched_page(browser)
        ...
        assert page.problems == []

Chromium is Debian's, at ``CHROMIUM`` (the ``CHROMIUM`` environment variable, else ``chromium`` on the
PATH, else ``/usr/bin/chromium``), never a browser build Playwright downloads. ``make test`` and ``make e2e``
install it when it is missing (``make chromium``). When it is missing all the same, the run stops before
its first test with one message saying how to install it (``tests/conftest.py`` calls ``missing_browser``
once the tests are collected): a browser test is never skipped, nor failed one by one, for it.
``watched_page`` collects every script error and every console error (a CSP violation is one) in
``page.problems``, so a test can assert the pages ran clean.

Playwright's sync API keeps an event loop running in the test's thread; Django refuses ORM calls from a
thread with a running loop unless ``DJANGO_ALLOW_ASYNC_UNSAFE`` is set. The fixture sets it for the test:
the test's ORM calls are still plain synchronous code, and the live server answers in its own thread.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path(os.environ.get("CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu"]
LAPTOP = {"width": 1366, "height": 768}  # the smallest screen a research team is expected to use


def missing_browser() -> str | None:
    """What the browser tests lack to run here, in a sentence saying how to get it; None if nothing."""
    if not (CHROMIUM.is_file() and os.access(CHROMIUM, os.X_OK)):
        return (
            f"Chromium is not installed at {CHROMIUM}, and the browser tests need it. Install it with "
            "`make chromium` (as root; elsewhere `sudo apt-get install -y chromium`), or set CHROMIUM to "
            "a Chromium executable, or leave the browser tests out with -m 'not browser'."
        )
    if importlib.util.find_spec("playwright") is None:
        return (
            "Playwright is not installed, and the browser tests need it: make install (pip install -e .[dev])"
        )
    return None


@pytest.fixture
def browser(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """A headless Chromium (a ``playwright.sync_api.Browser``), closed after the test."""
    problem = missing_browser()
    if problem is not None:  # the run stops before this in tests/conftest.py; a test run otherwise fails
        pytest.fail(problem, pytrace=False)
    from playwright import sync_api

    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with sync_api.sync_playwright() as playwright:
        instance = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            yield instance
        finally:
            instance.close()


def watched_page(browser: Any, *, expected_console: tuple[str, ...] = (), **context: Any) -> Any:
    """A new page in its own context (own cookies), at laptop size unless ``viewport=`` says otherwise.

    ``page.problems`` lists the uncaught script errors and console errors, except console errors holding
    one of ``expected_console`` (Chromium logs every deliberate 4xx answer as a console error).
    """
    context.setdefault("viewport", LAPTOP)
    page = browser.new_context(**context).new_page()
    problems: list[str] = []

    def on_console(message: Any) -> None:
        if message.type == "error" and not any(text in message.text for text in expected_console):
            problems.append(f"{page.url}: {message.text}")

    page.on("pageerror", lambda error: problems.append(f"{page.url}: {error}"))
    page.on("console", on_console)
    page.problems = problems
    return page


def sign_in(page: Any, base: str, username: str, password: str) -> None:
    """Log ``username`` in through the login form (the page's earlier session, if any, dropped first)."""
    page.context.clear_cookies()
    page.goto(f"{base}/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(lambda url: "/login/" not in url)
