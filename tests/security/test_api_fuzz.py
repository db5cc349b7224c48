"""API fuzzing: Schemathesis drives every operation of the OpenAPI schema on a running test server.

The server is pytest-django's live server over the test world (tests/api/world.py); Schemathesis runs as
its own process (`st run`) with an owner's token, a bounded number of examples per operation, and the
checks that matter here: no 5xx, every status documented, every body and content type as the schema says.
Marked `fuzz` (about a minute): `pytest -m fuzz tests/security`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from apps.accounts.models import Study, User
from tests.api.world import add_jobs, build_world

pytestmark = [pytest.mark.fuzz, pytest.mark.django_db(transaction=True)]

MAX_EXAMPLES = int(os.environ.get("FUZZ_MAX_EXAMPLES", "15"))
# The coverage phase (boundary values of every parameter) takes minutes: FUZZ_PHASES adds it for a deep run.
PHASES = os.environ.get("FUZZ_PHASES", "examples,fuzzing")
CHECKS = ",".join(
    [
        "not_a_server_error",
        "status_code_conformance",
        "content_type_conformance",
        "response_schema_conformance",
    ]
)


def _schemathesis() -> list[str]:
    found = shutil.which("st", path=str(Path(sys.executable).parent))
    if found is None:
        pytest.fail("Schemathesis is not installed: pip install schemathesis (a dev dependency)")
    return [found]


def test_schemathesis_finds_no_server_error_and_no_schema_violation(
    live_server: Any,
    study: Study,
    owner: User,
    lead: User,
    annotator_a: User,
    annotator_b: User,
    outsider: User,
    tmp_path: Path,
    settings: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The queue is the boundary: imports are recorded but not run (they would call GitHub and Stack
    # Exchange, which this machine cannot reach); exports and agreement run in-process as in tests.
    monkeypatch.setattr("apps.corpus.tasks.run_import_task.apply_async", lambda *args, **kwargs: None)
    settings.UPLOAD_ROOT = tmp_path / "uploads"
    settings.EXPORT_ROOT = tmp_path / "exports"
    world = add_jobs(build_world(study, owner, lead, annotator_a, annotator_b, outsider))
    token = world.token(owner)
    command = [
        *_schemathesis(),
        "run",
        f"{live_server.url}/api/schema/?format=json",
        "--url",
        live_server.url,
        "--checks",
        CHECKS,
        "--phases",
        PHASES,
        "--max-examples",
        str(MAX_EXAMPLES),
        "--workers",
        "1",
        "--header",
        f"Authorization: Token {token}",
        "--request-timeout",
        "30",
        "--suppress-health-check",
        "all",
        "--seed",
        "20240601",
        "--no-color",
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=tmp_path)
    output = result.stdout + result.stderr
    report = Path(os.environ.get("FUZZ_REPORT", tmp_path / "schemathesis.txt"))
    report.write_text(output)
    assert result.returncode == 0, f"Schemathesis found problems (full output: {report}):\n{output[-6000:]}"
    assert "passed" in output.lower()
