"""The one way our browser tests start Chromium: headless, through Playwright's sync API.

Use it from a test module or an app's conftest.py::

    from tests.browser import browser  # noqa: F401  (a pytest fixture)

    def test_something(live_server, browser):
        page = watched_page(browser)
        ...
        assert page.problems == []

``browser`` skips the test, saying why and how to fix it, when Chromium is not at ``CHROMIUM``
(``/usr/bin/chromium`` unless the ``CHROMIUM`` environment variable says otherwise; Debian: ``apt-get
install -y chromium``, or ``make e2e`` which installs it). ``watched_page`` collects every script error and
every console error (a CSP violation is one) in ``page.problems``, so a test can assert the pages ran clean.

Playwright's sync API keeps an event loop running in the test's thread; Django refuses ORM calls from a
thread with a running loop unless ``DJANGO_ALLOW_ASYNC_UNSAFE`` is set. The fixture sets it for the test:
the test's ORM calls are still plain synchronous code, and the live server answers in its own thread.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path(os.environ.get("CHROMIUM", "/usr/bin/chromium"))
ARGS = ["--headless", "--no-sandbox", "--disable-gpu"]
LAPTOP = {"width": 1366, "height": 768}  # the smallest screen a research team is expected to use


@pytest.fixture
def browser(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """A headless Chromium (a ``playwright.sync_api.Browser``), closed after the test."""
    if not CHROMIUM.exists():
        pytest.skip(f"Chromium is not installed at {CHROMIUM}: apt-get install -y chromium (or make e2e)")
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="playwright is not installed (pip install -e .[dev])"
    )
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
