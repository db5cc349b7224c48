"""Items mined from GitHub, Stack Overflow and files, and the jobs that import them."""

from __future__ import annotations

from django.contrib.auth.models import AnonymousUser
from django.db import models
from django.db.models import Q
from django.db.models.fields.tuple_lookups import Tuple, TupleGreaterThan, TupleLessThan
from django.utils import timezone

from apps.accounts.models import Study, User
from apps.core.models import Job

from .titles import readable_title


class Source(models.TextChoices):
    GITHUB = "github", "GitHub"
    STACKOVERFLOW = "stackoverflow", "Stack Overflow"
    STACKEXCHANGE = "stackexchange", "Stack Exchange (other site)"
    GITLAB = "gitlab", "GitLab"
    JIRA = "jira", "Jira"
    FILE = "file", "File"
    OTHER = "other", "Other"


class BodyFormat(models.TextChoices):
    MARKDOWN = "markdown", "Markdown"
    HTML = "html", "HTML"
    TEXT = "text", "Plain text"


class Relevance(models.TextChoices):
    UNSCREENED = "unscreened", "Not screened"
    RELEVANT = "relevant", "Relevant"
    IRRELEVANT = "irrelevant", "Irrelevant"


class Progress(models.TextChoices):
    """Where an item stands in labelling, as the items grid shows and sorts it (kept on the item by
    `apps.adjudication.progress`, which reads rounds, assignments, reviews and decisions)."""

    UNSAMPLED = "unsampled", "Not in a round"
    WAITING = "waiting", "In a round, not assigned"
    LABELLING = "labelling", "Being labelled"
    LABELLED = "labelled", "Labelled"
    DISAGREEMENT = "disagreement", "Disagreement open"
    DECIDED = "decided", "Decided"


class ItemQuerySet(models.QuerySet["Item"]):
    def visible_to(self, user: User | AnonymousUser) -> ItemQuerySet:
        """Items of the studies the user belongs to. Annotators' *labels* are scoped elsewhere."""
        if not user.is_authenticated:
            return self.none()
        return self.filter(study__memberships__user=user)

    def in_study(self, study: Study) -> ItemQuerySet:
        return self.filter(study=study)

    def relevant(self) -> ItemQuerySet:
        return self.exclude(relevance=Relevance.IRRELEVANT)

    def unrendered(self) -> ItemQuerySet:
        return self.filter(rendered_at__isnull=True)

    def url_only(self) -> ItemQuerySet:
        """Items with no text yet (a URL list's lines, a replication package's URLs): no body, no comment
        or answer, and nothing read from a source's API (`raw` holds no issue or question object). The
        title is not asked: a file may give one without the text."""
        # Each nested test is guarded by its key's presence: on PostgreSQL `raw -> 'issue'` is NULL when
        # absent, and a NULL inside NOT (...) would drop the row instead of keeping it.
        fetched = (
            (Q(raw__has_key="issue") & Q(raw__issue__has_any_keys=["number", "iid", "key"]))
            | (Q(raw__has_key="question") & Q(raw__question__has_key="question_id"))
            | Q(raw__has_key="xml_key")
        )
        with_comments = ItemComment.objects.filter(item=models.OuterRef("pk"))
        return self.filter(body="").exclude(fetched).exclude(models.Exists(with_comments))

    # Keyset pages: a row comparison on (study, id), which only the `item_study_keyset` index serves, so
    # the database starts where the page begins instead of walking the primary key past other studies.

    def after_id(self, study: Study, after: int) -> ItemQuerySet:
        """The study's items with an id above `after`, in id order."""
        key = Tuple(models.F("study_id"), models.F("id"))
        return self.filter(TupleGreaterThan(key, (study.pk, after))).order_by("study_id", "id")

    def before_id(self, study: Study, before: int) -> ItemQuerySet:
        """The study's items with an id below `before`, in descending id order."""
        key = Tuple(models.F("study_id"), models.F("id"))
        return self.filter(TupleLessThan(key, (study.pk, before))).order_by("-study_id", "-id")

    def count_upto(self, study: Study, cap: int) -> int:
        """How many of the study's items match, counting no further than `cap` + 1."""
        return self.after_id(study, 0)[: cap + 1].count()  # ordered: the planner walks the keyset index


def item_text_fields(prefix: str = "") -> tuple[str, ...]:
    """The item's text columns (kilobytes a row), which a list of items showing titles never reads: for
    `defer(*item_text_fields("item__"))` on a query of rows that select their item."""
    return tuple(f"{prefix}{name}" for name in ("body", "body_html", "raw", "metadata"))


class Item(models.Model):
    """One mined issue or post. Identified in a study by its canonical URL.

    `body` is untrusted text from the internet; only `body_html` (rendered and sanitized at import) is
    ever shown. `raw` keeps the source payload for replication.
    """

    # No index of its own: (study, url) leads with study, and a lone study index misled PostgreSQL's
    # planner into scanning a study's items for each URL looked up during an import (bench/).
    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="items", db_index=False)
    url = models.URLField(max_length=500)
    source = models.CharField(max_length=32, choices=Source.choices, default=Source.OTHER)
    external_id = models.CharField(max_length=200, blank=True)
    title = models.CharField(max_length=500, blank=True)
    body = models.TextField(blank=True)
    body_format = models.CharField(max_length=16, choices=BodyFormat.choices, default=BodyFormat.MARKDOWN)
    body_html = models.TextField(blank=True)
    rendered_at = models.DateTimeField(null=True, blank=True)
    tags = models.JSONField(default=list, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    raw = models.JSONField(default=dict, blank=True)
    content_hash = models.CharField(max_length=64, blank=True, help_text="Detects unchanged re-imports.")
    created_at = models.DateTimeField(null=True, blank=True, help_text="When the post was written.")
    imported_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)
    relevance = models.CharField(max_length=16, choices=Relevance.choices, default=Relevance.UNSCREENED)
    relevance_reason = models.CharField(max_length=500, blank=True)
    # Indexed only where set (`item_screened_by`): the import writes none, so a new item takes no entry.
    screened_by = models.ForeignKey(
        User, null=True, blank=True, on_delete=models.SET_NULL, related_name="+", db_index=False
    )
    # Denormalised from annotation and adjudication so that the grid sorts and filters on an index of the
    # item alone (docs/performance.md); written only through `services.progress.set_progress`.
    # Defaults in the database too: COPY writers that name only their own columns (the benchmark's
    # generator, older restores) leave these to it.
    round_number = models.PositiveIntegerField(
        default=0, db_default=0, help_text="The item's latest round; 0 for none."
    )
    progress = models.CharField(
        max_length=16,
        choices=Progress.choices,
        default=Progress.UNSAMPLED,
        db_default=Progress.UNSAMPLED.value,
    )
    decision = models.CharField(
        max_length=16, blank=True, default="", db_default="", help_text="Provenance of the current decision."
    )

    objects = ItemQuerySet.as_manager()

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["study", "url"], name="item_unique_url_per_study"),
        ]
        indexes = [
            models.Index(fields=["study", "source", "external_id"], name="item_source_extid"),
            # The render pass's items, in id order; an item imported rendered (every one the import writes
            # with its renderer) takes no entry: an import writes one index entry less per item.
            models.Index(
                fields=["study", "id"], name="item_unrendered", condition=Q(rendered_at__isnull=True)
            ),
            # The user's screening decisions (SET NULL when a user is deleted): set items only, as above.
            models.Index(
                fields=["screened_by"], name="item_screened_by", condition=Q(screened_by__isnull=False)
            ),
            # Keyset pages of a study's items: `(study_id, id) > (s, after)` starts exactly at the page.
            models.Index(fields=["study", "id"], name="item_study_keyset"),
            # The grid's sorts: `(study, column, id) > (s, value, after)` starts exactly at the page, in
            # either direction; each also serves its column's filter (docs/performance.md).
            models.Index(fields=["study", "relevance", "id"], name="item_grid_relevance"),
            models.Index(fields=["study", "title", "id"], name="item_grid_title"),
            models.Index(fields=["study", "source", "id"], name="item_grid_source"),
            models.Index(fields=["study", "created_at", "id"], name="item_grid_created"),
            models.Index(fields=["study", "round_number", "id"], name="item_grid_round"),
            models.Index(fields=["study", "progress", "id"], name="item_grid_progress"),
            models.Index(fields=["study", "decision", "id"], name="item_grid_decision"),
        ]

    def __str__(self) -> str:
        return self.display_title

    @property
    def display_title(self) -> str:
        """The title, or until the text is fetched a readable name from the URL (`owner/repo#N`)."""
        return self.title or readable_title(self.url)


class ItemComment(models.Model):
    """A GitHub comment or a Stack Overflow answer, in thread order."""

    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="comments")
    position = models.PositiveIntegerField()
    external_id = models.CharField(max_length=100, blank=True)
    author = models.CharField(max_length=150, blank=True)
    body = models.TextField(blank=True)
    body_format = models.CharField(max_length=16, choices=BodyFormat.choices, default=BodyFormat.MARKDOWN)
    body_html = models.TextField(blank=True)
    is_answer = models.BooleanField(default=False)
    is_accepted = models.BooleanField(default=False)
    score = models.IntegerField(null=True, blank=True)
    created_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["item", "position"]
        constraints = [
            models.UniqueConstraint(fields=["item", "position"], name="comment_unique_position"),
        ]

    def __str__(self) -> str:
        return f"{self.item_id}#{self.position}"


class LinkKind(models.TextChoices):
    PULL_REQUEST = "pull_request", "Pull request"
    COMMIT = "commit", "Commit"
    MERGE_REQUEST = "merge_request", "Merge request"
    ANSWER = "answer", "Accepted answer"


class LinkProvenance(models.TextChoices):
    CLOSED_BY_COMMIT = "closed_by_commit", "Closed by this commit"
    CROSS_REFERENCE = "cross_reference", "Cross-referenced"
    CLOSING_KEYWORD = "closing_keyword", "Closing keyword (\u201cFixes #N\u201d)"
    MANUAL = "manual", "Added by hand"
    DEVELOPMENT_PANEL = "development_panel", "Jira development panel"
    REMOTE_LINK = "remote_link", "Jira remote link"


class ItemLinkQuerySet(models.QuerySet["ItemLink"]):
    def of_item(self, item: Item) -> ItemLinkQuerySet:
        return self.filter(item=item)

    def found(self) -> ItemLinkQuerySet:
        """Links an importer found (the ones a re-import may replace); manual ones are kept."""
        return self.exclude(provenance=LinkProvenance.MANUAL)


class ItemLink(models.Model):
    """Fix evidence of an item: a pull request, commit or merge request, with its files and patches.

    `files` is a list of `{"filename", "additions", "deletions", "patch", "status", "truncated"}`;
    patches are untrusted text, shown only through the diff renderer and the sanitizer. `note` says
    what is missing (patches cut, a pull request that is gone). One row per (item, url).
    """

    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="links")
    kind = models.CharField(max_length=16, choices=LinkKind.choices)
    url = models.URLField(max_length=500)
    title = models.CharField(max_length=500, blank=True)
    state = models.CharField(max_length=32, blank=True)
    body = models.TextField(blank=True)
    provenance = models.CharField(max_length=24, choices=LinkProvenance.choices)
    found_at = models.DateTimeField(null=True, blank=True, help_text="When the source says it happened.")
    files = models.JSONField(default=list, blank=True)
    note = models.CharField(max_length=500, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    added_by = models.ForeignKey(User, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    objects = ItemLinkQuerySet.as_manager()

    class Meta:
        ordering = ["item", "found_at", "id"]
        constraints = [models.UniqueConstraint(fields=["item", "url"], name="itemlink_unique_url_per_item")]

    def __str__(self) -> str:
        return f"{self.item_id}: {self.url}"

    @property
    def additions(self) -> int:
        return sum(int(f.get("additions") or 0) for f in self.files if isinstance(f, dict))

    @property
    def deletions(self) -> int:
        return sum(int(f.get("deletions") or 0) for f in self.files if isinstance(f, dict))


class ImportKind(models.TextChoices):
    FILE = "file", "File (CSV, JSON, JSONL, URL list)"
    GITHUB = "github", "GitHub REST API"
    STACKEXCHANGE = "stackexchange", "Stack Exchange API"
    SO_DUMP = "so_dump", "Stack Overflow data dump (Posts.xml)"
    GITLAB = "gitlab", "GitLab REST API"
    JIRA = "jira", "Jira (REST API or export file)"
    HYDRATE = "hydrate", "Fetch URL-only items"


class ImportJobQuerySet(models.QuerySet["ImportJob"]):
    def visible_to(self, user: User | AnonymousUser) -> ImportJobQuerySet:
        if not user.is_authenticated:
            return self.none()
        return self.filter(study__memberships__user=user)


class ImportJob(Job):
    """One import run. Counts are per item; `errors` keeps the first errors with their row or URL."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="import_jobs")
    created_by = models.ForeignKey(User, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    kind = models.CharField(max_length=16, choices=ImportKind.choices)
    params = models.JSONField(default=dict, blank=True, help_text="Options, never secrets.")
    upload = models.CharField(max_length=500, blank=True, help_text="Path of the uploaded file, if any.")
    created = models.PositiveIntegerField(default=0)
    updated = models.PositiveIntegerField(default=0)
    unchanged = models.PositiveIntegerField(default=0)
    filtered = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)
    filtered_by = models.JSONField(default=dict, blank=True)
    errors = models.JSONField(default=list, blank=True)
    waiting_until = models.DateTimeField(null=True, blank=True, help_text="Rate-limit wait in progress.")

    objects = ImportJobQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["study", "-created_at"], name="importjob_study_recent")]
        constraints = [
            models.CheckConstraint(
                condition=Q(status__in=["queued", "running", "succeeded", "failed", "cancelled"]),
                name="importjob_status_valid",
            )
        ]

    def __str__(self) -> str:
        return f"Import #{self.pk} ({self.kind}) {self.status}"


class SavedViewQuerySet(models.QuerySet["SavedView"]):
    def of(self, user: User | AnonymousUser, study: Study) -> SavedViewQuerySet:
        """The user's own saved views in the study (nobody else's)."""
        if not user.is_authenticated:
            return self.none()
        return self.filter(user=user, study=study)


class SavedView(models.Model):
    """A named filter and sort of the items grid, one user's, in one study: the grid's query string."""

    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="+")
    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="+")
    name = models.CharField(max_length=100)
    query = models.CharField(max_length=2000, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    objects = SavedViewQuerySet.as_manager()

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["user", "study", "name"], name="savedview_unique_name"),
        ]

    def __str__(self) -> str:
        return self.name
