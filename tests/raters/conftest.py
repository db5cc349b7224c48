"""Model raters' tests: the agreement tests' studies, a round whose items a model is asked about, and a
helper writing a model's labels file."""

from __future__ import annotations

from pathlib import Path

import pytest

from apps.accounts.models import Study, User
from apps.corpus.models import Item
from tests.agreement.conftest import Annotate, annotate, carol, codebook, items  # noqa: F401


def write_csv(path: Path, header: str, rows: list[tuple[object, ...]]) -> Path:
    path.write_text(header + "\n" + "".join(",".join(map(str, row)) + "\n" for row in rows), encoding="utf-8")
    return path


@pytest.fixture
def round_items(request: pytest.FixtureRequest, study: Study, annotator_a: User) -> list[Item]:
    """Round 1 of the small codebook's study: six items given to alice, open (a model's round to run)."""
    request.getfixturevalue("codebook")
    chosen: list[Item] = request.getfixturevalue("items")
    label: Annotate = request.getfixturevalue("annotate")
    for item in chosen:
        label(
            1, item, annotator_a, [{"kind": ["bug"], "symptom": ["crash"], "fix": ["code"]}], submitted=False
        )
    return chosen
