"""Importing gold decisions from a labels CSV (provenance ``imported``): all-or-nothing, idempotent."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from django.db import transaction

from apps.accounts.models import Study, User
from apps.annotation.label_file import LabelFileError, LabelProblem, LabelRow
from apps.annotation.models import Round
from apps.corpus.models import Item
from apps.corpus.records import canonical_url
from apps.taxonomy.index import CodebookIndex, UnknownDimensionError
from apps.taxonomy.tree import LabelError

from ..consolidation import overrides_everyone, same_labels
from ..models import Decision, Provenance, Review, ReviewState
from ..progress import refresh_progress
from ..queries import (
    decision_findings,
    item_labels,
)
from .record import Gold, record_decision, save_review


@dataclass(frozen=True)
class ImportedDecisions:
    """What `import_decisions` did: items in the file, new decisions (of which `replaced` superseded a
    different current decision) and items whose current decision already held the same labels."""

    items: int
    created: int
    replaced: int
    unchanged: int


@dataclass
class _Planned:
    item: Item
    gold: Gold
    rationale: str
    round_id: int | None


def import_decisions(
    study: Study, rows: Sequence[LabelRow], *, actor: User | None = None
) -> ImportedDecisions:
    """Import gold decisions (provenance ``imported``) from parsed labels-CSV rows (docs/design.md §5).

    Items are found by URL (as written or canonical); labels resolve through the codebook (a key or a path
    of names) and must name active categories; `memo` becomes the rationale; `round`, when given, must be a
    round of the study. The import is all-or-nothing: every problem is collected first and raised as one
    LabelFileError (row, field, value) before anything is written. Re-importing is idempotent: an item whose
    current decision holds the same labels gets no new decision; different labels make a new current
    decision superseding the old one, which is kept.
    """
    index = CodebookIndex.for_study(study)
    problems: list[LabelProblem] = []
    items = _items_by_url(study, {r.item for r in rows})
    rounds = dict(Round.objects.filter(study=study).values_list("number", "id"))
    per_item: dict[int, list[LabelRow]] = defaultdict(list)
    for row in rows:
        item = items.get(row.item)
        if item is None:
            problems.append(
                LabelProblem(row.first_row, "item", row.item, "no item with this URL in the study")
            )
            continue
        if row.round is not None and row.round not in rounds:
            problems.append(
                LabelProblem(row.first_row, "round", str(row.round), "no such round in the study")
            )
            continue
        per_item[item.pk].append(row)
    plans: list[_Planned] = []
    by_id = {item.pk: item for item in items.values()}
    for item_id, group in per_item.items():
        plan = _plan_item(by_id[item_id], group, index, rounds, problems)
        if plan is not None:
            plans.append(plan)
    if problems:
        raise LabelFileError(problems)
    created = replaced = unchanged = 0
    with transaction.atomic():
        for plan in plans:
            outcome = _import_one(plan, index, actor)
            created += outcome in ("created", "replaced")
            replaced += outcome == "replaced"
            unchanged += outcome == "unchanged"
        refresh_progress([plan.item.pk for plan in plans])
    return ImportedDecisions(items=len(plans), created=created, replaced=replaced, unchanged=unchanged)


def _items_by_url(study: Study, urls: set[str]) -> dict[str, Item]:
    """URL as written in the file → item, trying the canonical spelling when the exact one is unknown."""
    canonical: dict[str, str] = {}
    for url in urls:
        try:
            canonical[url] = canonical_url(url)
        except ValueError:
            canonical[url] = url
    found = {i.url: i for i in Item.objects.filter(study=study, url__in=set(urls) | set(canonical.values()))}
    return {
        url: found.get(url) or found[canonical[url]]
        for url in urls
        if url in found or canonical[url] in found
    }


def _plan_item(
    item: Item,
    group: list[LabelRow],
    index: CodebookIndex,
    rounds: Mapping[int, int],
    problems: list[LabelProblem],
) -> _Planned | None:
    before = len(problems)
    annotators = list(dict.fromkeys(r.annotator for r in group))
    if len(annotators) > 1:
        second = next(r for r in group if r.annotator == annotators[1])
        problems.append(
            LabelProblem(
                second.first_row,
                "annotator",
                second.annotator,
                f"the item's decision rows name several annotators ({', '.join(map(repr, annotators))}): "
                "a gold decision is one set of labels",
            )
        )
    round_numbers = list(dict.fromkeys(r.round for r in group if r.round is not None))
    if len(round_numbers) > 1:
        second = next(r for r in group if r.round == round_numbers[1])
        problems.append(
            LabelProblem(
                second.first_row, "round", str(second.round), "the item's decision rows name several rounds"
            )
        )
    by_number: dict[int, dict[str, list[tuple[int, int]]]] = {}
    first_rows: dict[int, int] = {}
    for row in sorted(group, key=lambda r: r.finding):
        finding = by_number.setdefault(row.finding, {})
        first_rows[row.finding] = min(first_rows.get(row.finding, row.first_row), row.first_row)
        for label in row.labels:
            try:
                dimension = index.dimension(label.dimension)
            except UnknownDimensionError as exc:
                problems.append(LabelProblem(label.row, "dimension", label.dimension, str(exc)))
                continue
            if dimension.retired:
                problems.append(
                    LabelProblem(label.row, "dimension", label.dimension, "the dimension is retired")
                )
                continue
            try:
                category_id = index.resolve(dimension.key, label.text)
            except LabelError as exc:
                problems.append(LabelProblem(label.row, "label", label.text, str(exc)))
                continue
            category = index.categories[category_id]
            if not category.is_active:
                status = category.status
                if category.merged_into_id in index.categories:
                    status += f" into {index.path(category.merged_into_id)!r}"
                problems.append(
                    LabelProblem(label.row, "label", label.text, f"{index.path(category_id)!r} is {status}")
                )
                continue
            finding.setdefault(dimension.key, []).append((category_id, label.row))
    gold: Gold = []
    for number in sorted(by_number):
        values = by_number[number]
        for key, chosen in values.items():
            dimension = index.dimension(key)
            if not dimension.multiple and len({c for c, _ in chosen}) > 1:
                problems.append(
                    LabelProblem(
                        chosen[1][1],
                        "label",
                        index.categories[chosen[1][0]].key,
                        f"{dimension.name!r} takes one category; finding {number} already has "
                        f"{index.path(chosen[0][0])!r}",
                    )
                )
        ids = {k: frozenset(c for c, _ in v) for k, v in values.items()}
        applying = [d.key for d in index.applicable_dimensions({k: list(v) for k, v in ids.items()})]
        applicable = set(applying)
        for key, chosen in values.items():
            if key not in applicable:
                on = index.dimension(key).applies_when
                when = f" (only when {on[0]!r} is {on[1]!r})" if on else ""
                problems.append(
                    LabelProblem(
                        chosen[0][1],
                        "dimension",
                        key,
                        f"does not apply to finding {number} of this item{when}",
                    )
                )
        if len(problems) == before:  # a gold finding fills every dimension that applies to it
            for key in (k for k in applying if k not in values):
                problems.append(
                    LabelProblem(
                        first_rows[number],
                        "dimension",
                        key,
                        f"finding {number} of item {item.url} leaves this dimension empty, but it applies "
                        "to the finding; add a row with its label",
                    )
                )
        if ids:
            gold.append(ids)
    if len(problems) > before:
        return None
    memos = list(dict.fromkeys(r.memo.strip() for r in group if r.memo.strip()))
    round_id = rounds[round_numbers[0]] if round_numbers else None
    return _Planned(item, gold, "\n\n".join(memos), round_id)


def _import_one(plan: _Planned, index: CodebookIndex, actor: User | None) -> str:
    item = Item.objects.select_for_update().get(pk=plan.item.pk)
    current = Decision.objects.filter(item=item, is_current=True).first()
    labels = item_labels(item)
    if current is not None and same_labels(decision_findings(current), plan.gold):
        outcome = "unchanged"
    else:
        record_decision(
            item,
            plan.gold,
            Provenance.IMPORTED,
            labels,
            previous=current,
            actor=actor,
            rationale=plan.rationale,
            round_id=plan.round_id,
            override=bool(labels.findings) and overrides_everyone(plan.gold, labels.findings),
            index=index,
        )
        outcome = "replaced" if current is not None else "created"
    review, created = Review.objects.select_for_update().get_or_create(
        item=item, defaults={"study_id": item.study_id, "round_id": plan.round_id or labels.round_id}
    )
    save_review(
        review,
        ReviewState.DECIDED,
        list(review.disagreeing_dimensions or []),
        plan.round_id or labels.round_id,
        force=created,
    )
    return outcome
