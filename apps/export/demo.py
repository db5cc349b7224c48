"""Deleting the demo study, for `reset_demo`: the study and everything in it, nothing else.

A study's rows protect one another (a label protects its category, a category its parent and the category
it was merged into, a dimension the category it depends on, a decision the one it superseded), so
deleting the study alone is refused. Here the protecting rows go first, in one transaction, then the
study with the rest of its rows by cascade. Users are kept (they may belong to other studies); the files
the study's imports and exports wrote under UPLOAD_ROOT and EXPORT_ROOT are removed once the deletion has
committed (never a file elsewhere, such as the demo's own fixtures).
"""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.db import transaction

from apps.accounts.models import Study
from apps.adjudication.models import Decision, DecisionValue
from apps.annotation.models import LabelValue
from apps.corpus.models import ImportJob
from apps.taxonomy.models import Category, Codebook, Dimension

from .models import ExportJob


def _owned_files(study: Study) -> list[Path]:
    roots = [Path(settings.UPLOAD_ROOT).resolve(), Path(settings.EXPORT_ROOT).resolve()]
    names = [
        *ImportJob.objects.filter(study=study).exclude(upload="").values_list("upload", flat=True),
        *ExportJob.objects.filter(study=study).exclude(file_path="").values_list("file_path", flat=True),
    ]
    paths = [Path(name).resolve() for name in names]
    return [path for path in paths if any(path.is_relative_to(root) for root in roots)]


def _remove(paths: list[Path]) -> None:
    for path in paths:
        path.unlink(missing_ok=True)


def delete_study(study: Study) -> None:
    """Delete `study` and every row of it (items, codebook, rounds, labels, decisions, jobs)."""
    with transaction.atomic():
        files = _owned_files(study)
        DecisionValue.objects.filter(finding__decision__study=study).delete()
        Decision.objects.filter(study=study).update(supersedes=None)
        LabelValue.objects.filter(finding__annotation__assignment__study=study).delete()
        Dimension.objects.filter(codebook__study=study).update(applies_when_category=None)
        categories = Category.objects.filter(dimension__codebook__study=study)
        categories.update(parent=None)
        while categories.exists():  # a merged category goes after the ones merged into it (a chain ends)
            deleted, _ = categories.filter(merged_from__isnull=True).delete()
            if not deleted:
                break  # cannot happen (merges form no cycle); the codebook's deletion would say what is left
        Codebook.objects.filter(study=study).delete()
        study.delete()
        transaction.on_commit(lambda: _remove(files))
