"""Fixtures of the end-to-end test: the GitHub replay, private upload and export folders (Chromium is the
shared `browser` fixture of tests/browser.py)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import responses

SAMPLES = Path(__file__).resolve().parents[1] / "corpus" / "samples"
API = "https://api.github.com"

# The two issues the owner imports by URL, with the recorded responses GitHub gave for them.
GITHUB_ISSUES = {
    "https://github.com/sigmavirus24/github3.py/issues/187": (
        "/repos/sigmavirus24/github3.py/issues/187",
        "github3py_github3.py_issue_187.json",
        "github3py_github3.py_issue_187_comments.json",
    ),
    "https://github.com/PyGithub/PyGithub/issues/28": (
        "/repos/PyGithub/PyGithub/issues/28",
        "pygithub_PyGithub_issue_28.json",
        "pygithub_PyGithub_issue_28_comments.json",
    ),
}


def _sample(name: str) -> Any:
    return json.loads((SAMPLES / name).read_text(encoding="utf-8"))


@pytest.fixture
def github_replay() -> Iterator[responses.RequestsMock]:
    """GitHub's REST API answered from tests/corpus/samples/; any other outgoing request fails.

    The live server runs in a thread of this process and Celery runs eagerly in tests, so the import job
    started by the browser calls `requests` here, where `responses` intercepts it.
    """
    with responses.RequestsMock(assert_all_requests_are_fired=True) as mock:
        for path, issue, comments in GITHUB_ISSUES.values():
            # the importer asks for owner/name in lower case, as GitHub treats them
            mock.get(re.compile(re.escape(f"{API}{path}") + r"$", re.I), json=_sample(issue))
            mock.get(
                re.compile(re.escape(f"{API}{path}/comments") + r"(\?.*)?$", re.I), json=_sample(comments)
            )
            # fix evidence is read by default; this study's issues link to none (tests/corpus covers links)
            mock.get(re.compile(re.escape(f"{API}{path}/timeline") + r"(\?.*)?$", re.I), json=[])
        yield mock


@pytest.fixture
def private_folders(settings: Any, tmp_path: Path) -> Path:
    """Uploads and exports of this test in its own folder, not in var/."""
    settings.UPLOAD_ROOT = tmp_path / "uploads"
    settings.EXPORT_ROOT = tmp_path / "exports"
    return tmp_path
