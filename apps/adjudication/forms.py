"""Forms of the disagreement queue and the side-by-side decision page."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from django import forms

from apps.annotation.payload import payload_from_form
from apps.core.widgets import QuickSelect
from apps.taxonomy.index import CodebookIndex

from .queries import QueueFilters
from .sheet import Composed

SORT_CHOICES = [("oldest", "Oldest first"), ("category", "By category")]
#: The queue's filter fields (the page cursor `after` aside): what links from the queue carry along.
QUEUE_FILTERS = ("round", "dimension", "category", "annotator", "with_annotator", "sort")


class QueueFilterForm(forms.Form):
    """The queue's filters (GET). Choices are the study's own rounds, dimensions, categories and
    annotators, so an id from another study is a validation error, never a leak."""

    round = forms.TypedChoiceField(
        coerce=int, required=False, empty_value=None, label="Round", widget=QuickSelect
    )
    dimension = forms.ChoiceField(required=False, label="Dimension", widget=QuickSelect)
    category = forms.TypedChoiceField(
        coerce=int, required=False, empty_value=None, label="Category", widget=QuickSelect
    )
    annotator = forms.TypedChoiceField(
        coerce=int, required=False, empty_value=None, label="Annotator", widget=QuickSelect
    )
    with_annotator = forms.TypedChoiceField(
        coerce=int, required=False, empty_value=None, label="with", widget=QuickSelect
    )
    sort = forms.ChoiceField(choices=SORT_CHOICES, required=False, label="Sort", widget=QuickSelect)
    after = forms.CharField(required=False, widget=forms.HiddenInput)

    def __init__(
        self,
        data: Mapping[str, Any] | None,
        *,
        index: CodebookIndex,
        rounds: Sequence[tuple[int, str]],
        annotators: Sequence[tuple[int, str]],
    ) -> None:
        super().__init__(data)
        self.index = index
        blank = [("", "Any")]
        self.fields["round"].choices = blank + [(str(pk), label) for pk, label in rounds]  # type: ignore[attr-defined]
        self.fields["dimension"].choices = blank + [(d.key, d.name) for d in index.dimensions]  # type: ignore[attr-defined]
        grouped: list[tuple[str, Any]] = [("", "Any")]
        for d in index.dimensions:
            options = [
                (str(c.id), "\u00a0\u00a0" * (depth - 1) + c.name) for c, depth in index.options(d.key)
            ]
            grouped.append((d.name, options))
        self.fields["category"].choices = grouped  # type: ignore[attr-defined]
        people = blank + [(str(pk), name) for pk, name in annotators]
        self.fields["annotator"].choices = people  # type: ignore[attr-defined]
        self.fields["with_annotator"].choices = people  # type: ignore[attr-defined]

    def filters(self) -> QueueFilters:
        """The validated filters; call after `is_valid()`. A category includes its subcategories."""
        data = self.cleaned_data
        categories: tuple[int, ...] = ()
        if data.get("category") is not None:
            category = self.index.category(data["category"])
            tree = self.index.tree(self.index.dimension(category.dimension_id).key, active_only=False)
            categories = (category.id, *tree.descendants(category.id))
        people = tuple(dict.fromkeys(p for p in (data.get("annotator"), data.get("with_annotator")) if p))
        return QueueFilters(
            round_id=data.get("round"),
            dimension=data.get("dimension") or None,
            category_ids=categories,
            annotators=people,
            sort=data.get("sort") or "oldest",
        )

    def cursor(self) -> tuple[Any, int] | None:
        """The keyset cursor of `after`, or None (a malformed cursor restarts at the first page)."""
        return decode_cursor(self.cleaned_data.get("after") or "", self.cleaned_data.get("sort") or "oldest")


def encode_cursor(cursor: tuple[Any, int]) -> str:
    key, item_id = cursor
    text = json.dumps([key.isoformat() if isinstance(key, datetime) else key, item_id])
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def decode_cursor(text: str, sort: str) -> tuple[Any, int] | None:
    if not text:
        return None
    try:
        key, item_id = json.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
        if not isinstance(item_id, int) or not isinstance(key, str):
            return None
        return (datetime.fromisoformat(key) if sort == "oldest" else key), item_id
    except (ValueError, TypeError, binascii.Error):
        return None


class DecisionForm(forms.Form):
    """The scalar fields of a decision; the findings come from the `v-<n>-<dimension>` inputs (the
    workbench's convention, `payload.payload_from_form`)."""

    expected_decision = forms.IntegerField(required=False, widget=forms.HiddenInput)
    rationale = forms.CharField(
        required=False,
        max_length=20_000,
        widget=forms.Textarea(
            attrs={"rows": 3, "placeholder": "Why this decision (required when it overrides everyone)"}
        ),
        help_text="Kept in the item's history and exported with the dataset.",
    )


def posted_findings(data: Mapping[str, Sequence[str]]) -> Composed:
    """The findings posted by the decision form, in page order, as dimension key → category keys."""
    payload = payload_from_form(data)
    out: Composed = []
    for finding in payload["findings"]:
        values = finding.get("values", {})
        out.append({k: [v] if isinstance(v, str) else list(v) for k, v in values.items()})
    return out
