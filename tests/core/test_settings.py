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


def test_without_redis_a_cache_dir_is_shared_by_two_processes(tmp_path: Path) -> None:
    """`make run` sets CACHE_DIR for its web server and its worker: a token one replaces (a job's write) is
    the one the other reads (apps/core/generations.py), instead of each keeping its own in memory."""
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL", "DJANGO_ENV"}}
    env["CACHE_DIR"] = str(tmp_path / "cache")

    def shell(code: str) -> str:
        done = subprocess.run(
            [sys.executable, "manage.py", "shell", "-v", "0", "-c", code],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    shell("from django.core.cache import cache; cache.set('generation:figures:7', 'from-the-worker', None)")
    assert shell("from django.core.cache import cache; print(cache.get('generation:figures:7'))") == (
        "from-the-worker"
    )
