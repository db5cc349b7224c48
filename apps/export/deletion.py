"""Deleting a study (the Settings page, the API, `reset_demo`): the study and everything in it, nothing else.

`accounts.services.delete_study` checks who may and the typed slug, and sends `study_deleting` inside its
transaction; `purge_study` here, connected to it (apps.py), removes the rows that protect one another.

A study's rows protect one another (a label protects its category, a category its parent and the category
it was merged into, a dimension the category it depends on, a decision the one it superseded), so
deleting the study alone is refused. Here the protecting rows go first, in one transaction, then the
study with the rest of its rows by cascade. Users are kept (they may belong to other studies).

Once the deletion has committed, the files the study wrote are removed: its folders
``UPLOAD_ROOT/<slug>/`` and ``EXPORT_ROOT/<slug>/`` (every upload, export file and ``.job-<id>`` scratch
folder of the study, those of jobs whose row is gone included) and any other file under those two roots
that one of its jobs recorded. Never a file elsewhere, such as the demo's own fixtures, nor another
study's folder.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from django.conf import settings
from django.db import transaction

from apps.accounts.models import Study
from apps.accounts.services import delete_study as delete_study_checked
from apps.adjudication.services.writes import delete_study_gold
from apps.annotation.writes import delete_study_labels
from apps.corpus.models import ImportJob
from apps.raters.services import delete_study_model_labels
from apps.taxonomy.models import Category, Codebook, Dimension

from .models import ExportJob
from .services import scratch_dir, stored_path


def _study_folder(root: Path, study: Study) -> Path | None:
    """``root/<slug>``, or None if that is not a folder directly inside `root` (a slug never leaves it)."""
    folder = (root / study.slug).resolve()
    return folder if folder.parent == root and folder.name == study.slug else None


def _owned_paths(study: Study) -> list[Path]:
    """The study's folders under UPLOAD_ROOT and EXPORT_ROOT, and the files its jobs recorded there."""
    upload_root = Path(settings.UPLOAD_ROOT).resolve()
    export_root = Path(settings.EXPORT_ROOT).resolve()
    folders = [_study_folder(root, study) for root in (upload_root, export_root)]
    paths = [folder for folder in folders if folder is not None]
    for upload in ImportJob.objects.filter(study=study).exclude(upload="").values_list("upload", flat=True):
        path = Path(upload).resolve()  # recorded as written: absolute, or relative to the working folder
        if path.is_relative_to(upload_root):
            paths.append(path)
    for job in ExportJob.objects.filter(study=study).select_related("study"):
        stored = stored_path(job)  # recorded relative to EXPORT_ROOT
        paths.extend(p for p in (stored, scratch_dir(job).resolve()) if p and p.is_relative_to(export_root))
    return paths


def _remove(paths: list[Path]) -> None:
    for path in paths:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)


def delete_study(study: Study) -> None:
    """Delete `study` and every row of it (items, codebook, rounds, labels, decisions, jobs), as the
    server's operator (`reset_demo`)."""
    delete_study_checked(study, confirm=study.slug, actor=None)


def purge_study(sender: object, *, study: Study, **kwargs: object) -> None:
    """The `study_deleting` receiver: inside the deletion's transaction, remove the study's protecting
    rows (gold and label values, blind values, disagreement causes, model labels, the links between
    categories), so that the study's own deletion can cascade; its files go once the deletion commits."""
    with transaction.atomic():
        files = _owned_paths(study)
        delete_study_gold(study)
        delete_study_labels(study)
        delete_study_model_labels(study)
        Dimension.objects.filter(codebook__study=study).update(applies_when_category=None)
        categories = Category.objects.filter(dimension__codebook__study=study)
        categories.update(parent=None)
        while categories.exists():  # a merged category goes after the ones merged into it (a chain ends)
            deleted, _ = categories.filter(merged_from__isnull=True).delete()
            if not deleted:
                break  # cannot happen (merges form no cycle); the codebook's deletion would say what is left
        Codebook.objects.filter(study=study).delete()
        transaction.on_commit(lambda: _remove(files))
