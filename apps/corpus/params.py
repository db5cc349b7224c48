"""The options of an import job, one frozen dataclass per kind of import. Pure: no Django.

The forms, the API (through the forms) and the import commands build one of these; the import service
records it in the job row's JSON field (:meth:`to_json`) and reads it back (:func:`params_from_json`)
before it runs, so an option misspelt on either side is a type error, not a silent ``None``.

The JSON keeps the keys jobs have always stored (a row written before these classes loads unchanged):
GitHub jobs hold the keys of every mode, those of the other modes empty, as the import form wrote them.
:func:`params_from_json` refuses an unknown key, a missing required one, a value of the wrong type or a
secret (tokens and keys come from the worker's environment and are never stored) with
:class:`ImportParamsError` naming the problem.

Empty text means "the default" for the endpoint overrides (``api_url``, ``site_host``), which only the
commands set: they are left out of the JSON when empty, as the browser's jobs never had them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

# The values of corpus.models.ImportKind (tests/corpus/test_params.py checks they stay equal).
FILE = "file"
GITHUB = "github"
STACKEXCHANGE = "stackexchange"
SO_DUMP = "so_dump"
GITLAB = "gitlab"
JIRA = "jira"
HYDRATE = "hydrate"
HYDRATE_SOURCES = ("github", "stackexchange", "gitlab", "jira")
GITLAB_API = "https://gitlab.com/api/v4"
GITLAB_STATES = ("all", "opened", "closed")

GITHUB_API = "https://api.github.com"
STACKEXCHANGE_API = "https://api.stackexchange.com/2.3"
SO_DUMP_SITE = "stackoverflow.com"
SECRET_KEYS = frozenset({"token", "key", "github_token", "stackexchange_key", "password"})
GITHUB_STATES = ("all", "open", "closed")

GitHubState = Literal["all", "open", "closed"]
Match = Literal["any", "all"]


class ImportParamsError(ValueError):
    """Options that cannot be an import's: the message names the option and what is wrong."""


@dataclass(frozen=True)
class Screening:
    """What an import asks the screening to keep: a named preset, or keywords (and tags), or nothing.
    `services.screening_rules` turns it into rules (and refuses an unknown preset)."""

    preset: str = ""
    keywords: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    accepted_only: bool = False


@dataclass(frozen=True)
class FileParams:
    """A CSV, JSON, JSONL or URL-list file (the file itself is the job's upload)."""

    kind: ClassVar[str] = FILE

    format: str = ""  # empty: from the file's extension
    filename: str = ""
    preset: str = ""
    keywords: tuple[str, ...] = ()

    @property
    def screening(self) -> Screening:
        return Screening(self.preset, self.keywords)

    def to_json(self) -> dict[str, Any]:
        return {"format": self.format, "filename": self.filename, **_screening_json(self)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> FileParams:
        read = _Reader(FILE, data, {"format", "filename", "preset", "keywords"})
        return cls(
            format=read.text("format"),
            filename=read.text("filename"),
            preset=read.text("preset"),
            keywords=read.texts("keywords"),
        )


@dataclass(frozen=True, kw_only=True)
class _GitHubCommon:
    """The options every GitHub mode shares."""

    kind: ClassVar[str] = GITHUB
    mode: ClassVar[str]

    exclude_labels: tuple[str, ...] = ()
    no_comments: bool = False
    no_links: bool = False  # True: no timeline, pull request or commit reads (no fix evidence)
    limit: int | None = None
    api_url: str = ""  # empty: the public API (GITHUB_API)
    preset: str = ""
    keywords: tuple[str, ...] = ()

    @property
    def screening(self) -> Screening:
        return Screening(self.preset, self.keywords)

    @property
    def endpoint(self) -> str:
        return self.api_url or GITHUB_API

    def _json(self, **mode_fields: Any) -> dict[str, Any]:
        out: dict[str, Any] = {
            "mode": self.mode,
            "repo": "",
            "state": "",
            "labels": [],
            "exclude_labels": list(self.exclude_labels),
            "since": "",
            "query": "",
            "urls": [],
            "no_comments": self.no_comments,
            "limit": self.limit,
            **_screening_json(self),
        }
        if self.no_links:  # left out when off, as jobs recorded before links existed have no such key
            out["no_links"] = True
        out.update(mode_fields)
        if self.api_url:
            out["api_url"] = self.api_url
        return out

    @staticmethod
    def _common(read: _Reader) -> dict[str, Any]:
        return {
            "exclude_labels": read.texts("exclude_labels"),
            "no_comments": read.flag("no_comments"),
            "no_links": read.flag("no_links"),
            "limit": read.limit("limit"),
            "api_url": read.text("api_url"),
            "preset": read.text("preset"),
            "keywords": read.texts("keywords"),
        }


@dataclass(frozen=True, kw_only=True)
class GitHubRepoParams(_GitHubCommon):
    """Every issue of one repository, optionally by state, labels and last update."""

    mode: ClassVar[str] = "repo"

    repo: str
    state: GitHubState = "all"
    labels: tuple[str, ...] = ()
    since: str = ""  # ISO 8601 date or datetime; empty: no lower bound

    def to_json(self) -> dict[str, Any]:
        return self._json(repo=self.repo, state=self.state, labels=list(self.labels), since=self.since)


@dataclass(frozen=True, kw_only=True)
class GitHubQueryParams(_GitHubCommon):
    """The issues a GitHub search finds."""

    mode: ClassVar[str] = "query"

    query: str

    def to_json(self) -> dict[str, Any]:
        return self._json(query=self.query)


@dataclass(frozen=True, kw_only=True)
class GitHubUrlsParams(_GitHubCommon):
    """Issues by URL: the list itself, or (empty) the URL-list file uploaded with the job."""

    mode: ClassVar[str] = "urls"

    urls: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return self._json(urls=list(self.urls))


GitHubParams = GitHubRepoParams | GitHubQueryParams | GitHubUrlsParams
_GITHUB_KEYS = {
    "mode", "repo", "state", "labels", "exclude_labels", "since", "query", "urls", "no_comments", "no_links",
    "limit", "api_url", "preset", "keywords",
}  # fmt: skip


def github_params_from_json(data: Mapping[str, Any]) -> GitHubParams:
    """The mode is `mode` when stored, else the one option of repo, query and urls that is set."""
    read = _Reader(GITHUB, data, _GITHUB_KEYS)
    repo, query, urls = read.text("repo").strip(), read.text("query").strip(), read.texts("urls")
    given = [name for name, value in (("repo", repo), ("query", query), ("urls", urls)) if value]
    if len(given) > 1:
        raise ImportParamsError(
            f"a GitHub import reads one of repo, query and urls, not {' and '.join(given)}"
        )
    mode = read.text("mode") or (given[0] if given else "")
    common = _GitHubCommon._common(read)
    if mode == "repo":
        if not repo:
            raise ImportParamsError("a GitHub repo import needs the option repo (owner/name)")
        state = read.text("state") or "all"
        if state not in GITHUB_STATES:
            raise ImportParamsError(f"state must be one of {', '.join(GITHUB_STATES)}, not {state!r}")
        return GitHubRepoParams(
            repo=repo,
            state=state,  # type: ignore[arg-type]  # checked against GITHUB_STATES just above
            labels=read.texts("labels"),
            since=read.text("since"),
            **common,
        )
    if read.text("state") or read.texts("labels") or read.text("since"):
        raise ImportParamsError("state, labels and since go with a GitHub repo import")
    if mode == "query":
        if not query:
            raise ImportParamsError("a GitHub query import needs the option query")
        return GitHubQueryParams(query=query, **common)
    if mode == "urls":
        return GitHubUrlsParams(urls=urls, **common)
    if mode:
        raise ImportParamsError(f"unknown GitHub mode {mode!r} (known: repo, query, urls)")
    raise ImportParamsError("a GitHub import needs one of the options repo, query or urls")


@dataclass(frozen=True)
class GitLabParams:
    """A GitLab project's issues (state, labels, updated since), or a list of issue URLs (the upload or
    `urls`), with notes and linked merge requests."""

    kind: ClassVar[str] = GITLAB

    project: str = ""  # group/name; empty: the URLs
    state: str = "all"
    labels: tuple[str, ...] = ()
    since: str = ""
    urls: tuple[str, ...] = ()
    no_comments: bool = False
    no_links: bool = False
    limit: int | None = None
    api_url: str = ""  # empty: gitlab.com (GITLAB_API)
    preset: str = ""
    keywords: tuple[str, ...] = ()

    @property
    def screening(self) -> Screening:
        return Screening(self.preset, self.keywords)

    @property
    def endpoint(self) -> str:
        return self.api_url or GITLAB_API

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "project": self.project,
            "state": self.state,
            "labels": list(self.labels),
            "since": self.since,
            "urls": list(self.urls),
            "no_comments": self.no_comments,
            "no_links": self.no_links,
            "limit": self.limit,
            **_screening_json(self),
        }
        if self.api_url:
            out["api_url"] = self.api_url
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> GitLabParams:
        read = _Reader(
            GITLAB,
            data,
            {"project", "state", "labels", "since", "urls", "no_comments", "no_links", "limit", "api_url",
             "preset", "keywords"},
        )  # fmt: skip
        state = read.text("state") or "all"
        if state not in GITLAB_STATES:
            raise ImportParamsError(f"state must be one of {', '.join(GITLAB_STATES)}, not {state!r}")
        project, urls = read.text("project").strip(), read.texts("urls")
        if project and urls:
            raise ImportParamsError("a GitLab import reads either a project or URLs, not both")
        return cls(
            project=project,
            state=state,
            labels=read.texts("labels"),
            since=read.text("since"),
            urls=urls,
            no_comments=read.flag("no_comments"),
            no_links=read.flag("no_links"),
            limit=read.limit("limit"),
            api_url=read.text("api_url"),
            preset=read.text("preset"),
            keywords=read.texts("keywords"),
        )


@dataclass(frozen=True)
class JiraParams:
    """Jira issues of a JQL query through the REST API at `api_url` (Server/Data Center or Cloud), or, with
    no query, the export file (XML or JSON) uploaded with the job (`api_url` then only names the site)."""

    kind: ClassVar[str] = JIRA

    jql: str = ""
    api_url: str = ""
    filename: str = ""
    limit: int | None = None
    preset: str = ""
    keywords: tuple[str, ...] = ()
    no_links: bool = False  # True: no development panel or remote link reads (a query only)

    @property
    def screening(self) -> Screening:
        return Screening(self.preset, self.keywords)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "jql": self.jql,
            "api_url": self.api_url,
            "filename": self.filename,
            "limit": self.limit,
            **_screening_json(self),
        }
        if self.no_links:  # left out when off, as jobs recorded before links existed have no such key
            out["no_links"] = True
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> JiraParams:
        read = _Reader(JIRA, data, {"jql", "api_url", "filename", "limit", "preset", "keywords", "no_links"})
        jql, api_url = read.text("jql").strip(), read.text("api_url").strip()
        if jql and not api_url:
            raise ImportParamsError("a Jira query import needs the option api_url (the Jira site)")
        return cls(
            jql=jql,
            api_url=api_url,
            filename=read.text("filename"),
            limit=read.limit("limit"),
            preset=read.text("preset"),
            keywords=read.texts("keywords"),
            no_links=read.flag("no_links"),
        )


@dataclass(frozen=True)
class StackExchangeParams:
    """Questions of a Stack Exchange site by tag, through its API, with their answers."""

    kind: ClassVar[str] = STACKEXCHANGE

    tagged: tuple[str, ...]
    match: Match = "any"
    accepted_only: bool = False
    site: str = "stackoverflow"
    limit: int | None = None
    api_url: str = ""  # empty: the public API (STACKEXCHANGE_API)
    preset: str = ""
    keywords: tuple[str, ...] = ()

    @property
    def screening(self) -> Screening:
        # Tags select on the API side; accepted_only also screens what comes back.
        return Screening(self.preset, self.keywords, (), self.accepted_only)

    @property
    def endpoint(self) -> str:
        return self.api_url or STACKEXCHANGE_API

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "tagged": list(self.tagged),
            "match": self.match,
            "accepted_only": self.accepted_only,
            "site": self.site,
            "limit": self.limit,
            **_screening_json(self),
        }
        if self.api_url:
            out["api_url"] = self.api_url
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> StackExchangeParams:
        read = _Reader(
            STACKEXCHANGE,
            data,
            {"tagged", "match", "accepted_only", "site", "limit", "api_url", "preset", "keywords"},
        )
        tagged = read.texts("tagged")
        if not tagged:
            raise ImportParamsError("a Stack Exchange import needs the option tagged (one tag or more)")
        match = read.text("match") or "any"
        if match not in ("any", "all"):
            raise ImportParamsError(f"match must be any or all, not {match!r}")
        return cls(
            tagged=tagged,
            match="all" if match == "all" else "any",
            accepted_only=read.flag("accepted_only"),
            site=read.text("site") or "stackoverflow",
            limit=read.limit("limit"),
            api_url=read.text("api_url"),
            preset=read.text("preset"),
            keywords=read.texts("keywords"),
        )


@dataclass(frozen=True)
class SoDumpParams:
    """The Posts.xml of a Stack Exchange data dump (the job's upload), screened while it streams."""

    kind: ClassVar[str] = SO_DUMP

    tags: tuple[str, ...] = ()
    accepted_only: bool = False
    filename: str = ""
    preset: str = ""
    keywords: tuple[str, ...] = ()
    site_host: str = ""  # empty: SO_DUMP_SITE

    @property
    def screening(self) -> Screening:
        return Screening(self.preset, self.keywords, self.tags, self.accepted_only)

    @property
    def host(self) -> str:
        return self.site_host or SO_DUMP_SITE

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "tags": list(self.tags),
            "accepted_only": self.accepted_only,
            "filename": self.filename,
            **_screening_json(self),
        }
        if self.site_host:
            out["site_host"] = self.site_host
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SoDumpParams:
        read = _Reader(
            SO_DUMP, data, {"tags", "accepted_only", "filename", "preset", "keywords", "site_host"}
        )
        return cls(
            tags=read.texts("tags"),
            accepted_only=read.flag("accepted_only"),
            filename=read.text("filename"),
            preset=read.text("preset"),
            keywords=read.texts("keywords"),
            site_host=read.text("site_host"),
        )


@dataclass(frozen=True)
class HydrateParams:
    """Fetch the text of the study's URL-only items from their sources (`source`: one of HYDRATE_SOURCES,
    empty for all), at most `limit` of them; `api_url` (the command line only, with a source) is that
    source's API root for every item."""

    kind: ClassVar[str] = HYDRATE

    source: str = ""
    limit: int | None = None
    api_url: str = ""

    @property
    def screening(self) -> Screening:
        return Screening()  # the items are the study's already: nothing to screen

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"source": self.source, "limit": self.limit}
        if self.api_url:
            out["api_url"] = self.api_url
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> HydrateParams:
        read = _Reader(HYDRATE, data, {"source", "limit", "api_url"})
        source, api_url = read.text("source"), read.text("api_url")
        if source and source not in HYDRATE_SOURCES:
            raise ImportParamsError(f"source must be one of {', '.join(HYDRATE_SOURCES)}, not {source!r}")
        if api_url and not source:
            raise ImportParamsError("an api_url goes with one source")
        return cls(source=source, limit=read.limit("limit"), api_url=api_url)


ImportParams = (
    FileParams | GitHubParams | StackExchangeParams | SoDumpParams | GitLabParams | JiraParams | HydrateParams
)
KINDS = (FILE, GITHUB, STACKEXCHANGE, SO_DUMP, GITLAB, JIRA, HYDRATE)


def params_from_json(kind: str, data: Mapping[str, Any]) -> ImportParams:
    """The options of a job of `kind` from its stored JSON. Raises ImportParamsError."""
    if kind == FILE:
        return FileParams.from_json(data)
    if kind == GITHUB:
        return github_params_from_json(data)
    if kind == STACKEXCHANGE:
        return StackExchangeParams.from_json(data)
    if kind == SO_DUMP:
        return SoDumpParams.from_json(data)
    if kind == GITLAB:
        return GitLabParams.from_json(data)
    if kind == JIRA:
        return JiraParams.from_json(data)
    if kind == HYDRATE:
        return HydrateParams.from_json(data)
    raise ImportParamsError(f"unknown import kind {kind!r}")


def _screening_json(
    params: FileParams | _GitHubCommon | StackExchangeParams | SoDumpParams | GitLabParams | JiraParams,
) -> dict[str, Any]:
    return {"preset": params.preset, "keywords": list(params.keywords)}


class _Reader:
    """Typed reads of one job's JSON; refuses secrets and unknown keys on creation."""

    def __init__(self, kind: str, data: Mapping[str, Any], known: set[str]) -> None:
        if not isinstance(data, Mapping):
            raise ImportParamsError(f"import options are an object, not {type(data).__name__}")
        secrets = SECRET_KEYS & set(data)
        if secrets:
            raise ImportParamsError(f"import options may not hold secrets ({', '.join(sorted(secrets))})")
        unknown = set(data) - known
        if unknown:
            raise ImportParamsError(
                f"unknown option(s) {', '.join(sorted(map(str, unknown)))} for a {kind} import "
                f"(known: {', '.join(sorted(known))})"
            )
        self.data = data

    def text(self, key: str) -> str:
        value = self.data.get(key)
        if value is None:
            return ""
        if not isinstance(value, str):
            raise ImportParamsError(f"option {key} is text, not {value!r}")
        return value

    def texts(self, key: str) -> tuple[str, ...]:
        value = self.data.get(key)
        if value is None:
            return ()
        if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
            raise ImportParamsError(f"option {key} is a list of texts, not {value!r}")
        return tuple(value)

    def flag(self, key: str) -> bool:
        value = self.data.get(key)
        if value is None:
            return False
        if not isinstance(value, bool):
            raise ImportParamsError(f"option {key} is true or false, not {value!r}")
        return value

    def limit(self, key: str) -> int | None:
        value = self.data.get(key)
        if value is None or value == 0:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ImportParamsError(f"option {key} is a positive whole number, not {value!r}")
        return value
