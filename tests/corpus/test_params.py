"""The import options as typed values: what a job row stores and reads back (no database)."""

from __future__ import annotations

from typing import Any

import pytest

from apps.corpus import params
from apps.corpus.models import ImportKind
from apps.corpus.params import (
    FileParams,
    GitHubQueryParams,
    GitHubRepoParams,
    GitHubUrlsParams,
    HydrateParams,
    ImportParams,
    ImportParamsError,
    JiraParams,
    SoDumpParams,
    StackExchangeParams,
    params_from_json,
)

EXAMPLES: list[ImportParams] = [
    FileParams(format="csv", filename="items.csv", preset="", keywords=("gpu",)),
    GitHubRepoParams(repo="horovod/horovod", state="closed", labels=("bug",), since="2023-01-01", limit=5),
    GitHubQueryParams(query="repo:keras-team/keras gpu", exclude_labels=("type:*",), no_comments=True),
    GitHubUrlsParams(urls=("https://github.com/a/b/issues/1",), api_url="http://127.0.0.1:9"),
    GitHubUrlsParams(),
    StackExchangeParams(tagged=("pytorch", "ddp"), match="all", accepted_only=True, site="datascience"),
    SoDumpParams(tags=("keras",), accepted_only=True, filename="Posts.xml", site_host="ai.stackexchange.com"),
    JiraParams(jql="project = MESOS", api_url="https://issues.apache.org/jira", no_links=True, limit=3),
    JiraParams(filename="export.xml"),
    HydrateParams(),
    HydrateParams(source="jira", limit=10, api_url="http://127.0.0.1:9/jira"),
]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"source": "bitbucket"}, "source must be one of github, stackexchange, gitlab, jira"),
        ({"api_url": "http://127.0.0.1:9"}, "an api_url goes with one source"),
        ({"source": "github", "token": "x"}, "may not hold secrets"),
    ],
)
def test_a_hydrate_job_with_bad_options_is_refused_naming_them(data: dict[str, Any], message: str) -> None:
    with pytest.raises(ImportParamsError, match=message):
        params_from_json("hydrate", data)


def test_the_kinds_are_those_of_the_job_model() -> None:
    assert set(params.KINDS) == set(ImportKind.values)


@pytest.mark.parametrize("value", EXAMPLES, ids=lambda v: type(v).__name__)
def test_options_survive_the_round_trip_through_the_job_row(value: ImportParams) -> None:
    assert params_from_json(value.kind, value.to_json()) == value


def test_the_browser_file_job_stores_the_keys_it_always_stored() -> None:
    assert FileParams(filename="items.csv").to_json() == {
        "format": "",
        "filename": "items.csv",
        "preset": "",
        "keywords": [],
    }


def test_a_github_job_stores_every_mode_key_with_the_other_modes_empty() -> None:
    stored = GitHubQueryParams(query="gpu").to_json()

    assert stored == {
        "mode": "query",
        "repo": "",
        "state": "",
        "labels": [],
        "exclude_labels": [],
        "since": "",
        "query": "gpu",
        "urls": [],
        "no_comments": False,
        "limit": None,
        "preset": "",
        "keywords": [],
    }


@pytest.mark.parametrize(
    ("kind", "row", "expected"),
    [
        # the browser's GitHub repo job before typed options
        (
            "github",
            {"mode": "repo", "repo": "pytorch/pytorch", "state": "closed", "labels": ["module: ddp"],
             "exclude_labels": [], "since": "", "query": "", "urls": [], "no_comments": False, "limit": 50,
             "preset": "tosem23-github-pytorch", "keywords": []},
            GitHubRepoParams(repo="pytorch/pytorch", state="closed", labels=("module: ddp",), limit=50,
                             preset="tosem23-github-pytorch"),
        ),
        # the command's --urls job: no `urls` key, the URLs are the uploaded file's
        (
            "github",
            {"mode": "urls", "repo": "", "state": "", "labels": [], "exclude_labels": [], "since": "",
             "query": "", "keywords": [], "preset": "", "no_comments": False, "limit": None,
             "api_url": "https://api.github.com"},
            GitHubUrlsParams(api_url="https://api.github.com"),
        ),
        # written by hand (tests, old scripts): no mode, the set option decides
        ("github", {"repo": "ex/repo", "state": "all"}, GitHubRepoParams(repo="ex/repo")),
        ("github", {"urls": ["https://github.com/ex/repo/issues/1"]},
         GitHubUrlsParams(urls=("https://github.com/ex/repo/issues/1",))),
        ("file", {}, FileParams()),
        ("file", {"format": "jsonl", "filename": "x.jsonl"}, FileParams(format="jsonl", filename="x.jsonl")),
        ("stackexchange", {"tagged": ["tensorflow"], "match": "any", "accepted_only": False,
                           "site": "stackoverflow", "limit": None, "preset": "", "keywords": []},
         StackExchangeParams(tagged=("tensorflow",))),
        ("so_dump",
         {"tags": [], "accepted_only": True, "filename": "Posts.xml", "preset": "", "keywords": []},
         SoDumpParams(accepted_only=True, filename="Posts.xml")),
    ],
)  # fmt: skip
def test_rows_stored_before_typed_options_still_load(kind: str, row: dict[str, Any], expected: Any) -> None:
    assert params_from_json(kind, row) == expected


@pytest.mark.parametrize(
    ("kind", "row", "message"),
    [
        ("github", {"repoo": "a/b"}, "unknown option.*repoo.*github"),
        ("file", {"format": "csv", "preset": "", "keyword": ["x"]}, "unknown option.*keyword"),
        ("stackexchange", {"site": "stackoverflow"}, "needs the option tagged"),
        ("github", {"no_comments": True}, "needs one of the options repo, query or urls"),
        ("github", {"mode": "repo", "repo": ""}, "needs the option repo"),
        ("github", {"mode": "query"}, "needs the option query"),
        ("github", {"repo": "a/b", "query": "gpu"}, "not repo and query"),
        ("github", {"query": "gpu", "labels": ["bug"]}, "go with a GitHub repo import"),
        ("github", {"repo": "a/b", "state": "shut"}, "state must be one of"),
        ("github", {"repo": "a/b", "limit": "5"}, "limit is a positive whole number"),
        ("github", {"repo": "a/b", "labels": "bug"}, "labels is a list of texts"),
        ("stackexchange", {"tagged": ["x"], "accepted_only": "yes"}, "accepted_only is true or false"),
        ("stackexchange", {"tagged": ["x"], "match": "some"}, "match must be any or all"),
        ("github", {"repo": "a/b", "token": "ghp_x"}, "may not hold secrets .token."),
        ("feed", {}, "unknown import kind 'feed'"),
    ],
)
def test_options_that_cannot_be_an_imports_are_refused_by_name(
    kind: str, row: dict[str, Any], message: str
) -> None:
    with pytest.raises(ImportParamsError, match=message):
        params_from_json(kind, row)


def test_endpoint_overrides_default_to_the_public_services() -> None:
    assert GitHubRepoParams(repo="a/b").endpoint == params.GITHUB_API
    assert StackExchangeParams(tagged=("x",)).endpoint == params.STACKEXCHANGE_API
    assert SoDumpParams().host == params.SO_DUMP_SITE
    assert "api_url" not in GitHubRepoParams(repo="a/b").to_json()
    assert "site_host" not in SoDumpParams().to_json()


def test_each_kind_asks_the_screening_for_what_it_screens_by() -> None:
    dump = SoDumpParams(tags=("keras",), accepted_only=True, keywords=("gpu",))
    api = StackExchangeParams(tagged=("keras",), accepted_only=True, preset="p")

    assert (dump.screening.tags, dump.screening.accepted_only, dump.screening.keywords) == (
        ("keras",),
        True,
        ("gpu",),
    )
    assert (api.screening.tags, api.screening.accepted_only, api.screening.preset) == ((), True, "p")
