"""Forms of the import page (one per source) and the item list's filters.

Each import form turns its fields into the job's options (:meth:`ImportForm.params`, one of the
dataclasses of :mod:`apps.corpus.params`), the same the import commands build, so a job looks the
same whichever way it was started. No form takes a token or a key, and an API root only from the
operator's list (GITLAB_API_URLS, JIRA_API_URLS): credentials and endpoints belong to the server
(environment of the worker), never to a browser request.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from django import forms
from django.conf import settings
from django.core.files.uploadedfile import UploadedFile

from .models import ImportKind
from .params import (
    GITLAB_API,
    FileParams,
    GitHubQueryParams,
    GitHubRepoParams,
    GitHubUrlsParams,
    GitLabParams,
    HydrateParams,
    ImportParams,
    JiraParams,
    SoDumpParams,
    StackExchangeParams,
)
from .screening import PRESETS

_REPO = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
_LIST_HELP = "One per line."


def split_lines(text: str) -> list[str]:
    """Non-empty stripped lines, repeats dropped, order kept."""
    return list(dict.fromkeys(line.strip() for line in text.splitlines() if line.strip()))


def preset_choices(prefix: str) -> list[tuple[str, str]]:
    return [("", "None: use the options below")] + [
        (name, name) for name in sorted(PRESETS) if name.startswith(prefix)
    ]


class ImportForm(forms.Form):
    """Fields and checks every source shares: a screening preset or own keywords, not both."""

    kind: str = ""
    preset_prefix = "tosem23"

    preset = forms.ChoiceField(
        required=False,
        label="Screening rule set",
        help_text="A published selection (TOSEM 2023). Leave empty to screen with your own keywords.",
    )
    keywords = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        label="Keywords",
        help_text="Keep only items whose title or body holds one of these words or phrases. " + _LIST_HELP,
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["preset"].choices = preset_choices(self.preset_prefix)  # type: ignore[attr-defined]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("preset") and split_lines(data.get("keywords") or ""):
            self.add_error("keywords", "Use either the rule set or your own keywords, not both.")
        return data

    def screening_params(self) -> dict[str, Any]:
        """The screening options every kind of params takes, as keyword arguments."""
        return {
            "preset": self.cleaned_data.get("preset") or "",
            "keywords": tuple(split_lines(self.cleaned_data["keywords"])),
        }

    def params(self) -> ImportParams:
        raise NotImplementedError

    def upload(self) -> UploadedFile[bytes] | None:
        """The file to store with the job, if this source takes one."""
        return None


def check_upload(
    upload: UploadedFile[bytes] | None, extensions: tuple[str, ...]
) -> UploadedFile[bytes] | None:
    if upload is None:
        return None
    suffix = Path(upload.name or "").suffix.lower()
    if suffix not in extensions:
        raise forms.ValidationError(
            f"Choose a {', '.join(extensions)} file (this one ends in {suffix or 'nothing'})."
        )
    limit = int(settings.MAX_IMPORT_UPLOAD_BYTES)
    if upload.size is not None and upload.size > limit:
        raise forms.ValidationError(f"The file is larger than the limit of {limit // (1024 * 1024)} MB.")
    return upload


class FileImportForm(ImportForm):
    kind = ImportKind.FILE

    file = forms.FileField(
        label="File",
        help_text="CSV, JSON, JSONL or a URL list (.txt). Column url is required; unknown columns are kept.",
    )
    format = forms.ChoiceField(
        required=False,
        choices=[
            ("", "From the extension"),
            ("csv", "CSV"),
            ("json", "JSON"),
            ("jsonl", "JSONL"),
            ("urls", "URL list"),
        ],
    )

    def clean_file(self) -> UploadedFile[bytes] | None:
        return check_upload(self.cleaned_data.get("file"), (".csv", ".json", ".jsonl", ".txt"))

    def params(self) -> FileParams:
        upload = self.cleaned_data["file"]
        return FileParams(
            format=self.cleaned_data["format"] or "", filename=upload.name, **self.screening_params()
        )

    def upload(self) -> UploadedFile[bytes] | None:
        file: UploadedFile[bytes] | None = self.cleaned_data.get("file")
        return file


class GitHubImportForm(ImportForm):
    kind = ImportKind.GITHUB
    preset_prefix = "tosem23-github"

    mode = forms.ChoiceField(
        choices=[("repo", "A repository"), ("query", "A search query"), ("urls", "A list of issue URLs")],
        initial="repo",
        widget=forms.RadioSelect,
        label="Issues from",
    )
    repo = forms.CharField(required=False, label="Repository", help_text="owner/name, e.g. horovod/horovod")
    state = forms.ChoiceField(
        required=False, choices=[("all", "All"), ("open", "Open"), ("closed", "Closed")], initial="all"
    )
    labels = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 2}),
        label="With all of these labels",
        help_text=_LIST_HELP,
    )
    exclude_labels = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 2}),
        label="Without these labels",
        help_text="One per line; * matches anything (e.g. type:*).",
    )
    since = forms.DateField(
        required=False, label="Updated since", widget=forms.DateInput(attrs={"type": "date"})
    )
    query = forms.CharField(
        required=False,
        label="Search query",
        help_text="GitHub issue search, e.g. repo:keras-team/keras is:closed gpu",
    )
    urls = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 4}),
        label="Issue URLs",
        help_text="One per line. Issues that cannot be fetched are reported and the rest imported.",
    )
    no_comments = forms.BooleanField(required=False, label="Do not fetch comments")
    no_links = forms.BooleanField(
        required=False,
        label="Do not fetch linked pull requests and commits",
        help_text="By default each issue's timeline is read for the pull requests and commits that fixed it.",
    )
    limit = forms.IntegerField(required=False, min_value=1, label="At most this many issues")

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        mode = data.get("mode")
        if mode == "repo" and not _REPO.match(data.get("repo") or ""):
            self.add_error("repo", "Write the repository as owner/name.")
        if mode == "query" and not (data.get("query") or "").strip():
            self.add_error("query", "Write a search query.")
        if mode == "urls" and not split_lines(data.get("urls") or ""):
            self.add_error("urls", "Paste at least one issue URL.")
        return data

    def params(self) -> GitHubRepoParams | GitHubQueryParams | GitHubUrlsParams:
        data = self.cleaned_data
        mode = data["mode"]
        common: dict[str, Any] = {
            "exclude_labels": tuple(split_lines(data["exclude_labels"])),
            "no_comments": bool(data.get("no_comments")),
            "no_links": bool(data.get("no_links")),
            "limit": data.get("limit"),
            **self.screening_params(),
        }
        if mode == "repo":
            since = data.get("since")
            return GitHubRepoParams(
                repo=data["repo"].strip(),
                state=data.get("state") or "all",
                labels=tuple(split_lines(data["labels"])),
                since=since.isoformat() if since else "",
                **common,
            )
        if mode == "query":
            return GitHubQueryParams(query=data["query"].strip(), **common)
        return GitHubUrlsParams(urls=tuple(split_lines(data["urls"])), **common)


class GitLabImportForm(ImportForm):
    """A GitLab project's issues, or issue URLs. The API is one of settings.GITLAB_API_URLS: a lead never
    points the worker (and its GITLAB_TOKEN) at a host the operator did not list."""

    kind = ImportKind.GITLAB

    api_url = forms.ChoiceField(
        label="GitLab instance", help_text="gitlab.com or an instance the operator listed."
    )
    project = forms.CharField(
        required=False, label="Project", help_text="group/name, e.g. gitlab-org/gitlab-runner"
    )
    state = forms.ChoiceField(
        required=False, choices=[("all", "All"), ("opened", "Open"), ("closed", "Closed")], initial="all"
    )
    labels = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 2}), label="With all labels"
    )
    since = forms.DateField(
        required=False, label="Updated since", widget=forms.DateInput(attrs={"type": "date"})
    )
    urls = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 4}),
        label="Or issue URLs",
        help_text="One per line, instead of a project. Issues that cannot be fetched are reported.",
    )
    no_comments = forms.BooleanField(required=False, label="Do not fetch notes")
    no_links = forms.BooleanField(required=False, label="Do not fetch merge requests (fix evidence)")
    limit = forms.IntegerField(required=False, min_value=1, label="At most this many issues")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        urls = list(getattr(settings, "GITLAB_API_URLS", None) or [GITLAB_API])
        self.fields["api_url"].choices = [(url, url) for url in urls]  # type: ignore[attr-defined]
        self.fields["api_url"].initial = urls[0]

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        project, urls = (data.get("project") or "").strip(), split_lines(data.get("urls") or "")
        if bool(project) == bool(urls):
            self.add_error("project", "Give a project (group/name) or a list of issue URLs, one of the two.")
        elif project and not re.fullmatch(r"[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)+", project):
            self.add_error("project", "Write the project as group/name (subgroups: group/sub/name).")
        return data

    def params(self) -> GitLabParams:
        data = self.cleaned_data
        since = data.get("since")
        return GitLabParams(
            project=(data.get("project") or "").strip(),
            state=data.get("state") or "all",
            labels=tuple(split_lines(data.get("labels") or "")),
            since=since.isoformat() if since else "",
            urls=tuple(split_lines(data.get("urls") or "")),
            no_comments=bool(data.get("no_comments")),
            no_links=bool(data.get("no_links")),
            limit=data.get("limit"),
            api_url="" if data["api_url"] == GITLAB_API else data["api_url"],
            **self.screening_params(),
        )


def allowed_sites(setting: str) -> list[str]:
    """The API roots the operator lets a browser or API request send the worker to (settings list)."""
    return [
        str(url).strip().rstrip("/") for url in getattr(settings, setting, None) or [] if str(url).strip()
    ]


def allowed_site(url: str, setting: str) -> str | None:
    """The listed entry `url` names (scheme and host compared case-insensitively, trailing slash ignored),
    or None when the operator did not list it."""
    wanted = _site_key(url)
    return next((site for site in allowed_sites(setting) if _site_key(site) == wanted), None)


def _site_key(url: str) -> tuple[str, str, str]:
    parts = urlsplit(url.strip())
    return parts.scheme.lower(), parts.netloc.lower(), parts.path.rstrip("/")


class JiraImportForm(ImportForm):
    """A JQL search of a Jira site the operator lists in settings.JIRA_API_URLS (the worker sends its
    JIRA_TOKEN there, so a lead never names another host), or a Jira XML or JSON export file."""

    kind = ImportKind.JIRA
    field_order = ["jql", "api_url", "file", "no_links", "limit", "preset", "keywords"]

    jql = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 2}),
        label="JQL query",
        help_text="Issues of a search, e.g. project = MESOS AND type = Bug AND resolution = Fixed.",
    )
    api_url = forms.URLField(
        required=False,
        label="Jira site",
        widget=forms.URLInput(attrs={"list": "jira-sites"}),
        help_text="For a query: one of the sites the operator lists. For a JSON export without 'self' URLs: "
        "the site it comes from.",
    )
    file = forms.FileField(
        required=False, label="Or a Jira export", help_text="The XML (RSS) or JSON export of an issue search."
    )
    no_links = forms.BooleanField(
        required=False,
        label="Do not fetch development links",
        help_text="By default a query reads each issue's development panel and remote links for its commits "
        "and pull requests.",
    )
    limit = forms.IntegerField(required=False, min_value=1, label="At most this many issues")

    def clean_file(self) -> UploadedFile[bytes] | None:
        return check_upload(self.cleaned_data.get("file"), (".xml", ".json"))

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        jql, upload = (data.get("jql") or "").strip(), data.get("file")
        site = (data.get("api_url") or "").strip()
        if bool(jql) == bool(upload) and "file" not in self.errors:
            self.add_error("jql", "Give a JQL query (with its Jira site) or an export file, one of the two.")
        elif jql and not site:
            self.add_error("api_url", "A query needs the Jira site to search.")
        elif jql and allowed_site(site, "JIRA_API_URLS") is None:
            listed = ", ".join(allowed_sites("JIRA_API_URLS")) or "none"
            self.add_error(
                "api_url",
                f"{site} is not a Jira site this server may search (JIRA_API_URLS lists: {listed}).",
            )
        return data

    def params(self) -> JiraParams:
        data = self.cleaned_data
        jql, upload = (data.get("jql") or "").strip(), data.get("file")
        site = (data.get("api_url") or "").strip()
        return JiraParams(
            jql=jql,
            api_url=(allowed_site(site, "JIRA_API_URLS") or site) if jql else site,
            filename=Path(upload.name or "").name if upload else "",
            limit=data.get("limit"),
            no_links=bool(data.get("no_links")) if jql else False,
            **self.screening_params(),
        )

    def upload(self) -> UploadedFile[bytes] | None:
        file: UploadedFile[bytes] | None = self.cleaned_data.get("file")
        return file


class StackExchangeImportForm(ImportForm):
    kind = ImportKind.STACKEXCHANGE
    preset_prefix = "tosem23-stackoverflow"

    tagged = forms.CharField(label="Tags", help_text="Questions with any of these tags, separated by spaces.")
    match = forms.ChoiceField(
        choices=[("any", "Any of the tags"), ("all", "All of the tags")], initial="any", label="Match"
    )
    accepted_only = forms.BooleanField(required=False, label="Only questions with an accepted answer")
    site = forms.CharField(
        initial="stackoverflow", help_text="The Stack Exchange site, e.g. stackoverflow, datascience."
    )
    limit = forms.IntegerField(required=False, min_value=1, label="At most this many questions")

    def clean_tagged(self) -> list[str]:
        tags = list(dict.fromkeys(re.split(r"[\s,;]+", self.cleaned_data["tagged"].strip())))
        tags = [tag for tag in tags if tag]
        if not tags:
            raise forms.ValidationError("Give at least one tag.")
        return tags

    def clean_site(self) -> str:
        site = str(self.cleaned_data["site"]).strip().lower()
        if not re.fullmatch(r"[a-z0-9.-]+", site):
            raise forms.ValidationError(
                "A site name is letters, digits, dots and dashes, e.g. stackoverflow."
            )
        return site

    def params(self) -> StackExchangeParams:
        data = self.cleaned_data
        return StackExchangeParams(
            tagged=tuple(data["tagged"]),
            match="all" if data["match"] == "all" else "any",
            accepted_only=bool(data.get("accepted_only")),
            site=data["site"],
            limit=data.get("limit"),
            **self.screening_params(),
        )


class SoDumpImportForm(ImportForm):
    kind = ImportKind.SO_DUMP
    preset_prefix = "tosem23-stackoverflow"

    file = forms.FileField(label="Posts.xml", help_text="The Posts.xml of a Stack Exchange data dump.")
    tags = forms.CharField(
        required=False, label="Tags", help_text="Keep questions with any of these tags (spaces)."
    )
    accepted_only = forms.BooleanField(required=False, label="Only questions with an accepted answer")

    def clean_file(self) -> UploadedFile[bytes] | None:
        return check_upload(self.cleaned_data.get("file"), (".xml",))

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if data.get("preset") and (data.get("tags") or "").strip():
            self.add_error("tags", "Use either the rule set or your own tags, not both.")
        return data

    def params(self) -> SoDumpParams:
        data = self.cleaned_data
        return SoDumpParams(
            tags=tuple(tag for tag in re.split(r"[\s,;]+", data["tags"].strip()) if tag),
            accepted_only=bool(data.get("accepted_only")),
            filename=data["file"].name,
            **self.screening_params(),
        )

    def upload(self) -> UploadedFile[bytes] | None:
        file: UploadedFile[bytes] | None = self.cleaned_data.get("file")
        return file


class HydrateForm(ImportForm):
    """Fetch the text of the study's URL-only items (no screening: they are the study's already). No API
    root: GitLab and Jira items are fetched only from the instances the operator lists."""

    kind = ImportKind.HYDRATE
    preset = None  # type: ignore[assignment]  # removes the inherited field: nothing to screen
    keywords = None  # type: ignore[assignment]

    source = forms.ChoiceField(
        required=False,
        choices=[
            ("", "Every source"),
            ("github", "GitHub"),
            ("stackexchange", "Stack Overflow / Stack Exchange"),
            ("gitlab", "GitLab"),
            ("jira", "Jira"),
        ],
        label="Items from",
    )
    limit = forms.IntegerField(required=False, min_value=1, label="At most this many items this run")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        forms.Form.__init__(self, *args, **kwargs)  # ImportForm's fills the screening fields it has not

    def clean(self) -> dict[str, Any]:
        return forms.Form.clean(self) or {}

    def params(self) -> HydrateParams:
        return HydrateParams(
            source=self.cleaned_data.get("source") or "", limit=self.cleaned_data.get("limit")
        )


IMPORT_FORMS: dict[str, type[ImportForm]] = {
    ImportKind.FILE: FileImportForm,
    ImportKind.GITHUB: GitHubImportForm,
    ImportKind.STACKEXCHANGE: StackExchangeImportForm,
    ImportKind.SO_DUMP: SoDumpImportForm,
    ImportKind.GITLAB: GitLabImportForm,
    ImportKind.JIRA: JiraImportForm,
    ImportKind.HYDRATE: HydrateForm,
}
