"""Start-up refuses bad configuration with a message that names the variable."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _start(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "SECRET_KEY", "DJANGO_ENV"}}
    base.update(env)
    return subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=ROOT, env=base, capture_output=True, text=True, timeout=60
    )


def test_production_without_secret_key_refuses_to_start() -> None:
    result = _start({"DJANGO_ENV": "production"})
    assert result.returncode != 0
    assert "SECRET_KEY must be set" in result.stderr


def test_malformed_database_url_names_the_variable() -> None:
    result = _start({"DATABASE_URL": "nonsense://what"})
    assert result.returncode != 0
    assert "DATABASE_URL" in result.stderr


def test_development_defaults_start_without_any_variable() -> None:
    result = _start({})
    assert result.returncode == 0, result.stderr
