"""The package's ``models/`` folder (docs/export.md): the raters and their raw answers
(`raters/package.py`), and ``models/agreement.json``, how each model agrees with the people and with the
gold decisions (`agreement/models_report.py`). Written only when the study has a model rater."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from apps.accounts.models import Study
from apps.agreement.models_report import models_agreement
from apps.raters.package import ANSWERS_FILE, MODELS_DIR, RATERS_FILE, answer_lines, has_models, raters_data
from apps.taxonomy.index import CodebookIndex

from .. import tables

AGREEMENT_FILE = f"{MODELS_DIR}/agreement.json"


def models_report(study: Study, index: CodebookIndex) -> dict[str, Any] | None:
    """``models/agreement.json``'s content, or None for a study without model raters."""
    return models_agreement(study, index) if has_models(study) else None


def write_models(
    study: Study,
    directory: Path,
    index: CodebookIndex,
    dump_json: Callable[[Any], str],
    report: dict[str, Any] | None = None,
) -> list[str]:
    """Write the ``models/`` files when the study has a model rater; their names (none otherwise).
    ``report``: `models_report`, when the caller computed it already (the paper folder uses it too)."""
    if not has_models(study):
        return []
    (directory / MODELS_DIR).mkdir(parents=True, exist_ok=True)
    (directory / RATERS_FILE).write_text(dump_json(raters_data(study)), encoding="utf-8")
    with (directory / ANSWERS_FILE).open("w", encoding="utf-8", newline="") as handle:
        for line in answer_lines(study):
            handle.write(tables.json_line(line) + "\n")
    report = report if report is not None else models_agreement(study, index)
    (directory / AGREEMENT_FILE).write_text(dump_json(report), encoding="utf-8")
    return [RATERS_FILE, ANSWERS_FILE, AGREEMENT_FILE]
