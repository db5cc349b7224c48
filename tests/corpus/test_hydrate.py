"""Hydrate (#26 point 7): a URL-only study (like the TOSEM 2023 replication data) gets its titles, bodies and
comments or answers from GitHub, Stack Overflow, GitLab and Jira replays; labels stay; a rerun fetches only
what is left; an item that cannot be fetched is reported and the rest go on."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
import responses
from django.core.management import CommandError, call_command

from apps.accounts.models import Study, User
from apps.annotation import services as labelling
from apps.annotation.models import Assignment, LabelValue
from apps.core.jobs import claim_job
from apps.core.models import JobStatus
from apps.corpus.hydration import jira_key, plan, source_of
from apps.corpus.models import ImportJob, Item, Relevance
from apps.corpus.params import HydrateParams
from apps.corpus.records import CommentRecord, ItemRecord
from apps.corpus.services import create_import_job, run_import, upsert_records
from apps.taxonomy.codebook_spec import codebook_from_data
from apps.taxonomy.loading import load_codebook

from .conftest import sample
from .test_gitlab import ISSUE_URL as GITLAB_ISSUE
from .test_gitlab import NOTES
from .test_gitlab import issue as gitlab_issue
from .test_jira import SERVER

GH = "https://api.github.com/repos"
SE = "https://api.stackexchange.com/2.3"
GITLAB_API = "https://example.com/api/v4"
ISSUE_28 = "https://github.com/PyGithub/PyGithub/issues/28"
ISSUE_187 = "https://github.com/sigmavirus24/github3.py/issues/187"
GONE = "https://github.com/octo/gone/issues/1"
SO = [f"https://stackoverflow.com/questions/{n}" for n in (2984842, 3151276, 999)]
JIRA_ISSUE = "https://issues.example.org/browse/MESOS-1"
JIRA_GONE = "https://issues.example.org/browse/MESOS-404"
ELSEWHERE = "https://example.org/a/blog/post"
URLS = [ISSUE_28, ISSUE_187, GONE, *SO, GITLAB_ISSUE, JIRA_ISSUE, JIRA_GONE, ELSEWHERE]
KINDS = [{"key": "fault", "name": "Fault"}, {"key": "howto", "name": "How-to"}]
CODEBOOK = {
    "name": "Faults",
    "dimensions": [{"key": "kind", "name": "Kind", "multiple": False, "categories": KINDS}],
}
ANSWERS = {
    "items": [
        {"answer_id": 2984863, "question_id": 2984842, "is_accepted": True, "score": 4,
         "owner": {"display_name": "Ann"}, "creation_date": 1275700000, "body": "<p>Use two pointers.</p>"},
        {"answer_id": 3151289, "question_id": 3151276, "is_accepted": True, "score": 9,
         "owner": {"display_name": "Ben"}, "creation_date": 1277700000, "body": "<p>Floyd's algorithm.</p>"},
    ],
    "has_more": False, "quota_max": 10000, "quota_remaining": 9925,
}  # fmt: skip


@pytest.fixture
def url_only_study(study: Study, lead: User, annotator_a: User, tmp_path: Path, settings: Any) -> Study:
    """The study's items are a URL list; alice has labelled two of them."""
    settings.GITLAB_API_URLS = ["https://gitlab.com/api/v4", GITLAB_API]
    settings.JIRA_API_URLS = [SERVER]
    urls = tmp_path / "urls.txt"
    urls.write_text("\n".join(URLS) + "\n", encoding="utf-8")
    call_command("import_items", study.slug, str(urls), stdout=io.StringIO(), stderr=io.StringIO())
    load_codebook(study, codebook_from_data(CODEBOOK), actor=lead)
    labelling.draw_round(study, number=1, size=len(URLS), seed=3, actor=lead)
    labelling.assign_round(study, 1, ["alice"], overlap=1, actor=lead)
    labels = tmp_path / "labels.csv"
    labels.write_text(f"item,annotator,dimension,label,round\n{ISSUE_28},alice,kind,fault,1\n"
                      f"{SO[0]},alice,kind,howto,1\n", encoding="utf-8")  # fmt: skip
    call_command("import_labels", study.slug, str(labels), stdout=io.StringIO(), stderr=io.StringIO())
    Item.objects.filter(url=ISSUE_187).update(relevance=Relevance.RELEVANT, relevance_reason="GPU")
    return study


def serve_sources(mock: responses.RequestsMock) -> None:
    """GitHub, Stack Exchange, GitLab and Jira answering from the recorded (or written) samples."""
    for path, issue, comments in (
        ("pygithub/pygithub/issues/28", "pygithub_PyGithub_issue_28.json",
         "pygithub_PyGithub_issue_28_comments.json"),
        ("sigmavirus24/github3.py/issues/187", "github3py_github3.py_issue_187.json",
         "github3py_github3.py_issue_187_comments.json"),
    ):  # fmt: skip
        mock.get(re.compile(re.escape(f"{GH}/{path}") + "$"), json=sample(issue))
        mock.get(re.compile(re.escape(f"{GH}/{path}/comments") + r"(\?.*)?$"), json=sample(comments))
    mock.get(f"{GH}/octo/gone/issues/1", status=404, json={"message": "Not Found"})
    mock.get(f"{SE}/questions/2984842;3151276;999", json=sample("se_search_advanced_withbody_excerpt.json"))
    mock.get(f"{SE}/questions/2984842;3151276;4387500/answers", json=ANSWERS)
    project = f"{GITLAB_API}/projects/fakeorg%2Ffakeproject/issues/461536"
    mock.get(project, json=gitlab_issue())
    mock.get(f"{project}/notes", json=NOTES)
    first = sample("jira_server_search_page1.json")["issues"][0]
    mock.get(f"{SERVER}/rest/api/2/issue/MESOS-1", json=first)
    mock.get(
        f"{SERVER}/rest/api/2/issue/MESOS-404", status=404, json={"errorMessages": ["Issue Does Not Exist"]}
    )


def hydrate(study: Study, params: HydrateParams, sleeps: list[float] | None = None) -> ImportJob:
    job = create_import_job(study, params)
    claimed = claim_job(ImportJob, job.pk, task_id="test")
    assert claimed is not None
    return run_import(claimed, environ={}, sleep=(sleeps if sleeps is not None else []).append)


# --- where each item is fetched from ---------------------------------------------------------------------


def test_each_url_goes_to_the_api_that_serves_it_and_the_rest_is_reported() -> None:
    todo = plan(URLS, gitlab_sites=[GITLAB_API], jira_sites=[SERVER])

    assert todo.github == [ISSUE_28, ISSUE_187, GONE]
    assert todo.stackexchange == {"stackoverflow": [(2984842, SO[0]), (3151276, SO[1]), (999, SO[2])]}
    assert todo.gitlab == {GITLAB_API: [GITLAB_ISSUE]} and todo.jira == {SERVER: [JIRA_ISSUE, JIRA_GONE]}
    assert todo.unreachable == [(ELSEWHERE, "not a GitHub, Stack Exchange, GitLab or Jira issue URL")]
    assert todo.size == 9


def test_a_source_a_limit_and_an_unlisted_instance_narrow_the_plan() -> None:
    unlisted = plan(URLS, source="jira")
    assert (
        unlisted.size == 0
        and [why for _url, why in unlisted.unreachable]
        == ["issues.example.org is not an instance listed in JIRA_API_URLS (or --api-url)"] * 2
    )
    assert plan(URLS, source="jira", api_url="https://replay.test/jira").jira == {
        "https://replay.test/jira": [JIRA_ISSUE, JIRA_GONE]
    }
    assert plan(URLS, limit=4).github == [ISSUE_28, ISSUE_187, GONE] and plan(URLS, limit=4).size == 4
    assert source_of("https://datascience.stackexchange.com/q/12/7") == "stackexchange"
    assert jira_key("https://issues.apache.org/jira/browse/hadoop-12") == "HADOOP-12"
    with pytest.raises(ValueError, match="goes with one source"):
        plan(URLS, api_url="https://replay.test")


# --- the job ---------------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_hydrate_fetches_every_url_only_item_and_leaves_labels_and_screening_alone(
    url_only_study: Study,
) -> None:
    before = {item.url: item.pk for item in Item.objects.all()}
    labels_before = list(
        LabelValue.objects.values_list("finding__annotation__assignment__item_id", "category__key")
    )
    sleeps: list[float] = []

    with responses.RequestsMock() as mock:
        mock.get(f"{GH}/sigmavirus24/github3.py/issues/187", status=429, headers={"Retry-After": "3"})
        serve_sources(mock)
        job = hydrate(url_only_study, HydrateParams(), sleeps)

    assert job.status == JobStatus.SUCCEEDED, job.error
    assert (job.updated, job.failed, job.created) == (6, 3, 0) and sleeps == [3.0]
    failed = {e["where"] for e in job.errors if e["where"].startswith("http")}
    assert failed == {GONE, SO[2], JIRA_GONE, ELSEWHERE}
    assert {item.url: item.pk for item in Item.objects.all()} == before  # updated in place, none added
    issue = Item.objects.get(url=ISSUE_187)
    assert issue.title == "Document two factor auth" and issue.comments.count() == 3
    assert (issue.relevance, issue.relevance_reason) == (Relevance.RELEVANT, "GPU")
    question = Item.objects.get(url=SO[0])
    assert question.source == "stackoverflow" and question.body and question.comments.get().is_accepted
    gitlab = Item.objects.get(url=GITLAB_ISSUE)
    assert gitlab.source == "gitlab" and gitlab.comments.count() == 1  # the system note left out
    jira = Item.objects.get(url=JIRA_ISSUE)
    assert jira.source == "jira" and jira.title and "gpu" in jira.tags and jira.body_html  # rendered
    assert list(
        LabelValue.objects.values_list("finding__annotation__assignment__item_id", "category__key")
    ) == (labels_before)
    assert Assignment.objects.count() == len(URLS)
    assert set(Item.objects.url_only().values_list("url", flat=True)) == {GONE, SO[2], JIRA_GONE, ELSEWHERE}


@pytest.mark.django_db
def test_a_rerun_fetches_only_what_is_still_url_only(url_only_study: Study) -> None:
    with responses.RequestsMock() as mock:
        serve_sources(mock)
        hydrate(url_only_study, HydrateParams())

    with responses.RequestsMock(assert_all_requests_are_fired=True) as mock:  # only the three that failed
        mock.get(f"{GH}/octo/gone/issues/1", json=dict(sample("github3py_github3.py_issue_187.json"),
                                                       comments=0, html_url=GONE, number=1))  # fmt: skip
        mock.get(f"{SE}/questions/999", json={"items": [], "has_more": False, "quota_remaining": 9900})
        mock.get(f"{SERVER}/rest/api/2/issue/MESOS-404", status=404, json={"errorMessages": ["gone"]})
        job = hydrate(url_only_study, HydrateParams())

    assert (job.updated, job.failed, job.unchanged) == (1, 2, 0)
    assert Item.objects.get(url=GONE).title == "Document two factor auth"


@pytest.mark.django_db
def test_stack_overflow_questions_are_fetched_a_hundred_ids_per_call(study: Study, tmp_path: Path) -> None:
    ids = list(range(1000, 1150))
    urls = tmp_path / "so.txt"
    urls.write_text("\n".join(f"https://stackoverflow.com/questions/{n}" for n in ids), encoding="utf-8")
    call_command("import_items", study.slug, str(urls), stdout=io.StringIO(), stderr=io.StringIO())
    template = sample("se_search_advanced_withbody_excerpt.json")["items"][0]

    def questions(request: Any) -> tuple[int, dict[str, str], str]:
        asked = request.path_url.split("/questions/", 1)[1].split("?", 1)[0].split(";")
        items = [dict(template, question_id=int(n), answer_count=0, link=f"https://stackoverflow.com/questions/{n}")
                 for n in asked]  # fmt: skip
        return 200, {}, json.dumps({"items": items, "has_more": False, "quota_remaining": 9000})

    with responses.RequestsMock() as mock:
        mock.add_callback(
            responses.GET, re.compile(rf"{re.escape(SE)}/questions/[0-9;]+(\?.*)?$"), callback=questions
        )
        job = hydrate(study, HydrateParams(source="stackexchange"))
        calls = [c.request.path_url.split("?")[0] for c in mock.calls]

    assert [path.count(";") + 1 for path in calls] == [100, 50]
    assert job.updated == 150 and not Item.objects.url_only().exists()


# --- the command, the import page, the API -------------------------------------------------------------


@pytest.mark.django_db
@responses.activate
def test_the_hydrate_command_takes_a_source_and_a_limit(url_only_study: Study) -> None:
    serve_sources(responses.mock)
    out = io.StringIO()

    call_command("hydrate", "ddp", "--source", "github", "--limit", "1", stdout=out, stderr=io.StringIO())

    assert "1 updated" in out.getvalue()
    assert Item.objects.url_only().filter(source="github").count() == 2
    with pytest.raises(CommandError, match="--api-url goes with --source"):
        call_command("hydrate", "ddp", "--api-url", "https://replay.test", stderr=io.StringIO())


@pytest.mark.django_db
def test_a_lead_fetches_url_only_items_from_the_import_page_and_the_api(
    url_only_study: Study, client: Any, lead: User, django_capture_on_commit_callbacks: Any
) -> None:
    client.force_login(lead)
    page = client.get("/studies/ddp/import/?source=hydrate").content.decode()
    assert "<strong>10</strong> items of this study have only a URL" in page

    with (
        responses.RequestsMock(assert_all_requests_are_fired=False) as mock,  # two sources of four
        django_capture_on_commit_callbacks(execute=True),
    ):
        serve_sources(mock)
        response = client.post("/studies/ddp/import/", {"kind": "hydrate", "source": "jira"})
        api = client.post("/api/v1/studies/ddp/imports/", {"kind": "hydrate", "source": "gitlab", "limit": 5},
                          content_type="application/json")  # fmt: skip

    assert response.status_code == 302 and api.status_code == 202, api.json()
    jira_job, gitlab_job = ImportJob.objects.filter(kind="hydrate").order_by("pk")
    assert (jira_job.status, jira_job.updated, jira_job.failed, jira_job.params) == (
        JobStatus.SUCCEEDED, 1, 1, {"source": "jira", "limit": None},
    )  # fmt: skip
    assert (gitlab_job.updated, gitlab_job.params["limit"]) == (1, 5)
    ignored = client.post("/api/v1/studies/ddp/imports/", {"kind": "hydrate", "api_url": "http://10.0.0.1"},
                          content_type="application/json")  # fmt: skip
    assert ignored.status_code == 202 and "api_url" not in ImportJob.objects.latest("pk").params


@pytest.mark.django_db
def test_url_only_means_no_text_and_nothing_read_from_an_api(study: Study) -> None:
    def item(n: int, **fields: Any) -> ItemRecord:
        return ItemRecord(url=f"https://github.com/o/r/issues/{n}", source="github", external_id="", **fields)

    upsert_records(study, [
        item(1),  # a URL list's line
        item(2, title="o/r#2", raw={"question": "https://stackoverflow.com/q/2", "url": "x"}),  # a CSV row
        item(3, raw={"issue": {"number": 3, "title": ""}}),  # fetched: an empty issue stays fetched
        item(4, body="text"),
        item(5, comments=[CommentRecord(external_id="c", author="a", body="b")]),
        item(6, raw={"question": {"question_id": 6}}),
    ])  # fmt: skip

    urls = Item.objects.in_study(study).url_only().values_list("url", flat=True)
    assert sorted(urls) == ["https://github.com/o/r/issues/1", "https://github.com/o/r/issues/2"]
