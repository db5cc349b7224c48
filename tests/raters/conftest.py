"""Model raters' tests: the agreement tests' studies, and a helper writing a model's labels file."""

from __future__ import annotations

from pathlib import Path

from tests.agreement.conftest import annotate, carol, codebook, items  # noqa: F401


def write_csv(path: Path, header: str, rows: list[tuple[object, ...]]) -> Path:
    path.write_text(header + "\n" + "".join(",".join(map(str, row)) + "\n" for row in rows), encoding="utf-8")
    return path
