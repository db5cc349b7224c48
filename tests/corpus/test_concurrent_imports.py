"""Two imports into one study at once: both finish, and their counts add up to what was written.

The two jobs run on threads of their own with their own connections (`tests.concurrency`; on SQLite a file
database in WAL mode with the project's options, as ``make run`` serves it).
"""

from __future__ import annotations

from pathlib import Path

from apps.accounts.models import Study
from apps.core.models import JobStatus
from apps.corpus.models import ImportJob, Item
from apps.corpus.params import FileParams
from apps.corpus.services import create_import_job, run_import
from tests.concurrency import ConcurrentDatabase, concurrent_database, in_thread, run_in_threads  # noqa: F401

# More than one batch each (1,000 records), overlapping by half: batches of the two jobs interleave.
ROWS = 2400
OVERLAP = 1200


def items_csv(path: Path, numbers: range) -> Path:
    lines = ["url,title,body"] + [
        f"https://github.com/a/b/issues/{n},Training hangs {n},NCCL timeout on rank {n}" for n in numbers
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_two_imports_into_one_study_at_once_both_finish_and_their_counts_add_up(
    study: Study,
    tmp_path: Path,
    concurrent_database: ConcurrentDatabase,  # noqa: F811  (the fixture imported above)
) -> None:
    first = create_import_job(study, FileParams(format="csv"))
    second = create_import_job(study, FileParams(format="csv"))
    first.upload = str(items_csv(tmp_path / "first.csv", range(ROWS)))
    second.upload = str(items_csv(tmp_path / "second.csv", range(ROWS - OVERLAP, 2 * ROWS - OVERLAP)))
    ImportJob.objects.filter(pk=first.pk).update(upload=first.upload)
    ImportJob.objects.filter(pk=second.pk).update(upload=second.upload)
    concurrent_database.start()

    run_in_threads(
        lambda: run_import(ImportJob.objects.get(pk=first.pk), render=False),
        lambda: run_import(ImportJob.objects.get(pk=second.pk), render=False),
    )

    jobs = in_thread(lambda: list(ImportJob.objects.filter(pk__in=[first.pk, second.pk]).order_by("pk")))
    assert [(job.status, job.error) for job in jobs] == [(JobStatus.SUCCEEDED, "")] * 2
    stored = in_thread(lambda: Item.objects.filter(study=study).count())
    assert stored == 2 * ROWS - OVERLAP
    assert sum(job.created for job in jobs) == stored
    assert sum(job.unchanged for job in jobs) == OVERLAP
    assert sum(job.updated + job.failed for job in jobs) == 0
