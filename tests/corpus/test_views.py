"""Corpus pages: permissions, the import flow from the browser, job progress partials, the item list."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from apps.accounts.models import Study, User
from apps.core.models import JobStatus
from apps.corpus.models import ImportJob, ImportKind, Item, Relevance
from apps.corpus.services import upsert_records
from tests.conftest import login
from tests.factories import ItemFactory

from .conftest import make_record

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}


def url(name: str, *args: Any) -> str:
    return reverse(f"corpus:{name}", args=["ddp", *args])


def new_job(study: Study, **fields: Any) -> ImportJob:
    return ImportJob.objects.create(study=study, kind=ImportKind.FILE, params={"filename": "x.csv"}, **fields)


# --- permissions -------------------------------------------------------------------------------------


def test_the_lead_sees_the_import_page_with_its_sources(client: Client, lead: User) -> None:
    response = login(client, lead).get(url("import"))

    assert response.status_code == 200
    text = response.content.decode()
    assert "Start import" in text and "GitHub REST API" in text and "tosem23-stackoverflow" in text
    assert 'enctype="multipart/form-data"' in text


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("github", ['name="repo"', 'data-fill="{&quot;label&quot;: &quot;pytorch&quot;', "GITHUB_TOKEN"]),
        ("stackexchange", ['name="tagged"', "Use the TOSEM 2023 selection", "STACKEXCHANGE_KEY"]),
        ("so_dump", ['name="file"', 'name="accepted_only"', "Use the TOSEM 2023 selection"]),
        ("file", ['name="file"', 'name="format"', "nothing is written"]),
    ],
)
def test_each_source_has_its_form(client: Client, lead: User, source: str, expected: list[str]) -> None:
    text = login(client, lead).get(url("import"), {"source": source}).content.decode()

    assert f'<input type="hidden" name="kind" value="{source}">' in text
    for fragment in expected:
        assert fragment in text
    assert 'name="token"' not in text and 'name="api_url"' not in text


@pytest.mark.parametrize("name", ["import", "import-job", "import-restart"])
def test_an_annotator_gets_403_on_import_pages(
    client: Client, study: Study, annotator_a: User, name: str
) -> None:
    job = new_job(study)
    args = [] if name == "import" else [job.pk]
    login(client, annotator_a)

    response = client.post(url(name, *args)) if name == "import-restart" else client.get(url(name, *args))

    assert response.status_code == 403


@pytest.mark.parametrize("name", ["item-list", "import", "item-detail", "import-job"])
def test_an_outsider_gets_404_for_every_corpus_page(
    client: Client, study: Study, outsider: User, name: str
) -> None:
    item = ItemFactory(study=study)
    job = new_job(study)
    args = {"item-detail": [item.pk], "import-job": [job.pk]}.get(name, [])

    assert login(client, outsider).get(url(name, *args)).status_code == 404


def test_an_item_of_another_study_is_404_even_for_a_member(
    client: Client, study: Study, annotator_a: User, other_study: Study
) -> None:
    foreign = ItemFactory(study=other_study)
    assert login(client, annotator_a).get(url("item-detail", foreign.pk)).status_code == 404


def test_an_annotator_may_read_items(client: Client, study: Study, annotator_a: User) -> None:
    item = ItemFactory(study=study, title="Allreduce hangs")
    response = login(client, annotator_a).get(url("item-list"))
    assert response.status_code == 200 and "Allreduce hangs" in response.content.decode()
    assert "Import items" not in response.content.decode()
    assert login(client, annotator_a).get(url("item-detail", item.pk)).status_code == 200


# --- starting an import ------------------------------------------------------------------------------


def test_uploading_a_file_starts_an_import_and_shows_its_job(
    client: Client, study: Study, lead: User, upload_root: Path, django_capture_on_commit_callbacks: Any
) -> None:
    file = SimpleUploadedFile(
        "items.csv", b"url,title\nhttps://example.org/a,First\nhttps://example.org/b,Second\n"
    )

    with django_capture_on_commit_callbacks(execute=True):
        response = login(client, lead).post(url("import"), {"kind": "file", "file": file, "format": ""})

    job = ImportJob.objects.get()
    assert response.status_code == 302 and response["Location"] == url("import-job", job.pk)
    assert (job.status, job.created, job.created_by) == (JobStatus.SUCCEEDED, 2, lead)
    assert Path(job.upload).parent == upload_root / "ddp"
    assert job.params == {"format": "", "filename": "items.csv", "preset": "", "keywords": []}
    page = client.get(response["Location"]).content.decode()
    assert "2 created" in page and "succeeded" in page


@pytest.mark.parametrize(
    ("data", "field_error"),
    [
        ({"kind": "file", "file": SimpleUploadedFile("tool.exe", b"MZ")}, ".exe"),
        ({"kind": "so_dump", "file": SimpleUploadedFile("Posts.csv", b"x")}, ".xml"),
        ({"kind": "github", "mode": "repo", "repo": "not a repo"}, "owner/name"),
        ({"kind": "github", "mode": "urls", "urls": ""}, "at least one issue URL"),
        ({"kind": "stackexchange", "tagged": "pytorch", "site": "stackoverflow", "match": "any",
          "preset": "tosem23-stackoverflow", "keywords": "gpu"}, "not both"),
    ],
)  # fmt: skip
def test_a_bad_import_form_is_shown_again_with_its_error_and_starts_nothing(
    client: Client, lead: User, upload_root: Path, data: dict[str, Any], field_error: str
) -> None:
    response = login(client, lead).post(url("import"), data)

    assert response.status_code == 400
    assert field_error in response.content.decode()
    assert not ImportJob.objects.exists()


def test_an_upload_over_the_size_limit_is_refused(
    client: Client, lead: User, upload_root: Path, settings: Any
) -> None:
    settings.MAX_IMPORT_UPLOAD_BYTES = 1024 * 1024
    big = SimpleUploadedFile("items.csv", b"url\n" + b"https://example.org/x\n" * 60_000)

    response = login(client, lead).post(url("import"), {"kind": "file", "file": big})

    assert response.status_code == 400 and "larger than the limit of 1 MB" in response.content.decode()
    assert not ImportJob.objects.exists()


def test_a_github_import_from_the_browser_records_options_only(
    client: Client, study: Study, lead: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    response = login(client, lead).post(
        url("import"),
        {
            "kind": "github",
            "mode": "repo",
            "repo": "pytorch/pytorch",
            "state": "closed",
            "labels": "module: ddp\n",
            "exclude_labels": "enhancement\nfeature",
            "preset": "",
            "keywords": "nccl",
            "limit": "50",
        },
    )

    job = ImportJob.objects.get()
    assert response.status_code == 302
    assert job.params["repo"] == "pytorch/pytorch" and job.params["labels"] == ["module: ddp"]
    assert job.params["exclude_labels"] == ["enhancement", "feature"] and job.params["limit"] == 50
    assert job.status == JobStatus.QUEUED  # queued for a worker once the request's transaction commits


# --- job page and progress partial ---------------------------------------------------------------------


def test_a_running_job_partial_polls_itself_every_second(client: Client, study: Study, lead: User) -> None:
    job = new_job(
        study, status=JobStatus.RUNNING, progress_done=250, progress_total=1000, heartbeat_at=timezone.now()
    )

    response = login(client, lead).get(url("import-job", job.pk), **HTMX)

    text = response.content.decode()
    assert response.status_code == 200
    assert text.lstrip().startswith('<section class="card job-progress" id="job-progress"')
    assert "<html" not in text
    assert 'hx-trigger="every 1s"' in text and 'class="w-25"' in text
    assert "250 of 1000 done" in text


def test_a_finished_job_partial_stops_polling_and_shows_counts_and_errors(
    client: Client, study: Study, lead: User
) -> None:
    now = timezone.now()
    job = new_job(
        study,
        status=JobStatus.SUCCEEDED,
        started_at=now - timedelta(seconds=12),
        finished_at=now,
        created=5,
        updated=2,
        failed=1,
        filtered=3,
        filtered_by={"keywords": 3},
        errors=[
            {
                "where": "https://github.com/a/b/issues/9",
                "field": None,
                "value": "404",
                "message": "Not Found",
            }
        ],
    )

    text = login(client, lead).get(url("import-job", job.pk), **HTMX).content.decode()

    assert "hx-trigger" not in text
    assert "keywords: 3" in text and "Not Found" in text and "12.0 s" in text
    assert 'href="https://github.com/a/b/issues/9" rel="noopener nofollow noreferrer"' in text


def test_the_job_page_without_htmx_is_a_whole_page(client: Client, study: Study, lead: User) -> None:
    job = new_job(study)
    text = login(client, lead).get(url("import-job", job.pk)).content.decode()
    assert "<html" in text and 'id="job-progress"' in text and "x.csv" in text


def test_a_stalled_job_is_shown_as_such_and_can_be_run_again(
    client: Client, study: Study, lead: User, tmp_path: Path, django_capture_on_commit_callbacks: Any
) -> None:
    path = tmp_path / "a.txt"
    path.write_text("https://example.org/1\n", encoding="utf-8")
    long_ago = timezone.now() - timedelta(hours=1)
    job = new_job(
        study, status=JobStatus.RUNNING, started_at=long_ago, heartbeat_at=long_ago, upload=str(path)
    )
    login(client, lead)

    text = client.get(url("import-job", job.pk), **HTMX).content.decode()
    assert "stalled" in text and "hx-trigger" not in text and "Run this import again" in text

    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(url("import-restart", job.pk))

    rerun = ImportJob.objects.exclude(pk=job.pk).get()
    assert response.status_code == 302 and response["Location"] == url("import-job", rerun.pk)
    assert rerun.status == JobStatus.SUCCEEDED and rerun.created == 1
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED


def test_a_succeeded_job_cannot_be_restarted(client: Client, study: Study, lead: User) -> None:
    job = new_job(study, status=JobStatus.SUCCEEDED)
    assert login(client, lead).post(url("import-restart", job.pk)).status_code == 409


def test_the_history_partial_lists_jobs_and_polls_while_one_runs(
    client: Client, study: Study, lead: User
) -> None:
    new_job(study, status=JobStatus.SUCCEEDED, created=4)
    new_job(study, status=JobStatus.RUNNING, heartbeat_at=timezone.now())

    response = login(client, lead).get(url("import"), HTTP_HX_TARGET="import-history", **HTMX)

    text = response.content.decode()
    assert text.lstrip().startswith('<section class="card" id="import-history"')
    assert 'hx-trigger="every 2s"' in text and "running" in text and "succeeded" in text


# --- item list and item -------------------------------------------------------------------------------


def list_queries(client: Client) -> int:
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url("item-list"))
    assert response.status_code == 200
    return len(queries)


def test_the_item_list_costs_the_same_queries_for_3_or_120_items(
    client: Client, study: Study, lead: User
) -> None:
    login(client, lead)
    upsert_records(study, [make_record(n) for n in range(1, 4)])
    few = list_queries(client)
    upsert_records(study, [make_record(n) for n in range(4, 121)])

    assert list_queries(client) == few
    assert few <= 6  # session, user, membership, page, count, saved views


def shown_ids(response: Any) -> list[int]:
    return [item.id for item, _place in response.context["rows"]]


def test_the_item_list_pages_by_keyset_forward_and_back_to_the_first(
    client: Client, study: Study, lead: User
) -> None:
    upsert_records(study, [make_record(n) for n in range(1, 121)])
    ids = list(Item.objects.order_by("id").values_list("id", flat=True))
    login(client, lead)

    first = client.get(url("item-list"))
    second = client.get(url("item-list"), {"after": first.context["next_cursor"]})
    third = client.get(url("item-list"), {"after": second.context["next_cursor"]})

    assert shown_ids(first) == ids[:50] and shown_ids(second) == ids[50:100] and shown_ids(third) == ids[100:]
    assert third.context["next_cursor"] is None
    assert "First page" in third.content.decode() and "First page" not in first.content.decode()


def test_the_item_list_filters_by_source_screening_search_and_rounds(
    client: Client, study: Study, lead: User
) -> None:
    a = ItemFactory(study=study, title="NCCL timeout", source="github")
    b = ItemFactory(study=study, title="Horovod NCCL", source="stackoverflow", relevance=Relevance.RELEVANT)
    c = ItemFactory(study=study, title="Pandas", source="stackoverflow")
    Item.objects.filter(pk=b.pk).update(round_number=1, progress="waiting")
    login(client, lead)

    def shown(**params: str) -> set[int]:
        return set(shown_ids(client.get(url("item-list"), params)))

    assert shown(q="nccl") == {a.id, b.id}
    assert shown(source="stackoverflow") == {b.id, c.id}
    assert shown(screening="relevant") == {b.id}
    assert shown(round="0") == {a.id, c.id}
    assert shown(progress="waiting") == {b.id}
    assert shown(q="nccl", source="stackoverflow", round="0") == set()
    assert shown(source="not-a-source") == {a.id, b.id, c.id}  # an invalid filter is ignored


def test_the_item_list_answers_htmx_filtering_with_its_results_partial(
    client: Client, study: Study, lead: User
) -> None:
    ItemFactory(study=study, title="NCCL timeout")
    response = login(client, lead).get(url("item-list"), {"q": "nccl"}, HTTP_HX_TARGET="item-results", **HTMX)

    text = response.content.decode()
    assert text.lstrip().startswith('<section class="card" id="item-results"')
    assert "NCCL timeout" in text and "1 item match" in text


def test_an_item_not_rendered_yet_is_rendered_when_opened_and_shown_safely(
    client: Client, study: Study, annotator_a: User
) -> None:
    hostile = "Hang in `dist.init`\n\n<script>alert(1)</script>\n\n[x](javascript:alert(1))"
    upsert_records(study, [make_record(1, body=hostile, comments=2)], render=False)
    item = Item.objects.get()
    assert item.rendered_at is None

    text = login(client, annotator_a).get(url("item-detail", item.pk)).content.decode()

    assert "<code>dist.init</code>" in text
    assert "<script>alert" not in text and 'href="javascript' not in text
    assert "Comment 2 on 1" in text
    item.refresh_from_db()
    assert item.rendered_at is not None


def test_a_job_nobody_picked_up_says_a_worker_is_needed(client: Client, study: Study, lead: User) -> None:
    job = new_job(study, created_at=timezone.now() - timedelta(minutes=2))
    fresh = new_job(study)
    login(client, lead)

    assert (
        "No worker has picked this import up yet"
        in client.get(url("import-job", job.pk), **HTMX).content.decode()
    )
    assert "No worker" not in client.get(url("import-job", fresh.pk), **HTMX).content.decode()


def test_item_list_pages_skip_the_items_of_other_studies(client: Client, study: Study, lead: User) -> None:
    other = Study.objects.create(slug="other", name="Other study")
    mine, theirs = [], []
    for n in range(1, 61):  # interleaved ids: every page must still hold this study's items only
        mine.append(ItemFactory(study=study, url=f"https://example.org/mine/{n}").id)
        theirs.append(ItemFactory(study=other, url=f"https://example.org/theirs/{n}").id)
    login(client, lead)

    first = client.get(url("item-list"))
    second = client.get(url("item-list"), {"after": first.context["next_cursor"]})

    assert shown_ids(first) == mine[:50]
    assert shown_ids(second) == mine[50:]
    assert first.context["total"] == 60 and not first.context["more"]


def test_item_list_counts_matches_up_to_a_cap_and_then_says_more(
    client: Client, study: Study, lead: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    from apps.corpus import grid

    monkeypatch.setattr(grid, "COUNT_CAP", 5)
    for n in range(7):
        ItemFactory(study=study, title=f"NCCL hang {n}")
    ItemFactory(study=study, title="Pandas")
    login(client, lead)

    everything = client.get(url("item-list"))
    few = client.get(url("item-list"), {"q": "pandas"})

    assert (everything.context["total"], everything.context["more"]) == (5, True)
    assert "5+ items" in everything.content.decode()
    assert (few.context["total"], few.context["more"]) == (1, False)
    assert "1 item matches" in few.content.decode()
