"""The import commands, end to end: recorded API responses replayed with `responses`, never the network."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest
import responses
from django.core.management import CommandError, call_command
from responses import matchers

from apps.accounts.models import Study
from apps.core.models import JobStatus
from apps.corpus.models import ImportJob, ImportKind, Item, ItemComment

from .conftest import SAMPLES, sample

pytestmark = pytest.mark.django_db

API = "https://api.github.com"
SE_API = "https://api.stackexchange.com/2.3"
TOKEN = "ghp_NeverStoreThisToken0123456789abcdef"
SE_KEY = "se-key-NeverStoreThis"


def run(*args: Any) -> tuple[str, str]:
    """Call a command; return (stdout, stderr)."""
    import io

    out, err = io.StringIO(), io.StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def last_job() -> ImportJob:
    job = ImportJob.objects.order_by("-pk").first()
    assert job is not None
    return job


def assert_no_secret_stored(*texts: str) -> None:
    for job in ImportJob.objects.all():
        stored = json.dumps([job.params, job.errors, job.error, job.message, job.upload])
        assert TOKEN not in stored and SE_KEY not in stored
    for text in texts:
        assert TOKEN not in text and SE_KEY not in text


@pytest.fixture
def no_sleep(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The clock boundary: rate-limit and backoff waits are recorded instead of slept."""
    waits: list[float] = []
    monkeypatch.setattr(time, "sleep", waits.append)
    return waits


# --- import_items ------------------------------------------------------------------------------------


def test_import_items_imports_a_csv_and_a_rerun_changes_nothing(study: Study, tmp_path: Path) -> None:
    path = tmp_path / "items.csv"
    path.write_text(
        "url,title,body,tags,venue\n"
        "https://github.com/horovod/horovod/issues/12,Allreduce hangs,`hvd.init()` blocks,question,ICSE\n"
        "https://stackoverflow.com/questions/46519919/x,TF on torque,<p>Two nodes</p>,tensorflow;torque,\n",
        encoding="utf-8",
    )

    out, _err = run("import_items", "ddp", str(path))
    again, _ = run("import_items", "ddp", str(path), "--format", "csv")

    assert "2 created, 0 updated, 0 unchanged" in out
    assert "0 created, 0 updated, 2 unchanged" in again
    assert Item.objects.in_study(study).count() == 2
    job = last_job()
    assert (job.kind, job.status, job.params["filename"]) == (
        ImportKind.FILE,
        JobStatus.SUCCEEDED,
        "items.csv",
    )
    question = Item.objects.get(url="https://stackoverflow.com/questions/46519919")
    assert question.tags == ["tensorflow", "torque"] and question.body_format == "html"
    assert "<p>Two nodes</p>" in question.body_html


def test_import_items_fails_the_whole_file_on_one_bad_row_and_writes_nothing(
    study: Study, tmp_path: Path
) -> None:
    path = tmp_path / "items.jsonl"
    path.write_text(
        '{"url": "https://example.org/a", "title": "fine"}\n'
        '{"url": "https://example.org/b", "tags": 7}\n'
        '{"url": "https://example.org/c"}\n',
        encoding="utf-8",
    )

    with pytest.raises(CommandError) as failure:
        run("import_items", "ddp", str(path))

    assert "line 2" in str(failure.value) and "tags" in str(failure.value)
    assert Item.objects.count() == 0
    assert last_job().status == JobStatus.FAILED


def test_import_items_reads_the_tosem23_url_list(study: Study) -> None:
    urls = [line for line in (SAMPLES / "tosem23_keras-issues.txt").read_text().splitlines() if line.strip()]

    out, _ = run("import_items", "ddp", str(SAMPLES / "tosem23_keras-issues.txt"), "--format", "urls")

    assert f"{len(urls)} created" in out
    assert Item.objects.in_study(study).count() == len(urls) == 305
    assert set(Item.objects.values_list("source", flat=True)) == {"github"}


def test_import_items_recognises_a_github_issue_export_and_skips_pull_requests(
    study: Study, tmp_path: Path
) -> None:
    path = tmp_path / "issues.json"
    path.write_text((SAMPLES / "github3py_betamax_repo_issues_list.json").read_text(), encoding="utf-8")

    run("import_items", "ddp", str(path))

    assert Item.objects.in_study(study).count() == 13
    assert not Item.objects.filter(url__contains="/pull/").exists()
    item = Item.objects.get(url="https://github.com/betamaxpy/betamax/issues/40")
    assert item.tags == ["Bug", "Enhancement"] and item.external_id == "betamaxpy/betamax#40"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["import_items", "nope", "x.csv"], "No study with the slug 'nope'"),
        (["import_items", "ddp", "/no/such/file.csv"], "no such file"),
    ],
)
def test_import_items_names_a_bad_argument(study: Study, args: list[str], message: str) -> None:
    with pytest.raises(CommandError, match=re.escape(message)):
        run(*args)
    assert not ImportJob.objects.exists()


def test_render_items_renders_what_is_pending(study: Study, tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    path.write_text('{"url": "https://example.org/a", "body": "*hi*"}\n', encoding="utf-8")
    run("import_items", "ddp", str(path))
    Item.objects.update(rendered_at=None, body_html="")

    out, _ = run("render_items", "ddp")

    assert "Rendered 1 item(s)" in out
    assert Item.objects.get().body_html.strip() == "<p><em>hi</em></p>"


# --- import_github ----------------------------------------------------------------------------------


def add_betamax_pages() -> None:
    """The recorded issue list of betamaxpy/betamax, served as two pages joined by a Link header."""
    issues = sample("github3py_betamax_repo_issues_list.json")
    url = f"{API}/repos/betamaxpy/betamax/issues"
    page2 = f"{url}?state=all&per_page=100&page=2"
    responses.get(
        url,
        json=issues[:8],
        headers={"Link": f'<{page2}>; rel="next", <{page2}>; rel="last"'},
        match=[
            matchers.query_param_matcher(
                {"state": "all", "per_page": "100", "sort": "created", "direction": "asc"}
            )
        ],
    )
    responses.get(
        url, json=issues[8:], match=[matchers.query_param_matcher({"page": "2"}, strict_match=False)]
    )


@responses.activate
def test_import_github_reads_every_page_skips_pull_requests_and_keeps_the_token_out(
    study: Study, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    add_betamax_pages()

    out, err = run("import_github", "ddp", "--repo", "betamaxpy/betamax", "--no-comments", "--no-links")

    assert "13 created" in out and "3 filtered out" in out
    job = last_job()
    assert (job.status, job.created, job.filtered, job.filtered_by) == (
        JobStatus.SUCCEEDED,
        13,
        3,
        {"pull_request": 3},
    )
    assert job.params["repo"] == "betamaxpy/betamax" and job.params["no_comments"] is True
    assert all(call.request.headers["Authorization"] == f"Bearer {TOKEN}" for call in responses.calls)
    assert_no_secret_stored(out, err)


@responses.activate
def test_import_github_applies_label_exclusions_and_keywords(study: Study) -> None:
    add_betamax_pages()

    run(
        "import_github", "ddp", "--repo", "betamaxpy/betamax", "--no-comments", "--no-links",
        "--exclude-label", "docs", "--keyword", "cassette",
    )  # fmt: skip

    job = last_job()
    assert job.filtered_by["pull_request"] == 3
    assert job.filtered_by["labels_exclude"] == 5  # Docs, case-insensitive
    assert job.created == Item.objects.count() == 13 - 5 - job.filtered_by.get("keywords", 0)
    assert all("cassette" in (i.title + i.body).lower() for i in Item.objects.all())


@responses.activate
def test_import_github_hydrates_urls_with_comments_and_reports_a_missing_issue(
    study: Study, tmp_path: Path
) -> None:
    urls = tmp_path / "urls.txt"
    urls.write_text(
        "# candidates\n"
        "https://github.com/sigmavirus24/github3.py/issues/187\n"
        "https://github.com/PyGithub/PyGithub/issues/28#issuecomment-5775\n"
        "https://github.com/example/gone/issues/1\n",
        encoding="utf-8",
    )
    responses.get(
        f"{API}/repos/sigmavirus24/github3.py/issues/187", json=sample("github3py_github3.py_issue_187.json")
    )
    responses.get(
        f"{API}/repos/sigmavirus24/github3.py/issues/187/comments",
        json=sample("github3py_github3.py_issue_187_comments.json"),
    )
    responses.get(f"{API}/repos/pygithub/pygithub/issues/28", json=sample("pygithub_PyGithub_issue_28.json"))
    responses.get(
        f"{API}/repos/pygithub/pygithub/issues/28/comments",
        json=sample("pygithub_PyGithub_issue_28_comments.json"),
    )
    responses.get(f"{API}/repos/example/gone/issues/1", status=404, json={"message": "Not Found"})

    _out, err = run("import_github", "ddp", "--urls", str(urls), "--no-links")

    job = last_job()
    assert (job.status, job.created, job.failed) == (JobStatus.SUCCEEDED, 2, 1)
    assert job.errors[0]["where"] == "https://github.com/example/gone/issues/1"
    assert "404" in job.errors[0]["message"]
    assert "could not import https://github.com/example/gone/issues/1" in err
    issue = Item.objects.get(url="https://github.com/sigmavirus24/github3.py/issues/187")
    assert issue.title == "Document two factor auth"
    assert issue.comments.count() == 3
    assert ItemComment.objects.filter(item__url="https://github.com/pygithub/pygithub/issues/28").count() == 2
    assert all(c.body_html for c in ItemComment.objects.all())


@responses.activate
def test_import_github_with_a_rejected_token_fails_and_writes_nothing(
    study: Study, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    responses.get(f"{API}/repos/betamaxpy/betamax/issues", status=401, json={"message": "Bad credentials"})

    with pytest.raises(CommandError, match="token rejected") as failure:
        run("import_github", "ddp", "--repo", "betamaxpy/betamax")

    job = last_job()
    assert job.status == JobStatus.FAILED and job.error.startswith("token rejected")
    assert Item.objects.count() == 0
    assert_no_secret_stored(str(failure.value))


@responses.activate
def test_import_github_waits_out_a_rate_limit_and_shows_the_wait(study: Study, no_sleep: list[float]) -> None:
    url = f"{API}/repos/betamaxpy/betamax/issues"
    reset = int(time.time()) + 120
    responses.get(
        url,
        status=403,
        json={"message": "API rate limit exceeded"},
        headers={"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(reset)},
    )
    responses.get(url, json=sample("github3py_betamax_repo_issues_list.json")[:3])

    out, err = run("import_github", "ddp", "--repo", "betamaxpy/betamax", "--no-comments", "--no-links")

    assert "3 created" in out
    assert len(no_sleep) == 1 and 100 < no_sleep[0] <= 122
    assert "Waiting 12" in err or "Waiting 11" in err  # the wait is announced on the progress line
    assert last_job().waiting_until is None


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--query", "is:issue", "--state", "closed"], "go with --repo"),
        (["--repo", "a/b", "--limit", "0"], "--limit: must be a positive whole number, got '0'"),
        (["--repo", "a/b", "--since", "yesterday"], "ISO date"),
        (["--repo", "a/b", "--preset", "tosem23-github-keras", "--keyword", "gpu"], "not both"),
    ],
)
def test_import_github_refuses_bad_options(study: Study, args: list[str], message: str) -> None:
    with pytest.raises(CommandError, match=message):
        run("import_github", "ddp", *args)
    assert not ImportJob.objects.exists()


@responses.activate
def test_import_github_twice_updates_nothing_the_second_time(study: Study) -> None:
    add_betamax_pages()
    run("import_github", "ddp", "--repo", "betamaxpy/betamax", "--no-comments", "--no-links")
    add_betamax_pages()

    out, _ = run("import_github", "ddp", "--repo", "betamaxpy/betamax", "--no-comments", "--no-links")

    assert "0 created, 0 updated, 13 unchanged" in out
    assert Item.objects.count() == 13


# --- import_stackexchange --------------------------------------------------------------------------


def answers_for(question_ids: list[int], accepted: dict[int, int]) -> dict[str, Any]:
    """An answers response in the API's shape (no recorded one exists with bodies; see samples/SOURCES.md)."""
    items = [
        {
            "answer_id": accepted[qid],
            "question_id": qid,
            "is_accepted": True,
            "score": 12,
            "creation_date": 1275000000,
            "owner": {"display_name": "J&amp;K"},
            "body": f"<p>Use two pointers for {qid}.</p><pre><code>while (fast) {{}}</code></pre>",
        }
        for qid in question_ids
    ]
    return {"items": items, "has_more": False, "quota_max": 10000, "quota_remaining": 9900}


@responses.activate
def test_import_stackexchange_imports_questions_with_answers_and_keeps_the_key_out(
    study: Study, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STACKEXCHANGE_KEY", SE_KEY)
    first = sample("se_search_advanced_withbody_excerpt.json")
    ids = [q["question_id"] for q in first["items"]]
    responses.get(
        f"{SE_API}/search/advanced",
        json=first,
        match=[matchers.query_param_matcher({"tagged": "linked-list", "page": "1"}, strict_match=False)],
    )
    responses.get(
        f"{SE_API}/search/advanced",
        json={"items": [], "has_more": False, "quota_max": 10000, "quota_remaining": 9926},
        match=[matchers.query_param_matcher({"page": "2"}, strict_match=False)],
    )
    responses.get(
        f"{SE_API}/questions/{';'.join(map(str, ids))}/answers",
        json=answers_for(ids, {q["question_id"]: q["accepted_answer_id"] for q in first["items"]}),
    )

    out, err = run("import_stackexchange", "ddp", "--tagged", "linked-list", "--accepted-only")

    assert "3 created" in out
    item = Item.objects.get(url="https://stackoverflow.com/questions/3151276")
    assert item.title == "Cyclical Linked List Algorithm" and item.source == "stackoverflow"
    answer = item.comments.get()
    assert answer.is_accepted and answer.author == "J&K"
    assert "highlight" in answer.body_html
    assert all(call.request.params.get("key") == SE_KEY for call in responses.calls)
    assert_no_secret_stored(out, err)
    assert last_job().params["tagged"] == ["linked-list"]


@responses.activate
def test_import_stackexchange_keyword_screening_is_counted(study: Study) -> None:
    first = sample("gaea_search_advanced_questions.json")
    first["has_more"] = False
    responses.get(f"{SE_API}/search/advanced", json=first)
    responses.get(
        re.compile(rf"{re.escape(SE_API)}/questions/[0-9;]+/answers"),
        json={"items": [], "has_more": False, "quota_max": 300, "quota_remaining": 240},
    )

    run("import_stackexchange", "ddp", "--tagged", "ruby-on-rails", "--keyword", "render", "--limit", "10")

    job = last_job()
    assert job.created + job.filtered == 10
    assert job.filtered_by == {"keywords": job.filtered}
    assert all("render" in (i.title + i.body).lower() for i in Item.objects.all())


# --- import_so_dump --------------------------------------------------------------------------------

POSTS = """<?xml version="1.0" encoding="utf-8"?>
<posts>
  <row Id="1" PostTypeId="1" AcceptedAnswerId="3" CreationDate="2019-01-01T10:00:00.000" Score="5"
       Title="Distributed training with Horovod hangs" Body="&lt;p&gt;It hangs in distributed mode&lt;/p&gt;"
       Tags="&lt;pytorch&gt;&lt;horovod&gt;" AnswerCount="2" />
  <row Id="2" PostTypeId="1" CreationDate="2019-01-02T10:00:00.000" Score="1"
       Title="Distributed question without accepted answer" Body="&lt;p&gt;distributed&lt;/p&gt;"
       Tags="|pytorch|" AnswerCount="0" />
  <row Id="3" PostTypeId="2" ParentId="1" CreationDate="2019-01-03T10:00:00.000" Score="7"
       Body="&lt;p&gt;Set NCCL_DEBUG=INFO&lt;/p&gt;" OwnerUserId="42" />
  <row Id="4" PostTypeId="1" AcceptedAnswerId="5" CreationDate="2019-01-04T10:00:00.000"
       Title="Pandas merge" Body="&lt;p&gt;merge&lt;/p&gt;" Tags="&lt;pandas&gt;" />
  <row Id="5" PostTypeId="2" ParentId="4" Body="&lt;p&gt;use join&lt;/p&gt;" />
  <row Id="6" PostTypeId="2" ParentId="1" Score="2" Body="&lt;p&gt;Or upgrade&lt;/p&gt;" />
</posts>
"""


def test_import_so_dump_streams_screens_and_joins_answers(study: Study, tmp_path: Path) -> None:
    path = tmp_path / "Posts.xml"
    path.write_text(POSTS, encoding="utf-8")

    _out, _ = run(
        "import_so_dump", "ddp", str(path), "--tag", "pytorch", "--keyword", "distributed", "--accepted-only"
    )

    job = last_job()
    assert (job.status, job.created, job.filtered) == (JobStatus.SUCCEEDED, 1, 2)
    assert job.filtered_by == {"accepted_only": 1, "tags": 1}  # question 2; question 4 (pandas)
    item = Item.objects.get()
    assert item.url == "https://stackoverflow.com/questions/1"
    assert list(item.comments.values_list("external_id", "is_accepted")) == [("3", True), ("6", False)]


def test_import_so_dump_with_broken_xml_writes_nothing(study: Study, tmp_path: Path) -> None:
    path = tmp_path / "Posts.xml"
    path.write_text(POSTS.replace("</posts>", "<row Id='9'"), encoding="utf-8")

    with pytest.raises(CommandError, match="malformed XML"):
        run("import_so_dump", "ddp", str(path))

    assert Item.objects.count() == 0


STRAY_QUOTE_CSV = (
    "url,title,body\n"
    "https://github.com/q/r/issues/1,ok,b\n"
    'https://github.com/q/r/issues/2,"He said ""hi,b\n'
    "https://github.com/q/r/issues/3,ok3,b\n"
    "https://github.com/q/r/issues/4,ok4,b\n"
)


def test_unbalanced_quote_in_items_csv_is_refused_with_its_line(study: Study, tmp_path: Path) -> None:
    path = tmp_path / "items.csv"
    path.write_text(STRAY_QUOTE_CSV, encoding="utf-8")

    with pytest.raises(CommandError) as failure:
        run("import_items", "ddp", str(path))

    assert "line 3" in str(failure.value) and "still open at the end of the file" in str(failure.value)
    assert Item.objects.count() == 0


def test_rows_swallowed_between_two_stray_quotes_in_items_csv_are_refused_with_the_quote_line(
    study: Study, tmp_path: Path
) -> None:
    path = tmp_path / "items.csv"
    path.write_text(
        "url,title,body\n"
        "https://github.com/q/r/issues/1,ok,b\n"
        'https://github.com/q/r/issues/2,ok2,"He said hi\n'
        "https://github.com/q/r/issues/3,ok3,b\n"
        'https://github.com/q/r/issues/4,ok4,she said bye"\n',
        encoding="utf-8",
    )

    with pytest.raises(CommandError) as failure:
        run("import_items", "ddp", str(path))

    assert "line 3" in str(failure.value) and "read as rows of their own" in str(failure.value)
    assert Item.objects.count() == 0


def test_a_github_issue_body_with_code_and_commas_in_items_csv_is_imported_whole(
    study: Study, tmp_path: Path
) -> None:
    body = (
        "parse(a, b) crashes, always.\n\nSteps:\n```python\nparse([1, 2, 3], strict=True, sep=',')\n```\n"
        'Error: ValueError: bad input, expected "str", got list'
    )
    path = tmp_path / "items.csv"
    path.write_text(
        'url,title,body\nhttps://github.com/q/r/issues/1,Crash,"' + body.replace('"', '""') + '"\n'
        "https://github.com/q/r/issues/2,ok2,b\n",
        encoding="utf-8",
    )

    out, _ = run("import_items", "ddp", str(path))

    assert "2 created" in out
    assert Item.objects.get(url="https://github.com/q/r/issues/1").body == body


def test_a_multi_line_body_in_items_csv_is_still_imported(study: Study, tmp_path: Path) -> None:
    path = tmp_path / "items.csv"
    path.write_text(
        'url,title,body\nhttps://github.com/q/r/issues/1,ok,"line one\nline two"\n'
        "https://github.com/q/r/issues/2,ok2,b\n",
        encoding="utf-8",
    )

    out, _ = run("import_items", "ddp", str(path))

    assert "2 created" in out
    assert Item.objects.get(url="https://github.com/q/r/issues/1").body == "line one\nline two"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "is a directory, not a file"),
        ("url,title\nhttps://example.org/a,café\n".encode("latin-1"), "byte 0xe9 at byte offset 35"),
        ("url,title\nhttps://example.org/a,ok\n".encode("utf-16"), "is UTF-16 (little-endian) text"),
    ],
)
def test_import_items_refuses_a_directory_or_another_encoding_in_one_line_with_status_2(
    study: Study, tmp_path: Path, content: bytes | None, message: str
) -> None:
    path = tmp_path / "items.csv"
    if content is None:
        path.mkdir()
    else:
        path.write_bytes(content)

    with pytest.raises(CommandError) as failure:
        run("import_items", "ddp", str(path))

    assert failure.value.returncode == 2
    assert message in str(failure.value) and "\n" not in str(failure.value)
    assert not ImportJob.objects.exists() and Item.objects.count() == 0


def test_import_items_accepts_utf8_with_a_byte_order_mark(study: Study, tmp_path: Path) -> None:
    path = tmp_path / "items.csv"
    path.write_bytes(b"\xef\xbb\xbfurl,title\nhttps://example.org/a,caf\xc3\xa9\n")

    out, _ = run("import_items", "ddp", str(path))

    assert "1 created" in out and Item.objects.get().title == "café"


@pytest.mark.parametrize("suffix", [".json", ".jsonl"])
def test_deeply_nested_json_in_import_items_is_a_clear_error(
    study: Study, tmp_path: Path, suffix: str
) -> None:
    path = tmp_path / f"items{suffix}"
    path.write_text('{"url": "https://example.org/a", "deep": ' + "[" * 100_000 + "]" * 100_000 + "}\n")

    with pytest.raises(CommandError) as failure:
        run("import_items", "ddp", str(path))

    assert "nested too deeply" in str(failure.value)
    assert Item.objects.count() == 0


def test_import_so_dump_refuses_a_directory_with_status_2(study: Study, tmp_path: Path) -> None:
    with pytest.raises(CommandError) as failure:
        run("import_so_dump", "ddp", str(tmp_path))

    assert failure.value.returncode == 2 and "is a directory, not a file" in str(failure.value)
    assert not ImportJob.objects.exists()
