"""The Export page: lead only, preview, counts, start, progress and download."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from apps.accounts.models import Study, User
from apps.core.models import JobStatus
from apps.export import services
from apps.export.models import ExportJob
from apps.export.rows import ExportOptions

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}


def url(name: str, *args: object) -> str:
    return reverse(f"export:{name}", args=["ddp", *args])


@pytest.fixture
def finished(labelled: Study) -> ExportJob:
    job = services.export_in_foreground(labelled, ExportOptions(format="csv"))
    job.refresh_from_db()
    return job


def pages(job: ExportJob) -> list[str]:
    return [
        url("export"),
        url("preview"),
        url("counts"),
        url("job", job.pk),
        url("download", job.pk),
        url("stream"),
    ]


def test_an_annotator_is_refused_every_export_page(
    client: Client, annotator_a: User, finished: ExportJob
) -> None:
    client.force_login(annotator_a)
    for page in pages(finished):
        assert client.get(page).status_code == 403, page
    assert client.post(url("start"), {"format": "csv"}).status_code == 403


def test_an_outsider_cannot_learn_the_study_exists(
    client: Client, outsider: User, finished: ExportJob
) -> None:
    client.force_login(outsider)
    for page in pages(finished):
        assert client.get(page).status_code == 404, page
    assert client.post(url("start"), {"format": "csv"}).status_code == 404


def test_anonymous_visitors_are_sent_to_log_in(client: Client, finished: ExportJob) -> None:
    response = client.get(url("export"))
    assert response.status_code == 302 and "login" in response["Location"]


def test_a_lead_sees_options_preview_and_jobs(lead_client: Client, finished: ExportJob) -> None:
    response = lead_client.get(url("export"))
    assert response.status_code == 200
    page = response.content.decode()
    assert 'id="export-form"' in page and "Start export" in page
    assert "Segfault in allreduce" in page  # the preview's first row
    assert f"#{finished.pk}" in page and url("download", finished.pk) in page
    assert url("counts") in page


def test_the_preview_partial_follows_the_options(lead_client: Client, labelled: Study) -> None:
    response = lead_client.get(url("preview"), {"format": "csv", "provenance": "imported"}, **HTMX)
    assert response.status_code == 200
    text = response.content.decode()
    assert "<html" not in text
    assert "Two problems" in text and "Segfault in allreduce" not in text
    assert "stream.csv?format=csv&amp;provenance=imported" in text


def test_the_preview_lists_a_bad_option_with_the_valid_ones(lead_client: Client, labelled: Study) -> None:
    response = lead_client.get(url("preview"), {"format": "zip", "round": "1"}, **HTMX)
    assert "holds the whole study" in response.content.decode()


def test_the_counts_partial_shows_the_taxonomy_table(lead_client: Client, labelled: Study) -> None:
    response = lead_client.get(url("counts"), **HTMX)
    text = response.content.decode()
    assert "<html" not in text
    assert "Symptom" in text and "Out of memory" in text and "Stack Overflow" in text
    full = lead_client.get(url("counts"))
    assert "<html" in full.content.decode()


def test_starting_an_export_queues_a_job_and_returns_the_polling_row(
    lead_client: Client, labelled: Study, lead: User, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=False):
        response = lead_client.post(url("start"), {"format": "xlsx", "raw": "on"}, **HTMX)
    assert response.status_code == 200
    job = ExportJob.objects.get(study=labelled)
    assert (job.format, job.options["raw"], job.created_by) == ("xlsx", True, lead)
    text = response.content.decode()
    assert f'hx-get="{url("job", job.pk)}"' in text and 'hx-trigger="every 1s"' in text
    assert "export-started" in response["HX-Trigger"]


def test_starting_without_htmx_runs_and_redirects_to_the_job(
    lead_client: Client, labelled: Study, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        response = lead_client.post(url("start"), {"format": "json"})
    job = ExportJob.objects.get(study=labelled)
    assert response.status_code == 302 and response["Location"] == url("job", job.pk)
    assert job.status == JobStatus.SUCCEEDED
    page = lead_client.get(url("job", job.pk)).content.decode()
    assert url("download", job.pk) in page and job.sha256 in page


def test_a_bad_option_is_refused_with_the_valid_ones(lead_client: Client, labelled: Study) -> None:
    response = lead_client.post(url("start"), {"format": "csv", "round": "9"}, **HTMX)
    assert response.status_code == 422
    text = response.content.decode()
    assert "unknown round 9; valid rounds: 1, 2" in text
    response = lead_client.post(url("start"), {"format": "zip", "level": "1"})
    assert response.status_code == 400
    assert "holds the whole study" in response.content.decode()
    assert not ExportJob.objects.exists()


def test_a_polled_row_stops_polling_once_the_job_is_done(lead_client: Client, finished: ExportJob) -> None:
    text = lead_client.get(url("job", finished.pk), **HTMX).content.decode()
    assert "every 1s" not in text and "Download" in text


def test_the_download_is_an_attachment_with_its_checksum(lead_client: Client, finished: ExportJob) -> None:
    response = lead_client.get(url("download", finished.pk))
    assert response.status_code == 200
    assert response["Content-Disposition"] == f'attachment; filename="ddp-export-{finished.pk}.csv"'
    assert response["X-Content-SHA256"] == finished.sha256
    assert response["Content-Type"].startswith("text/csv")
    body = b"".join(response.streaming_content)  # type: ignore[attr-defined]
    assert body.startswith(b"url,title,source,round,finding,type,symptom,fix")


def test_an_unfinished_export_has_nothing_to_download(lead_client: Client, labelled: Study) -> None:
    job = services.create_export(labelled, ExportOptions(format="csv"))
    assert lead_client.get(url("download", job.pk)).status_code == 404


def test_a_job_of_another_study_is_not_found(lead_client: Client, finished: ExportJob, owner: User) -> None:
    from tests.factories import MembershipFactory, StudyFactory

    other = StudyFactory(slug="other")
    MembershipFactory(study=other, user=owner, role="owner")
    foreign = services.export_in_foreground(other, ExportOptions(format="csv"))
    assert lead_client.get(url("download", foreign.pk)).status_code == 404
    assert lead_client.get(url("job", foreign.pk)).status_code == 404


def test_a_small_study_streams_its_csv_directly(lead_client: Client, labelled: Study) -> None:
    response = lead_client.get(url("stream"), {"format": "csv", "raw": "on"})
    assert response.status_code == 200
    assert response["Content-Disposition"] == 'attachment; filename="ddp-export.csv"'
    text = b"".join(response.streaming_content).decode()  # type: ignore[attr-defined]
    assert text.splitlines()[0].startswith("url,title,source,round,annotator,finding")
    assert len(text.splitlines()) == 10


def test_a_large_study_is_sent_back_to_start_a_job(
    lead_client: Client, labelled: Study, settings: Any
) -> None:
    settings.EXPORT_STREAM_MAX_ITEMS = 1
    response = lead_client.get(url("stream"), {"format": "csv"}, follow=True)
    assert "too many to stream" in response.content.decode()
