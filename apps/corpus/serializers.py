"""Shapes of the corpus API: items (with their sanitized HTML), comments, import jobs and import requests.

Item text is untrusted: `body` is returned as imported (JSON-escaped, never rendered here) and
`body_html` is the sanitizer's output (`rendering`), the only form a client should put into a page.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from apps.core.api import QueryFlag
from apps.core.jobs import display_status

from .models import ImportJob, ImportKind, Item, ItemComment, Relevance, Source
from .services.links import fix_evidence


class ItemSummarySerializer(serializers.ModelSerializer[Item]):
    class Meta:
        model = Item
        fields = ["id", "url", "title", "source", "external_id", "relevance", "created_at", "tags"]


class CommentSerializer(serializers.ModelSerializer[ItemComment]):
    class Meta:
        model = ItemComment
        fields = [
            "position", "author", "body", "body_format", "body_html", "is_answer", "is_accepted", "score",
            "created_at",
        ]  # fmt: skip


class LinkFileSerializer(serializers.Serializer[Any]):
    filename = serializers.CharField()
    additions = serializers.IntegerField()
    deletions = serializers.IntegerField()
    patch = serializers.CharField(help_text="Unified diff as GitHub sent it (untrusted text, never HTML).")
    truncated = serializers.BooleanField(default=False)


class LinkSerializer(serializers.Serializer[Any]):
    """Fix evidence: a pull request, commit, merge request or accepted answer, with its files.

    `provenance`: closed_by_commit, cross_reference, closing_keyword, manual, development_panel or
    remote_link (Jira), or accepted_answer (an accepted Stack Exchange answer, which is one of the item's
    answers rather than a stored link). A Jira development panel's commit lists its files with their
    counts but no patch."""

    kind = serializers.CharField(help_text="pull_request, commit, merge_request or answer.")
    url = serializers.URLField()
    title = serializers.CharField()
    state = serializers.CharField()
    provenance = serializers.CharField()
    found_at = serializers.DateTimeField(allow_null=True)
    note = serializers.CharField()
    files = LinkFileSerializer(many=True)


class ItemSerializer(serializers.ModelSerializer[Item]):
    comments = CommentSerializer(many=True, read_only=True)
    links = serializers.SerializerMethodField()

    class Meta:
        model = Item
        fields = [
            "id", "url", "title", "source", "external_id", "relevance", "relevance_reason", "created_at",
            "imported_at", "updated_at", "tags", "metadata", "body", "body_format", "body_html", "comments",
            "links",
        ]  # fmt: skip

    @extend_schema_field(LinkSerializer(many=True))
    def get_links(self, item: Item) -> list[dict[str, Any]]:
        return LinkSerializer(fix_evidence(item), many=True).data  # type: ignore[return-value]


class ItemFilterSerializer(serializers.Serializer[Any]):
    """Query parameters of the item list."""

    q = serializers.CharField(required=False, max_length=200, help_text="Title or URL contains (any case).")
    source = serializers.ChoiceField(choices=Source.choices, required=False)  # type: ignore[assignment]
    relevance = serializers.ChoiceField(choices=Relevance.choices, required=False)
    round = serializers.IntegerField(required=False, min_value=1, help_text="Items of this round number.")
    roundless = QueryFlag(required=False, help_text="Only items in no round yet.")


class ImportJobSerializer(serializers.ModelSerializer[ImportJob]):
    status = serializers.SerializerMethodField(help_text="`stalled` when a running job's worker died.")
    percent = serializers.IntegerField(read_only=True, allow_null=True)
    created_by = serializers.CharField(source="created_by.username", read_only=True, default=None)

    class Meta:
        model = ImportJob
        fields = [
            "id", "kind", "status", "params", "progress_done", "progress_total", "percent", "message",
            "error", "created", "updated", "unchanged", "filtered", "failed", "filtered_by", "errors",
            "created_by", "created_at", "started_at", "finished_at",
        ]  # fmt: skip

    def get_status(self, job: ImportJob) -> str:
        return display_status(job)


class ImportRequestSerializer(serializers.Serializer[Any]):
    """Documents the request of POST imports/: `kind`, then the options of that kind's import form (the
    page's form validates them, so API and page accept exactly the same options). Lists may be JSON
    arrays or newline-separated text. `file` needs multipart/form-data."""

    kind = serializers.ChoiceField(choices=ImportKind.choices)
    file = serializers.FileField(
        required=False, help_text="kind=file (.csv/.json/.jsonl/.txt), so_dump (.xml), jira (.xml/.json)."
    )
    format = serializers.CharField(
        required=False,
        allow_blank=True,
        help_text="kind=file: csv, json, jsonl or urls; empty: from the extension.",
    )
    preset = serializers.CharField(required=False, allow_blank=True, help_text="A screening rule set name.")
    keywords = serializers.ListField(child=serializers.CharField(), required=False)
    mode = serializers.ChoiceField(choices=["repo", "query", "urls"], required=False, help_text="GitHub.")
    repo = serializers.CharField(required=False, allow_blank=True, help_text="GitHub owner/name.")
    state = serializers.ChoiceField(
        choices=["all", "open", "opened", "closed"], required=False, help_text="GitHub: open; GitLab: opened."
    )
    labels = serializers.ListField(child=serializers.CharField(), required=False)
    exclude_labels = serializers.ListField(child=serializers.CharField(), required=False)
    since = serializers.DateField(required=False)
    query = serializers.CharField(required=False, allow_blank=True)
    urls = serializers.ListField(child=serializers.CharField(), required=False)
    no_comments = serializers.BooleanField(required=False)
    project = serializers.CharField(required=False, allow_blank=True, help_text="GitLab group/name.")
    api_url = serializers.CharField(
        required=False,
        help_text="GitLab: one of the instances the operator listed (GITLAB_API_URLS); Jira with jql: one "
        "of the sites listed in JIRA_API_URLS.",
    )
    jql = serializers.CharField(
        required=False, allow_blank=True, help_text="Jira: a JQL query (with api_url)."
    )
    source = serializers.CharField(  # type: ignore[assignment]  # a field, as in ItemFilterSerializer
        required=False,
        allow_blank=True,
        help_text="kind=hydrate: github, stackexchange, gitlab or jira (empty: the URL-only items of all).",
    )
    no_links = serializers.BooleanField(
        required=False,
        help_text="GitHub, GitLab, Jira: skip the fix evidence (pull requests, commits, merge requests).",
    )
    limit = serializers.IntegerField(required=False, min_value=1)
    tagged = serializers.CharField(required=False, help_text="Stack Exchange tags, space-separated.")
    match = serializers.ChoiceField(choices=["any", "all"], required=False)
    accepted_only = serializers.BooleanField(required=False)
    site = serializers.CharField(required=False)
    tags = serializers.CharField(required=False, allow_blank=True, help_text="Dump: tags, space-separated.")
