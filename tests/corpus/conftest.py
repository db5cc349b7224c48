"""Fixtures of the corpus tests: records to import, sample API responses, a private upload folder."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from apps.accounts.models import Study, User
from apps.corpus.records import CommentRecord, ItemRecord

SAMPLES = Path(__file__).parent / "samples"

RecordMaker = Callable[..., ItemRecord]


def sample(name: str) -> Any:
    """A recorded API response body from tests/corpus/samples/."""
    return json.loads((SAMPLES / name).read_text(encoding="utf-8"))


def make_record(
    n: int,
    *,
    body: str | None = None,
    title: str | None = None,
    tags: list[str] | None = None,
    comments: int = 1,
    **extra: Any,
) -> ItemRecord:
    """Issue `n` of a made-up repository, with `comments` comments."""
    return ItemRecord(
        url=f"https://github.com/example/repo/issues/{n}",
        source="github",
        external_id=f"example/repo#{n}",
        title=title if title is not None else f"Issue {n}: NCCL timeout with DistributedDataParallel",
        body=body if body is not None else f"Training hangs on rank {n}.\n\n```python\nimport torch\n```\n",
        body_format="markdown",
        created_at=datetime(2021, 1, 1 + n % 28, tzinfo=UTC),
        tags=tags if tags is not None else ["module: ddp"],
        metadata={"state": "closed", "number": n, **extra},
        raw={"number": n},
        comments=[
            CommentRecord(external_id=f"{n}-{c}", author=f"user{c}", body=f"Comment {c} on {n}")
            for c in range(1, comments + 1)
        ],
    )


@pytest.fixture
def record() -> RecordMaker:
    return make_record


@pytest.fixture
def upload_root(tmp_path: Path, settings: Any) -> Path:
    """UPLOAD_ROOT in a temporary folder, so tests never write into var/."""
    root = tmp_path / "uploads"
    settings.UPLOAD_ROOT = root
    return root


@pytest.fixture
def lead_client(client: Client, lead: User) -> Client:
    client.force_login(lead)
    return client


@pytest.fixture
def other_study(db: None) -> Study:
    from tests.factories import StudyFactory

    return StudyFactory(slug="other", name="Another study")
