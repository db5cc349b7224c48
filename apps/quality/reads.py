"""What the quality report is computed from, read as plain data (`report.py` computes). Nothing here
writes; every read is the study's, and only leads reach it (the views and the command check).

The labels are the annotators' **blind** labels, as agreement reads them (a revealed round's frozen blind
record; `apps/agreement/ratings.py`): an annotator's quality is what they chose on their own, before any
discussion. The final values are the items' current decisions. A constant number of queries whatever the
study's size (the ratings' own, the decisions, the timings), plus the item titles the page shows.

Gold checks (assignments marked ``gold``) never reach the ratings (agreement leaves them out): their
judgements are read here from their current labels (a gold check has no discussion) and marked ``gold``.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from django.db.models import F
from django.db.models.functions import Length

from apps.accounts.models import Study
from apps.adjudication.readers import current_gold
from apps.agreement.ratings import BLIND, RatingsError, load_study_ratings
from apps.annotation.models import Annotation, LabelValue
from apps.corpus.models import Item
from apps.taxonomy.index import CodebookIndex

from .report import PENDING, Judgement, ReportRow, Timing, annotator_rows

CHARACTERS_PER_WORD = 6
"""A word and its space, the typing-test convention: the length in words of an item's body."""


@dataclass(frozen=True)
class ReportData:
    judgements: list[Judgement]
    finals: dict[tuple[int, str], frozenset[str]]
    timings: list[Timing]
    dimensions: tuple[str, ...]
    rounds: tuple[int, ...]


def _top(index: CodebookIndex, category_id: int) -> str:
    if category_id < 0:
        return PENDING
    return index.category(index.ancestor_at_depth(category_id, 1)).key


def load_report_data(study: Study, *, dimension: str | None = None) -> ReportData:
    """The study's judgements, final values and timings (module docstring). `dimension`: one dimension's
    key (RatingsError naming the valid ones when unknown)."""
    ratings = load_study_ratings(study, dimension=dimension, phase=BLIND)
    index = ratings.index
    values: dict[tuple[int, int, int, int], set[str]] = defaultdict(set)
    rows = ratings.rows
    for number, item, annotator, dimension_id, category in zip(
        rows["round"].tolist(),
        rows["item"].tolist(),
        rows["annotator"].tolist(),
        rows["dimension"].tolist(),
        rows["category"].tolist(),
        strict=True,
    ):
        values[number, item, annotator, dimension_id].add(_top(index, category))
    judgements = [
        Judgement(
            annotator=ratings.annotators[annotator],
            round=number,
            item=item,
            dimension=index.dimension(dimension_id).key,
            value=frozenset(value),
        )
        for (number, item, annotator, dimension_id), value in values.items()
    ]
    dimension_ids = (
        {d.id for d in index.all_dimensions} if dimension is None else {index.dimension(dimension).id}
    )
    judgements.extend(_gold_judgements(study, index, dimension_ids))
    finals: dict[tuple[int, str], set[str]] = defaultdict(set)
    for item, dimension_id, category in (
        current_gold()
        .filter(finding__decision__study=study, dimension_id__in=dimension_ids)
        .values_list("finding__decision__item_id", "dimension_id", "category_id")
    ):
        finals[item, index.dimension(dimension_id).key].add(_top(index, category))
    timings = [
        Timing(annotator, number, item, seconds, length // CHARACTERS_PER_WORD)
        for annotator, number, item, seconds, length in Annotation.objects.filter(
            assignment__study=study, submitted_at__isnull=False, imported=False, seconds_spent__isnull=False
        )
        .annotate(length=Length("assignment__item__body"))
        .values_list(
            "assignment__annotator__username",
            "assignment__round__number",
            "assignment__item_id",
            "seconds_spent",
            F("length"),
        )
    ]
    return ReportData(
        judgements=judgements,
        finals={key: frozenset(value) for key, value in finals.items()},
        timings=timings,
        dimensions=tuple(sorted({j.dimension for j in judgements})),
        rounds=ratings.round_numbers,
    )


def _gold_judgements(study: Study, index: CodebookIndex, dimension_ids: set[int]) -> list[Judgement]:
    """The submitted gold checks' judgements in the dimensions (one query)."""
    values: dict[tuple[str, int, int, int], set[str]] = defaultdict(set)
    for annotator, number, item, dimension_id, category in LabelValue.objects.filter(
        finding__annotation__assignment__study=study,
        finding__annotation__assignment__gold=True,
        finding__annotation__submitted_at__isnull=False,
        dimension_id__in=dimension_ids,
    ).values_list(
        "finding__annotation__assignment__annotator__username",
        "finding__annotation__assignment__round__number",
        "finding__annotation__assignment__item_id",
        "dimension_id",
        "category_id",
    ):
        values[annotator, number, item, dimension_id].add(_top(index, -1 if category is None else category))
    return [
        Judgement(annotator, number, item, index.dimension(dimension_id).key, frozenset(value), gold=True)
        for (annotator, number, item, dimension_id), value in values.items()
    ]


def item_titles(item_ids: set[int]) -> dict[int, tuple[str, str]]:
    """Each item's (title or URL, URL), for the page's lists."""
    return {
        pk: (title or url, url)
        for pk, title, url in Item.objects.filter(pk__in=item_ids).values_list("pk", "title", "url")
    }


class ReportError(ValueError):
    """Bad input for the report: the message names it and the valid values."""


def report_rows(
    study: Study, *, round_number: int | None = None, dimension: str | None = None
) -> tuple[ReportData, list[ReportRow]]:
    """The data and the rows of the report (`report.annotator_rows`): every round and the overall rows, or
    round `round_number` only. ReportError for an unknown round or dimension."""
    try:
        data = load_report_data(study, dimension=dimension)
    except RatingsError as exc:
        raise ReportError(str(exc)) from None
    if round_number is not None and round_number not in data.rounds:
        known = ", ".join(str(n) for n in data.rounds) or "none (the study has no rounds)"
        raise ReportError(f"unknown round {round_number}; valid rounds: {known}")
    return data, annotator_rows(data.judgements, data.finals, data.timings, round_number=round_number)
