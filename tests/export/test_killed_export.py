"""A worker killed (SIGKILL) half-way through an XLSX export leaves no temporary file behind once the job
is resent: every temporary file of the job, openpyxl's sheet stream included, is in the job's scratch
folder, which the rerun removes.

The export runs in a forked child that kills itself once the sheet is written, before it is saved: no
``finally``, no ``atexit`` runs, as when the OOM killer or a redeploy stops a worker.
"""

from __future__ import annotations

import os
import signal
import tempfile
from datetime import timedelta
from pathlib import Path
from typing import Any

import openpyxl
import pytest
from django.core.management import call_command
from django.db import connection, connections
from django.utils import timezone

from apps.core.jobs import claim_job
from apps.core.models import JobStatus
from apps.export.models import ExportJob
from apps.export.services import create_export, is_downloadable, parse_options, run_export
from tests.api.world import World, isolated_world


@pytest.fixture
def world(study: Any, owner: Any, lead: Any, annotator_a: Any, annotator_b: Any, outsider: Any,
          settings: Any, tmp_path: Path) -> World:  # fmt: skip
    return isolated_world(settings, tmp_path, study, owner, lead, annotator_a, annotator_b, outsider)


def files_under(*roots: Path) -> set[Path]:
    return {path for root in roots for path in root.rglob("*") if path.is_file()}


@pytest.mark.django_db(transaction=True)  # the child reads what the test committed (PostgreSQL)
def test_an_xlsx_export_killed_half_way_leaves_no_temporary_file_once_resent(
    world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    system_tmp = tmp_path / "system-tmp"  # where tempfile (and openpyxl) would put its files
    system_tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(system_tmp))
    exports = tmp_path / "exports"
    job = create_export(world.study, parse_options(world.study, format="xlsx"), user=world.lead)

    pid = os.fork()
    if pid == 0:  # the worker
        try:
            if connection.vendor == "postgresql":
                keep = [c.connection for c in connections.all()]  # never closed: the parent's sessions
                for c in connections.all():
                    c.connection = None
            assert keep if connection.vendor == "postgresql" else True
            claimed = claim_job(ExportJob, job.pk, task_id="doomed")
            assert claimed is not None

            def killed(*args: Any, **kwargs: Any) -> None:
                os.kill(os.getpid(), signal.SIGKILL)  # the rows are in the sheet stream, nothing saved

            openpyxl.Workbook.save = killed  # type: ignore[method-assign]
            run_export(claimed)
        except BaseException as exc:  # shown in the test's output: the child must die by the kill
            os.write(2, f"worker failed before its kill: {exc!r}\n".encode())
        finally:
            os._exit(3)  # never reached when the kill happened
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, status
    assert files_under(exports, system_tmp), "the kill should leave the half-written export's files"

    # What the database shows of the dead worker, after its timeout: running, no heartbeat for long.
    long_ago = timezone.now() - timedelta(minutes=11)
    ExportJob.objects.filter(pk=job.pk).update(status=JobStatus.RUNNING, heartbeat_at=long_ago)
    call_command("requeue_jobs")  # tests run tasks eagerly: the resent job runs here

    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED and is_downloadable(job)
    assert files_under(exports, system_tmp) == {exports / job.file_path}
