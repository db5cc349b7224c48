"""The upsert, the render pass and import jobs, on the real database."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.db import IntegrityError, connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from apps.accounts.models import Study, User
from apps.annotation.models import Annotation, Assignment, Finding, LabelValue, Round
from apps.core.models import JobStatus
from apps.corpus import services
from apps.corpus.models import ImportJob, ImportKind, Item, ItemComment, Relevance
from apps.corpus.params import FileParams, GitHubRepoParams, params_from_json
from apps.corpus.parsing import iter_records
from apps.corpus.records import ItemRecord
from apps.corpus.screening import ScreeningRules
from apps.corpus.services import content_hash, render_pending, upsert_records
from apps.taxonomy.models import Category, Codebook, Dimension

from .conftest import RecordMaker, make_record

pytestmark = pytest.mark.django_db


def label_item(item: Item, annotator: User) -> LabelValue:
    """A submitted label on `item`, built through the models as the workbench would store it."""
    codebook = Codebook.objects.create(study=item.study, name="Faults")
    dimension = Dimension.objects.create(codebook=codebook, key="type", name="Issue type")
    category = Category.objects.create(dimension=dimension, key="fault", name="Fault")
    round_ = Round.objects.create(study=item.study, number=1)
    assignment = Assignment.objects.create(study=item.study, round=round_, item=item, annotator=annotator)
    annotation = Annotation.objects.create(assignment=assignment, memo="NCCL hang")
    finding = Finding.objects.create(annotation=annotation, number=1)
    return LabelValue.objects.create(finding=finding, dimension=dimension, category=category)


def make_job(study: Study, kind: str = ImportKind.FILE, **params: Any) -> ImportJob:
    return services.create_import_job(study, params_from_json(kind, params))


# --- create / update / unchanged ----------------------------------------------------------------------


def test_first_import_creates_every_item_with_its_comments_rendered(
    study: Study, record: RecordMaker
) -> None:
    counts = upsert_records(study, [record(n, comments=2) for n in range(1, 6)])

    assert (counts.created, counts.updated, counts.unchanged) == (5, 0, 0)
    assert Item.objects.in_study(study).count() == 5
    item = Item.objects.get(study=study, url="https://github.com/example/repo/issues/3")
    assert item.external_id == "example/repo#3"
    assert item.tags == ["module: ddp"]
    assert item.content_hash == content_hash(record(3, comments=2))
    assert item.rendered_at is not None and 'class="highlight"' in item.body_html
    assert [(c.position, c.body, c.body_html) for c in item.comments.all()] == [
        (1, "Comment 1 on 3", "<p>Comment 1 on 3</p>\n"),
        (2, "Comment 2 on 3", "<p>Comment 2 on 3</p>\n"),
    ]


def test_an_import_told_not_to_render_leaves_the_items_for_the_render_pass(
    study: Study, record: RecordMaker
) -> None:
    upsert_records(study, [record(1, comments=1)], render=False)

    item = Item.objects.get(url=record(1).url)
    assert item.rendered_at is None and item.body_html == ""
    assert item.comments.get().body_html == ""


def test_importing_the_same_records_again_writes_nothing(study: Study, record: RecordMaker) -> None:
    upsert_records(study, [record(n) for n in range(1, 4)])
    before = {i.url: (i.pk, i.updated_at) for i in Item.objects.in_study(study)}
    comment_ids = sorted(ItemComment.objects.values_list("id", flat=True))

    counts = upsert_records(study, [record(n) for n in range(1, 4)])

    assert (counts.created, counts.updated, counts.unchanged) == (0, 0, 3)
    assert {i.url: (i.pk, i.updated_at) for i in Item.objects.in_study(study)} == before
    assert sorted(ItemComment.objects.values_list("id", flat=True)) == comment_ids


def test_a_changed_record_updates_its_item_and_replaces_its_comments(
    study: Study, record: RecordMaker
) -> None:
    upsert_records(study, [record(1, comments=3), record(2)])
    item = Item.objects.get(url=record(1).url)

    counts = upsert_records(study, [record(1, body="Edited body", comments=1), record(2)])

    assert (counts.created, counts.updated, counts.unchanged) == (0, 1, 1)
    item.refresh_from_db()
    assert item.body == "Edited body"
    assert item.body_html == "<p>Edited body</p>\n"
    assert list(item.comments.values_list("position", "body")) == [(1, "Comment 1 on 1")]


def test_reimport_keeps_labels_and_screening_decisions(
    study: Study, record: RecordMaker, annotator_a: User, lead: User
) -> None:
    upsert_records(study, [record(1)])
    item = Item.objects.get(url=record(1).url)
    label = label_item(item, annotator_a)
    Item.objects.filter(pk=item.pk).update(relevance=Relevance.RELEVANT, screened_by=lead)

    counts = upsert_records(study, [record(1, title="Retitled upstream", comments=0)])

    assert counts.updated == 1
    item.refresh_from_db()
    assert item.title == "Retitled upstream"
    assert (item.relevance, item.screened_by) == (Relevance.RELEVANT, lead)
    assert LabelValue.objects.filter(pk=label.pk, finding__annotation__assignment__item=item).exists()
    assert Item.objects.in_study(study).count() == 1


def test_records_with_one_url_never_make_two_items(study: Study, record: RecordMaker) -> None:
    first = record(7, body="first")
    second = record(7, body="second")

    counts = upsert_records(study, [first, record(8), second])
    upsert_records(study, [record(7, body="third")])

    assert counts.created == 2
    assert Item.objects.filter(study=study, url=first.url).count() == 1
    assert Item.objects.get(study=study, url=first.url).body == "third"


def test_the_same_url_in_two_studies_is_two_items(
    study: Study, other_study: Study, record: RecordMaker
) -> None:
    upsert_records(study, [record(1)])
    counts = upsert_records(other_study, [record(1)])

    assert counts.created == 1
    assert Item.objects.filter(url=record(1).url).count() == 2


def test_a_bare_url_creates_an_item_but_never_erases_content(study: Study, record: RecordMaker) -> None:
    bare = ItemRecord(url=record(1).url, source="github", external_id="example/repo#1")
    upsert_records(study, [record(1)])

    counts = upsert_records(study, [bare, ItemRecord(url=record(2).url, source="github", external_id="x#2")])

    assert (counts.created, counts.unchanged) == (1, 1)
    assert Item.objects.get(url=record(1).url).body.startswith("Training hangs")


def test_comments_are_kept_when_the_import_did_not_fetch_them(study: Study, record: RecordMaker) -> None:
    upsert_records(study, [record(1, comments=2)])

    counts = upsert_records(study, [record(1, body="new text", comments=0)], replace_comments=False)

    assert counts.updated == 1
    assert ItemComment.objects.filter(item__url=record(1).url).count() == 2


def test_screening_rules_filter_records_before_they_are_written(study: Study, record: RecordMaker) -> None:
    job = make_job(study)
    rules = ScreeningRules.simple(keywords=["NCCL"], labels_exclude=["wontfix"])
    records = [
        record(1),
        record(2, title="Docs typo", body="Fix the README"),
        record(3, tags=["wontfix"]),
        record(4, title="Question", body="nccl hangs"),
    ]

    counts = upsert_records(study, records, job, rules=rules)

    assert (counts.created, counts.filtered) == (2, 2)
    assert dict(counts.filtered_by) == {"keywords": 1, "labels_exclude": 1}
    assert (job.created, job.filtered, job.filtered_by) == (2, 2, {"keywords": 1, "labels_exclude": 1})
    assert set(Item.objects.values_list("external_id", flat=True)) == {"example/repo#1", "example/repo#4"}


def test_a_url_too_long_for_the_database_fails_alone(study: Study, record: RecordMaker) -> None:
    job = make_job(study)
    long = ItemRecord(url="https://example.org/" + "a" * 600, source="file", external_id="x")

    counts = upsert_records(study, [record(1), long], job)

    assert (counts.created, counts.failed, job.failed) == (1, 1, 1)
    assert job.errors[0]["field"] == "url"
    assert "longer than 500" in job.errors[0]["message"]


def test_the_upsert_uses_a_few_queries_per_batch_not_one_per_row(study: Study) -> None:
    records = [make_record(n, comments=2) for n in range(1, 1201)]

    with CaptureQueriesContext(connection) as queries:
        upsert_records(study, records, batch_size=400)

    # Per batch of 400: savepoint handling, one SELECT of stored hashes, the item INSERTs (SQLite splits
    # them by its parameter limit) and the comment INSERTs. Never one statement per row.
    assert len(queries) < 1200 / 10
    with CaptureQueriesContext(connection) as again:
        counts = upsert_records(study, records, batch_size=400)
    assert counts.unchanged == 1200
    # Per batch (250, 400, 400, 150: the first one smaller): transaction bookkeeping, the study's import
    # lock on PostgreSQL, one SELECT, and the SELECT that decides what to render ahead; no write. Once:
    # whether the study had items.
    assert len(again) <= 1 + 4 * (5 if connection.vendor == "postgresql" else 4)


# --- crash and rerun ---------------------------------------------------------------------------------


class Crash(Exception):
    pass


def crash_after(records: list[ItemRecord], count: int) -> Iterator[ItemRecord]:
    """The records an importer yields, until the process dies at record `count`."""
    for index, rec in enumerate(records):
        if index == count:
            raise Crash(f"killed at record {index}")
        yield rec


def test_an_import_killed_half_way_and_run_again_ends_with_exactly_the_right_items(
    study: Study, annotator_a: User
) -> None:
    records = [make_record(n, comments=n % 3) for n in range(1, 2501)]
    with pytest.raises(Crash):
        upsert_records(study, crash_after(records, 1700), batch_size=500)
    # Batches of 250, 500, 500, 500...: three committed (to record 1,250); the fourth rolled back.
    assert Item.objects.in_study(study).count() == 1250
    label = label_item(Item.objects.get(url=records[0].url), annotator_a)

    counts = upsert_records(study, records, batch_size=500)

    assert (counts.created, counts.unchanged, counts.updated) == (1250, 1250, 0)
    stored = dict(Item.objects.in_study(study).values_list("url", "content_hash"))
    assert stored == {rec.url: content_hash(rec) for rec in records}
    assert ItemComment.objects.filter(item__study=study).count() == sum(n % 3 for n in range(1, 2501))
    assert LabelValue.objects.filter(pk=label.pk).exists()


def test_a_job_killed_half_way_is_stalled_and_its_restart_completes_it(
    study: Study, tmp_path: Path, settings: Any, django_capture_on_commit_callbacks: Any
) -> None:
    path = tmp_path / "items.jsonl"
    lines = [json.dumps({"url": f"https://example.org/post/{n}", "title": f"Post {n}"}) for n in range(1, 31)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    job = services.create_import_job(study, FileParams(format="jsonl"), upload=path)
    # What a SIGKILL leaves behind: a running job with an old heartbeat and part of the items written.
    upsert_records(study, iter_records(path, "jsonl"), batch_size=10, job=None)
    Item.objects.filter(url__endswith="/post/30").delete()
    ImportJob.objects.filter(pk=job.pk).update(
        status=JobStatus.RUNNING, started_at="2020-01-01T00:00Z", heartbeat_at="2020-01-01T00:00Z"
    )
    job.refresh_from_db()

    with django_capture_on_commit_callbacks(execute=True):
        rerun = services.restart_import(job)

    job.refresh_from_db()
    rerun.refresh_from_db()
    assert job.status == JobStatus.FAILED and "Stalled" in job.error
    assert rerun.status == JobStatus.SUCCEEDED
    assert (rerun.created, rerun.unchanged) == (1, 29)
    assert Item.objects.in_study(study).count() == 30


# --- the render pass ---------------------------------------------------------------------------------


def test_render_pending_renders_bodies_and_comments_safely(study: Study, record: RecordMaker) -> None:
    hostile = "Look <script>alert(1)</script> <a href='javascript:alert(2)' onclick='x()'>here</a>"
    upsert_records(study, [record(1, body=hostile), record(2)], render=False)
    ItemComment.objects.filter(item__url=record(2).url).update(body="**bold** <img src=x onerror=alert(3)>")

    assert render_pending(study) == 2

    first = Item.objects.get(url=record(1).url)
    assert first.rendered_at is not None
    assert "<script" not in first.body_html and "javascript:" not in first.body_html
    assert "onclick" not in first.body_html
    second = Item.objects.get(url=record(2).url)
    assert 'class="highlight"' in second.body_html  # the fenced Python block is highlighted
    comment = second.comments.get()
    assert "<strong>bold</strong>" in comment.body_html and "onerror" not in comment.body_html
    assert Item.objects.unrendered().count() == 0
    assert render_pending(study) == 0


def test_an_item_changed_while_being_rendered_is_left_for_the_next_pass(
    study: Study, record: RecordMaker
) -> None:
    upsert_records(study, [record(1)], render=False)
    stale = Item.objects.get(url=record(1).url)
    upsert_records(study, [record(1, body="The new text")], render=False)

    services.ensure_rendered(stale)

    fresh = Item.objects.get(url=record(1).url)
    assert fresh.rendered_at is None and fresh.body_html == ""
    render_pending(study)
    fresh.refresh_from_db()
    assert "The new text" in fresh.body_html


# --- import jobs ---------------------------------------------------------------------------------------


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_a_file_import_job_records_counts_duration_and_renders(study: Study, tmp_path: Path) -> None:
    path = write(
        tmp_path / "items.csv",
        "url,title,body,tags,venue\n"
        "https://github.com/a/b/issues/1,Hang,`code`,bug;ddp,ICSE\n"
        "https://stackoverflow.com/questions/42/x,Q,<p>hi</p>,pytorch,FSE\n",
    )
    job = make_job(study)
    job.upload = str(path)

    services.run_import(job)

    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED
    assert (job.created, job.updated, job.unchanged, job.failed) == (2, 0, 0, 0)
    assert job.duration_seconds is not None and job.finished_at is not None
    assert job.message.startswith("2 created")
    item = Item.objects.get(url="https://github.com/a/b/issues/1")
    assert item.metadata == {"venue": "ICSE"}  # an unknown column is kept as metadata
    assert "<code>code</code>" in item.body_html


def test_a_malformed_row_fails_the_whole_file_and_writes_nothing(study: Study, tmp_path: Path) -> None:
    rows = [f"https://github.com/a/b/issues/{n},Title {n},2021-01-0{1 + n % 9}" for n in range(1, 7)]
    rows[4] = "https://github.com/a/b/issues/5,Title 5,last tuesday"
    path = write(tmp_path / "items.csv", "url,title,created_at\n" + "\n".join(rows) + "\n")
    job = make_job(study)
    job.upload = str(path)

    services.run_import(job)

    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert "nothing was imported" in job.error
    assert job.errors == [
        {
            "where": "line 6",
            "field": "created_at",
            "value": "last tuesday",
            "message": job.errors[0]["message"],
        }
    ]
    assert Item.objects.count() == 0


def test_screening_counts_are_stored_on_the_job(study: Study, tmp_path: Path) -> None:
    path = write(
        tmp_path / "items.jsonl",
        '{"url": "https://example.org/1", "title": "multi-gpu hang"}\n'
        '{"url": "https://example.org/2", "title": "typo"}\n',
    )
    job = make_job(study, keywords=["multi-gpu"])
    job.upload = str(path)

    services.run_import(job)

    job.refresh_from_db()
    assert (job.created, job.filtered, job.filtered_by) == (1, 1, {"keywords": 1})


def test_a_job_does_not_keep_secrets_in_its_options(study: Study) -> None:
    with pytest.raises(ValueError, match="secrets"):
        params_from_json(ImportKind.GITHUB, {"repo": "a/b", "token": "ghp_x"})
    job = services.create_import_job(study, GitHubRepoParams(repo="a/b"))
    assert not {"token", "key"} & set(job.params)


def test_an_unknown_preset_fails_the_job_with_its_name(study: Study, tmp_path: Path) -> None:
    job = make_job(study, preset="tosem99")
    job.upload = str(write(tmp_path / "a.txt", "https://example.org/1\n"))

    services.run_import(job)

    job.refresh_from_db()
    assert job.status == JobStatus.FAILED and "tosem99" in job.error
    assert Item.objects.count() == 0


def test_only_a_failed_or_stalled_job_can_be_restarted(study: Study) -> None:
    job = make_job(study)
    with pytest.raises(ValueError, match="only a failed"):
        services.restart_import(job)
    ImportJob.objects.filter(pk=job.pk).update(status=JobStatus.RUNNING, heartbeat_at=job.created_at)
    job.refresh_from_db()
    job.heartbeat_at = timezone.now()
    with pytest.raises(ValueError, match="still running"):
        services.restart_import(job)


def test_an_upload_over_the_limit_is_refused_and_removed(
    study: Study, upload_root: Path, settings: Any
) -> None:
    settings.MAX_IMPORT_UPLOAD_BYTES = 10
    with pytest.raises(ValueError, match="larger than"):
        services.save_upload(study, "big.csv", [b"url\n", b"https://example.org/1\n"])
    assert list((upload_root / study.slug).iterdir()) == []
    with pytest.raises(ValueError, match=r"\.exe"):
        services.save_upload(study, "tool.exe", [b"MZ"])
    path = services.save_upload(study, "Items.CSV", [b"url\n"])
    assert path.parent == upload_root / study.slug and path.suffix == ".csv"


# --- PostgreSQL: the background writer (its own connection, so these tests commit for real) ----------


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_file_is_read_once_and_written_by_the_background_writer(study: Study, tmp_path: Path) -> None:
    if connection.vendor != "postgresql":
        pytest.skip("the background writer runs on PostgreSQL")
    lines = [
        json.dumps({"url": f"https://example.org/p/{n}", "body": f"**{n}**", "comments": [{"body": "ok"}]})
        for n in range(1, 2502)
    ]
    path = write(tmp_path / "items.jsonl", "\n".join(lines) + "\n")
    job = make_job(study)
    job.upload = str(path)

    services.run_import(job)

    job.refresh_from_db()
    assert (job.status, job.created, job.progress_done) == (JobStatus.SUCCEEDED, 2501, 2501)
    assert Item.objects.in_study(study).count() == 2501
    assert ItemComment.objects.filter(item__study=study).count() == 2501
    assert Item.objects.get(url="https://example.org/p/7").body_html.strip() == "<p><strong>7</strong></p>"
    assert "body" not in Item.objects.get(url="https://example.org/p/7").raw  # stored once, in `body`


def test_a_nan_in_a_jsonl_file_fails_the_import_with_its_line_and_field_not_an_internal_error(
    study: Study, tmp_path: Path
) -> None:
    """Python's json.dumps writes NaN for a missing float; PostgreSQL's COPY refused it half-way through
    the job ("Stopped by an internal error"). Now the row is named and nothing is written."""
    lines = [json.dumps({"url": f"https://example.org/n/{n}", "score": n}) for n in range(1, 4)]
    lines.append('{"url": "https://example.org/n/4", "score": NaN}')
    path = write(tmp_path / "items.jsonl", "\n".join(lines) + "\n")
    job = make_job(study)
    job.upload = str(path)

    services.run_import(job)

    job.refresh_from_db()
    assert job.status == JobStatus.FAILED and "nothing was imported" in job.error
    assert job.errors == [
        {
            "where": "line 4",
            "field": "score",
            "value": None,
            "message": "NaN is not valid JSON: write null for a missing number",
        }
    ]
    assert Item.objects.count() == 0


def test_half_a_surrogate_pair_in_a_file_is_imported_as_a_replacement_character(
    study: Study, tmp_path: Path
) -> None:
    """It stopped the import with an internal error: UTF-8 cannot encode a lone surrogate."""
    path = write(
        tmp_path / "items.jsonl",
        '{"url": "https://example.org/s/1", "title": "cut \\ud83d", "body": "b \\udc00", "m": "\\ud800"}\n',
    )
    job = make_job(study)
    job.upload = str(path)

    services.run_import(job)

    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED, job.error
    item = Item.objects.get(url="https://example.org/s/1")
    assert (item.title, item.body, item.metadata) == ("cut \ufffd", "b \ufffd", {"m": "\ufffd"})


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_bad_row_after_many_batches_rolls_every_batch_back(study: Study, tmp_path: Path) -> None:
    if connection.vendor != "postgresql":
        pytest.skip("the background writer runs on PostgreSQL")
    lines = [json.dumps({"url": f"https://example.org/p/{n}"}) for n in range(1, 2501)]
    lines.append('{"url": "https://example.org/p/bad", "created_at": "someday"}')
    path = write(tmp_path / "items.jsonl", "\n".join(lines) + "\n")
    job = make_job(study)
    job.upload = str(path)

    services.run_import(job)

    job.refresh_from_db()
    assert job.status == JobStatus.FAILED and "nothing was imported" in job.error
    assert job.errors[0]["where"] == "line 2501" and job.errors[0]["field"] == "created_at"
    assert (job.created, job.updated) == (0, 0)
    assert Item.objects.count() == 0


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_background_import_killed_half_way_and_run_again_is_exact(study: Study) -> None:
    if connection.vendor != "postgresql":
        pytest.skip("the background writer runs on PostgreSQL")
    records = [make_record(n, comments=n % 3) for n in range(1, 2001)]
    with pytest.raises(Crash):
        upsert_records(study, crash_after(records, 1300), batch_size=500, background=True)
    assert Item.objects.in_study(study).count() == 1250  # the complete batches: 250, 500 and 500

    counts = upsert_records(study, records, batch_size=500, background=True)

    assert (counts.created, counts.unchanged) == (750, 1250)
    assert dict(Item.objects.in_study(study).values_list("url", "content_hash")) == {
        rec.url: content_hash(rec) for rec in records
    }
    assert ItemComment.objects.filter(item__study=study).count() == sum(n % 3 for n in range(1, 2001))


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_an_error_on_the_writer_thread_reaches_the_caller(study: Study) -> None:
    if connection.vendor != "postgresql":
        pytest.skip("the background writer runs on PostgreSQL")
    ghost = Study(pk=study.pk + 1000, slug="ghost")  # not in the database: the foreign key fails

    with pytest.raises(IntegrityError):
        upsert_records(ghost, [make_record(n) for n in range(1, 5)], background=True, atomic=True)

    assert Item.objects.count() == 0


def test_text_with_nul_characters_is_stored_on_every_database(study: Study, record: RecordMaker) -> None:
    dirty = record(1, body="before\x00after", comments=1, note="a\x00b")

    upsert_records(study, [dirty])
    upsert_records(study, [record(1, body="edited\x00again", comments=1, note="c\x00d")])

    item = Item.objects.get(url=dirty.url)
    assert item.body.startswith("edited") and item.body.endswith("again")
    assert Item.objects.count() == 1


@pytest.mark.postgres
def test_copying_a_url_that_appeared_meanwhile_gives_way_to_the_upsert(
    study: Study, record: RecordMaker
) -> None:
    if connection.vendor != "postgresql":
        pytest.skip("COPY is the PostgreSQL path")
    from apps.corpus.services import pg

    upsert_records(study, [record(1)])
    rows = [(record(1, body="raced"), "hash"), (record(2), "hash2")]

    assert pg.copy_new_items(study.pk, rows, timezone.now(), lambda r: r.raw) is None

    assert Item.objects.filter(url=record(2).url).count() == 0  # the failed COPY left nothing behind
    assert Item.objects.get(url=record(1).url).body.startswith("Training hangs")


@pytest.mark.postgres
def test_statistics_follow_the_growth_of_the_study_not_of_the_table(
    study: Study, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another study's 3,000 items must not hide that this one is new: its lookups by URL go through
    the (study, url) index only once ANALYZE knows the study has rows (the import turned quadratic)."""
    if connection.vendor != "postgresql":
        pytest.skip("planner statistics are PostgreSQL's")
    from apps.corpus.services import pg

    other = Study.objects.create(slug="big", name="Big")
    upsert_records(other, [make_record(n) for n in range(1, 3001)])
    pg.refresh_statistics()
    analyzed: list[bool] = []
    monkeypatch.setattr(pg, "refresh_statistics", lambda columns_only=False: analyzed.append(columns_only))

    watch = pg.GrowthWatch(study.pk)
    watch.wrote(249)
    assert analyzed == []
    watch.wrote(1)  # 250 rows written into a study that had none (the upsert's first batch)
    assert analyzed == [True]
    watch.wrote(749)
    watch.wrote(1)  # x4
    assert analyzed == [True, True]


@pytest.mark.postgres
def test_a_first_import_refreshes_statistics_after_its_first_batch(
    study: Study, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first batch's rows count as written, not as held: taken as held, the import refreshed the
    statistics late and looked the next batches up on an empty study's statistics."""
    if connection.vendor != "postgresql":
        pytest.skip("planner statistics are PostgreSQL's")
    from apps.corpus.services import pg

    sizes: list[int] = []
    monkeypatch.setattr(
        pg,
        "refresh_statistics",
        lambda columns_only=False: sizes.append(Item.objects.filter(study=study).count()),
    )

    upsert_records(study, [make_record(n) for n in range(1, 2001)], render=False)

    assert sizes == [250, 1750]  # after the first batch (250), then once the study has grown fourfold


def test_the_first_batches_are_smaller_so_rendering_and_writing_start_sooner(
    study: Study, monkeypatch: pytest.MonkeyPatch
) -> None:
    from apps.corpus.services import upsert

    sizes: list[int] = []
    store_batch = upsert.store_batch

    def counting(study_id: int, batch: dict[str, Any], *args: Any) -> tuple[int, int, int]:
        sizes.append(len(batch))
        return store_batch(study_id, batch, *args)

    monkeypatch.setattr(upsert, "store_batch", counting)

    counts = upsert_records(study, [make_record(n) for n in range(1, 3001)], render=False)

    assert sizes == [250, 500, 1000, 1000, 250]
    assert counts.created == 3000
