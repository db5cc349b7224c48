"""The items grid's query: filters, full-text search, sorts and keyset pages, from the URL's parameters.

The URL holds the whole state (a view can be shared or saved): `q` (full-text search), `source`,
`place` (repository or site), `screening`, `progress`, `decision`, `round`, `sort` (a column name,
`-` in front for descending) and `after` (the page's cursor). Every sort is served by an index
`(study, column, id)` (migration 0009), so a page is a range scan of that index starting exactly at the
cursor `(value, id)`, in either direction, wherever it is in a 100,000-item study. `created` may be
empty: those items come after the dated ones (before them, descending), in id order.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Any

from django import forms
from django.db import models
from django.db.models import F, Q
from django.db.models.fields.tuple_lookups import Tuple, TupleGreaterThan, TupleLessThan

from apps.accounts.models import Study

from .models import Item, ItemQuerySet, Progress, Relevance, Source
from .search import matches
from .titles import place_prefixes

PAGE_SIZE = 50
COUNT_CAP = 1000  # matches are counted up to here, then shown as "1,000+"

# Column name in the URL → model field. Labelling columns are for leads only (blindness).
SORTS: dict[str, str] = {
    "id": "id",
    "title": "title",
    "source": "source",
    "place": "url",
    "created": "created_at",
    "screening": "relevance",
    "round": "round_number",
    "progress": "progress",
    "decision": "decision",
}
LEAD_ONLY = frozenset({"round", "progress", "decision"})
NO_DECISION = "none"

DECISION_CHOICES = [
    ("", "Any"),
    (NO_DECISION, "No decision"),
    ("unanimous", "Unanimous"),
    ("majority", "Majority"),
    ("discussed", "Discussed"),
    ("adjudicated", "Adjudicated"),
    ("imported", "Imported"),
]


class GridForm(forms.Form):
    """The grid's filters and sort, read from the query string; an invalid value is ignored."""

    q = forms.CharField(required=False, max_length=200, label="Search title and body")
    source = forms.ChoiceField(required=False, choices=[("", "Any"), *Source.choices])
    place = forms.CharField(required=False, max_length=200, label="Repository or site")
    screening = forms.ChoiceField(required=False, choices=[("", "Any"), *Relevance.choices])
    progress = forms.ChoiceField(required=False, choices=[("", "Any"), *Progress.choices])
    decision = forms.ChoiceField(required=False, choices=DECISION_CHOICES)
    round = forms.IntegerField(required=False, min_value=0, label="Round (0: none)")
    sort = forms.CharField(required=False)

    def __init__(self, *args: Any, lead: bool = True, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lead = lead
        if not lead:
            for name in LEAD_ONLY:
                del self.fields[name]
        for field in self.fields.values():
            field.widget.attrs.setdefault("class", "grid-filter")

    def filters(self) -> dict[str, Any]:
        """The valid filters (an invalid one dropped, never an error: the URL may be old or hand-typed)."""
        self.is_valid()
        return {k: v for k, v in getattr(self, "cleaned_data", {}).items() if v not in ("", None)}


@dataclass(frozen=True)
class Sort:
    column: str  # a key of SORTS
    descending: bool

    @property
    def field(self) -> str:
        return SORTS[self.column]

    @property
    def param(self) -> str:
        return ("-" if self.descending else "") + self.column


def parse_sort(text: str, *, lead: bool) -> Sort:
    column = text.removeprefix("-")
    if column not in SORTS or (column in LEAD_ONLY and not lead):
        return Sort("id", False)
    return Sort(column, text.startswith("-"))


def filtered(study: Study, filters: dict[str, Any]) -> ItemQuerySet:
    """The study's items that pass `filters` (as `GridForm.filters` returns them)."""
    items = Item.objects.in_study(study)
    if filters.get("q"):
        items = items.filter(matches(filters["q"]))
    if filters.get("source"):
        items = items.filter(source=filters["source"])
    if filters.get("place"):
        prefixes = Q()
        for prefix in place_prefixes(filters["place"]):
            prefixes |= Q(url__startswith=prefix)
        items = items.filter(prefixes) if prefixes else items
    if filters.get("screening"):
        items = items.filter(relevance=filters["screening"])
    if filters.get("progress"):
        items = items.filter(progress=filters["progress"])
    if filters.get("decision"):
        items = items.filter(decision="" if filters["decision"] == NO_DECISION else filters["decision"])
    if filters.get("round") is not None:
        items = items.filter(round_number=filters["round"])
    return items


def count_upto(items: ItemQuerySet, cap: int | None = None) -> int:
    """How many items match, counting no further than `cap` (default `COUNT_CAP`) + 1: the rest would cost
    a scan of every match."""
    return items.order_by()[: (COUNT_CAP if cap is None else cap) + 1].count()


def encode_cursor(value: Any, pk: int) -> str:
    text = json.dumps([value.isoformat() if hasattr(value, "isoformat") else value, pk])
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def decode_cursor(text: str, sort: Sort) -> tuple[Any, int] | None:
    """The `(value, id)` a page starts after, or None for a cursor that is not one of ours."""
    try:
        value, pk = json.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
        field = Item._meta.get_field(sort.field)
        assert isinstance(field, models.Field)
        return (None if value is None else field.to_python(value)), int(pk)
    except (ValueError, TypeError, json.JSONDecodeError, forms.ValidationError):
        return None


@dataclass(frozen=True)
class Page:
    items: list[Item]
    next_cursor: str | None


def page(study: Study, items: ItemQuerySet, sort: Sort, cursor: tuple[Any, int] | None) -> Page:
    """One page of `items` in `sort` order, after `cursor`: a range scan of the sort's index."""
    field = Item._meta.get_field(sort.field)
    rows = _rows(study, items, sort, cursor, PAGE_SIZE + 1)
    # Ascending, the undated come after the dated (descending, before them: `_rows` read them first).
    if field.null and len(rows) <= PAGE_SIZE and not (cursor and cursor[0] is None) and not sort.descending:
        rows += _nulls(items, sort, None, PAGE_SIZE + 1 - len(rows))
    more = len(rows) > PAGE_SIZE
    shown = rows[:PAGE_SIZE]
    last = shown[-1] if shown else None
    return Page(shown, encode_cursor(getattr(last, sort.field), last.pk) if more and last else None)


def _rows(
    study: Study, items: ItemQuerySet, sort: Sort, cursor: tuple[Any, int] | None, n: int
) -> list[Item]:
    name = sort.field
    field = Item._meta.get_field(name)
    if cursor is not None and cursor[0] is None and field.null:
        rows = _nulls(items, sort, cursor[1], n)
        if sort.descending and len(rows) < n:  # descending: the dated follow the undated
            rows += list(_ordered(items.filter(**{f"{name}__isnull": False}), sort)[: n - len(rows)])
        return rows
    if sort.descending and field.null and cursor is None:
        rows = _nulls(items, sort, None, n)
        if len(rows) >= n:
            return rows
        return rows + list(_ordered(items.filter(**{f"{name}__isnull": False}), sort)[: n - len(rows)])
    if cursor is not None:
        start: tuple[Any, ...]
        if name == "id":
            key, start = Tuple(F("study_id"), F("id")), (study.pk, cursor[1])
        else:
            key, start = Tuple(F("study_id"), F(name), F("id")), (study.pk, cursor[0], cursor[1])
        items = items.filter((TupleLessThan if sort.descending else TupleGreaterThan)(key, start))
    elif field.null:
        items = items.filter(**{f"{name}__isnull": False})
    return list(_ordered(items, sort)[:n])


def _nulls(items: ItemQuerySet, sort: Sort, after: int | None, n: int) -> list[Item]:
    rest = items.filter(**{f"{sort.field}__isnull": True})
    if after is not None:
        rest = rest.filter(id__lt=after) if sort.descending else rest.filter(id__gt=after)
    return list(rest.order_by("-id" if sort.descending else "id")[:n])


def _ordered(items: ItemQuerySet, sort: Sort) -> ItemQuerySet:
    sign = "-" if sort.descending else ""
    if sort.field == "id":
        return items.order_by(f"{sign}study_id", f"{sign}id")
    return items.order_by(f"{sign}study_id", f"{sign}{sort.field}", f"{sign}id")


GRID_COLUMNS = (
    "id", "url", "title", "source", "relevance", "created_at", "round_number", "progress", "decision",
)  # fmt: skip


def grid_fields(items: ItemQuerySet) -> ItemQuerySet:
    """Only the columns a grid row shows (not the bodies)."""
    return items.only(*GRID_COLUMNS)
