"""A benchmark study at test scale: `bench/generate.py` (the generator of `bench/run_all.py`) on the test
database, at two sizes, so that a page's query count can be shown not to grow with the study."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

GENERATOR = Path(__file__).resolve().parents[2] / "bench" / "generate.py"
#: Two study sizes far enough apart that any per-item or per-row query would show.
SIZES = (20, 120)


def load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_generate", GENERATOR)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.fixture(params=SIZES, ids=lambda size: f"{size}-items")
def bench_study(request: pytest.FixtureRequest, transactional_db: None) -> Any:
    """The study `perf` generated with `request.param` items (5 rounds, 10 annotators, overlap 2).

    Committed, not inside a test transaction, so that requests see what they see in production: a
    codebook written by the transaction they run in is read around the codebook index cache."""
    from apps.accounts.models import Study

    load_generator().generate_study("perf", request.param, seed=7)
    return Study.objects.get(slug="perf")
