"""The demo tests write their uploads and exports in a temporary folder, never into var/."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest


@pytest.fixture(autouse=True)
def file_roots(settings: Any, tmp_path: Path) -> dict[str, Path]:
    settings.UPLOAD_ROOT = tmp_path / "uploads"
    settings.EXPORT_ROOT = tmp_path / "exports"
    return {"uploads": settings.UPLOAD_ROOT, "exports": settings.EXPORT_ROOT}
