"""The browser tests' setup (tests/browser.py, tests/conftest.py): one way to start Chromium, and a run
that cannot start it stops at once with one message instead of failing or skipping test by test."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
BROWSER_TESTS = ["tests/taxonomy/test_browser.py", "tests/security/test_xss_browser.py"]
PLAIN_TEST = "tests/test_browser_setup.py::test_no_test_starts_chromium_its_own_way"


def _pytest(*args: str, chromium: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CHROMIUM": chromium}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_a_run_with_browser_tests_and_no_chromium_stops_before_its_first_test_with_one_message(
    tmp_path: Path,
) -> None:
    missing = tmp_path / "no-such-chromium"

    run = _pytest(*BROWSER_TESTS, PLAIN_TEST, chromium=str(missing))

    output = run.stdout + run.stderr
    assert run.returncode == 4, output  # pytest's usage error: nothing was run
    assert output.count(f"Chromium is not installed at {missing}") == 1, output
    assert "make chromium" in output and "-m 'not browser'" in output
    assert not re.search(r"\d+ (passed|failed|skipped|error)", output), output


def test_leaving_the_browser_tests_out_runs_the_rest_without_chromium(tmp_path: Path) -> None:
    run = _pytest(
        *BROWSER_TESTS, "-m", "not browser", PLAIN_TEST, chromium=str(tmp_path / "no-such-chromium")
    )

    assert run.returncode == 0, run.stdout + run.stderr
    assert re.search(r"1 passed, \d+ deselected", run.stdout), run.stdout


def test_no_test_starts_chromium_its_own_way() -> None:
    """Every browser test takes the shared `browser` fixture: no other module launches Playwright."""
    own_launch = re.compile(r"sync_playwright|\.chromium\.launch|executable_path")
    offenders = [
        str(path.relative_to(ROOT))
        for path in TESTS.rglob("*.py")
        if path.name != "browser.py" and path != Path(__file__) and own_launch.search(path.read_text())
    ]
    assert offenders == []


@pytest.mark.parametrize("venv", [".venv", "a virtualenv make never installed"])
def test_make_test_gets_chromium_before_any_test_and_stops_with_one_message_when_it_cannot(
    tmp_path: Path, venv: str
) -> None:
    """`make test` installs first when the virtualenv's stamp is missing or older than pyproject.toml (a
    virtualenv made by hand): `-o STAMP` takes the stamp as up to date, so only the Chromium rule is
    tested, whatever the virtualenv (here also one with no stamp at all, where make would install)."""
    if venv != ".venv":
        venv = str(tmp_path / "venv")
    missing = tmp_path / "no-such-chromium"
    run = subprocess.run(
        [
            "make",
            "--no-print-directory",
            "-o",
            f"{venv}/.installed",
            "test",
            f"VENV={venv}",
            f"CHROMIUM={missing}",
            "PYTEST_ARGS=-k no-test-has-this-name",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )

    output = run.stdout + run.stderr
    assert run.returncode != 0
    assert run.stderr.count(f"CHROMIUM={missing} is not an executable") == 1, run.stderr
    assert "Installing into" not in output and "pip install" not in output, output  # the stamp is kept
    assert "bin/pytest" not in output and "deselected" not in run.stdout  # no test run
