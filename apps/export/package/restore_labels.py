"""Writing a checked package's rounds and labels into the new study (inside `restore.import_study`'s
transaction): rounds and their items, assignments, annotations with their findings and values, current
decisions with theirs, and every labelled item's Review. Annotations, findings and label values are
written by annotation's writes (`annotation/writes.py`, `restore_annotations`), decisions, gold values and
Reviews by adjudication's (`adjudication/services/writes.py`, `restore_decisions`, `restore_reviews`);
rounds and assignments here with `core.bulk.insert_rows`.

Every table is written in bulk (COPY on PostgreSQL), whose ids come back in row order,
so no row is read back and no query runs per row. The order of the rows (hence of their ids) is the
order the package gives: assignments by round, annotator, position in the round and item; annotations,
findings and values in the order of their assignments. Annotations go in chunks (each chunk's
assignments, then its annotations, findings and values), so no list of every row's id is ever held.

Reviews: a decided item's Review is ``decided``. An undecided item's is what `consolidate_item` would
make of it, computed from the annotations as written (`undecided_reviews`): ``annotating`` while some
assignment of its latest round is open, else the consolidation of its annotations under the study's
rule, a ``disagreement`` with the disagreeing dimensions. Annotations that agree without a decision in
the package (the rule changed after they were consolidated, say) would make a new automatic decision:
those few items go through `consolidate_item` itself.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.utils import timezone

from apps.accounts.models import Study, User
from apps.adjudication.consolidation import PENDING, Findings, consolidate
from apps.adjudication.consolidation import Value as FindingValue
from apps.adjudication.models import ReviewState
from apps.adjudication.queries import merged_targets
from apps.adjudication.services import consolidate_item
from apps.adjudication.services.writes import (
    RestoredDecision,
    RestoredGold,
    RestoredReview,
    restore_decisions,
    restore_reviews,
)
from apps.annotation.models import Assignment, AssignmentStatus, GoldItem, Round, RoundItem, RoundKind
from apps.annotation.writes import RestoredAnnotation, RestoredValue, restore_annotations
from apps.core.bulk import insert_rows

from .labels import PlannedAnnotation, PlannedDecision
from .reading import stamp

ANNOTATION_CHUNK = 5000

Sources = dict[int, list[int]]
"""Decided item's id → the submitted annotations behind its decision (of its round, or of every round)."""
Queued = tuple[int, PlannedAnnotation]
"""An annotation written, with the id of its assignment."""


@dataclass(frozen=True)
class Target:
    """The new study and where the package's names landed in it."""

    study: Study
    items: Mapping[str, int]
    """URL → item id."""
    rounds: Mapping[int, int]
    """Round number → round id."""
    dimensions: Mapping[str, int]
    """Dimension key → dimension id."""
    categories: Mapping[int, int]
    """Category id in the package's codebook index (`PackageCodebook.ids`) → category id."""
    users: Mapping[str, User]

    def user_id(self, name: str | None) -> int | None:
        user = self.users.get(name) if name else None
        return user.pk if user is not None else None

    def round_id(self, number: int | None) -> int | None:
        return self.rounds[number] if number is not None else None

    def category_id(self, category: int | None) -> int | None:
        return self.categories[category] if category is not None else None

    def labels(self, values: Iterable[tuple[str, int | None, int | None]]) -> list[RestoredValue]:
        """A finding's (dimension key, category, original) in the package, as ids of the new study."""
        return [(self.dimensions[d], self.category_id(c), self.category_id(o)) for d, c, o in values]

    def gold(self, values: Iterable[tuple[str, int, int | None]]) -> list[RestoredGold]:
        """A gold finding's (dimension key, category, original) in the package, as ids of the new study."""
        return [(self.dimensions[d], self.categories[c], self.category_id(o)) for d, c, o in values]


@dataclass
class WrittenLabels:
    sources: Sources
    """The submitted annotations behind each decision."""
    undecided: dict[int, list[Queued]]
    """The annotations of each undecided item, to bring its Review up to date."""


def write_rounds(
    study: Study, rounds: list[dict[str, Any]], item_ids: Mapping[str, int], users: Mapping[str, User]
) -> dict[int, int]:
    """The rounds and their items (in the package's order); returns round number → round id."""
    ids = insert_rows(
        Round,
        (
            {
                "study_id": study.pk,
                "number": raw["number"],
                "name": raw.get("name") or "",
                "kind": raw.get("kind") or RoundKind.RELIABILITY,
                "pass_mark": raw.get("pass_mark"),
                "method": raw["method"],
                "seed": raw.get("seed"),
                "requested_size": raw.get("requested_size"),
                "stratify_field": raw.get("stratify_field") or "",
                "params": raw.get("params") or {},
                "created_at": stamp(raw["created_at"]),
                "created_by_id": users[raw["created_by"]].pk if raw.get("created_by") in users else None,
            }
            for raw in rounds
        ),
        returning=True,
    )
    round_ids = {raw["number"]: pk for raw, pk in zip(rounds, ids, strict=True)}
    insert_rows(
        RoundItem,
        (
            {"round_id": round_ids[raw["number"]], "item_id": item_ids[url], "position": position}
            for raw in rounds
            for position, url in enumerate(raw["items"])
        ),
    )
    return round_ids


def write_gold_items(
    study: Study, gold: list[dict[str, Any]], item_ids: Mapping[str, int], users: Mapping[str, User]
) -> int:
    """The study's gold items (decided items marked as gold checks), with who marked them and when."""
    rows = [
        {
            "study_id": study.pk,
            "item_id": item_ids[raw["url"]],
            "marked_by_id": users[raw["marked_by"]].pk if raw.get("marked_by") in users else None,
            "marked_at": stamp(raw["marked_at"]),
        }
        for raw in gold
    ]
    insert_rows(GoldItem, rows)
    return len(rows)


def _queue_order(
    annotations: list[PlannedAnnotation], rounds: list[dict[str, Any]], item_ids: Mapping[str, int]
) -> list[PlannedAnnotation]:
    """By round, annotator, the item's position in the round (0 when it is not listed), the item's id."""
    positions = {
        (raw["number"], url): position for raw in rounds for position, url in enumerate(raw["items"])
    }
    return sorted(
        annotations,
        key=lambda a: (a.round, a.annotator, positions.get((a.round, a.url), 0), item_ids[a.url]),
    )


def write_annotations(
    target: Target,
    annotations: list[PlannedAnnotation],
    rounds: list[dict[str, Any]],
    version: int,
    *,
    decided: Mapping[int, int | None],
    undecided: set[int],
) -> WrittenLabels:
    """Assignments, annotations, findings and values. Each annotator's queue follows the round's order
    (the item's position in the round, then its id); submitted annotations keep their time. Returns the
    source annotations of each `decided` item (id → its decision's round, None for every round) and the
    annotations of the `undecided` items."""
    written = WrittenLabels({}, {})
    order = _queue_order(annotations, rounds, target.items)
    queue: dict[tuple[int, str], int] = defaultdict(int)

    def assignment(a: PlannedAnnotation) -> dict[str, Any]:
        position = queue[(a.round, a.annotator)]
        queue[(a.round, a.annotator)] += 1
        return {
            "study_id": target.study.pk,
            "round_id": target.rounds[a.round],
            "item_id": target.items[a.url],
            "annotator_id": target.users[a.annotator].pk,
            "status": AssignmentStatus.SUBMITTED if a.status == "submitted" else AssignmentStatus.OPEN,
            "position": position,
            "submitted_at": a.submitted_at,
        }

    now = timezone.now()
    for start in range(0, len(order), ANNOTATION_CHUNK):
        chunk = order[start : start + ANNOTATION_CHUNK]
        assignment_ids = insert_rows(
            Assignment, (assignment(a) for a in chunk), returning=True, batch_size=ANNOTATION_CHUNK
        )
        for a, assignment_id in zip(chunk, assignment_ids, strict=True):
            if target.items[a.url] in undecided:
                written.undecided.setdefault(target.items[a.url], []).append((assignment_id, a))
        submitted = [(a, pk) for a, pk in zip(chunk, assignment_ids, strict=True) if a.status == "submitted"]
        _write_submitted(target, submitted, version, now, decided, written.sources)
    return written


def _write_submitted(
    target: Target,
    submitted: list[tuple[PlannedAnnotation, int]],
    version: int,
    now: datetime,
    decided: Mapping[int, int | None],
    sources: Sources,
) -> None:
    annotation_ids = restore_annotations(
        [
            RestoredAnnotation(
                assignment_id=assignment_id,
                memo=a.memo,
                codebook_version=version,
                submitted_at=a.submitted_at,
                findings=[
                    (
                        number,
                        [
                            (
                                target.dimensions[dimension],
                                target.category_id(category),
                                target.category_id(original),
                            )
                            for dimension, category, original in values
                        ],
                    )
                    for number, values in a.findings
                ],
            )
            for a, assignment_id in submitted
        ],
        now,
        batch_size=ANNOTATION_CHUNK,
    )
    for (a, _), annotation_id in zip(submitted, annotation_ids, strict=True):
        item_id = target.items[a.url]
        if item_id in decided and decided[item_id] in (None, a.round):
            sources.setdefault(item_id, []).append(annotation_id)


def write_decisions(target: Target, decisions: list[PlannedDecision], sources: Sources) -> None:
    """Each current decision with its findings, values and source annotations (the submitted annotations
    of its round, or of every round for a decision without one), and its item's ``decided`` Review."""
    restore_decisions(
        [
            RestoredDecision(
                study_id=target.study.pk,
                item_id=target.items[d.url],
                round_id=target.round_id(d.round),
                provenance=d.provenance,
                rationale=d.rationale,
                decided_by_id=target.user_id(d.decided_by),
                decided_at=d.decided_at,
                codebook_version=d.codebook_version,
                findings=[
                    [
                        (
                            target.dimensions[dimension],
                            target.categories[category],
                            target.category_id(original),
                        )
                        for dimension, category, original in values
                    ]
                    for values in d.findings
                ],
                sources=sources.get(target.items[d.url], ()),
            )
            for d in decisions
        ]
    )


def _findings(
    annotation: PlannedAnnotation, category_ids: Mapping[int, int], follow: Mapping[int, int]
) -> Findings:
    """The annotation's labels in `consolidation` form, merged categories followed (as
    `adjudication.queries.item_labels` reads them)."""
    out: list[dict[str, FindingValue]] = []
    for _, values in annotation.findings:
        finding: dict[str, FindingValue] = {}
        for dimension, category, _ in values:
            if category is None:
                finding[dimension] = PENDING
                continue
            followed = _follow(category_ids[category], follow)
            previous = finding.get(dimension)
            finding[dimension] = frozenset({followed}) | (
                previous if isinstance(previous, frozenset) else frozenset()
            )
        out.append(finding)
    return out


def _follow(category_id: int, targets: Mapping[int, int]) -> int:
    seen: set[int] = set()
    while category_id in targets and category_id not in seen:
        seen.add(category_id)
        category_id = targets[category_id]
    return category_id


def undecided_reviews(target: Target, undecided: Mapping[int, list[Queued]]) -> None:
    """The Review of each undecided item (ids ascending), as `consolidate_item` would write it; an item
    whose annotations would make an automatic decision goes through `consolidate_item` itself."""
    study = target.study
    follow = merged_targets(study.pk)
    now = timezone.now()
    rows: list[RestoredReview] = []
    for item_id in sorted(undecided):
        written = undecided[item_id]
        latest = max(a.round for _, a in written)
        in_round = sorted((pair for pair in written if pair[1].round == latest), key=lambda pair: pair[0])
        annotations = [a for _, a in in_round if a.status == "submitted"]
        state, dimensions = ReviewState.ANNOTATING, []
        if len(annotations) == len(in_round):
            result = consolidate(
                [_findings(a, target.categories, follow) for a in annotations], rule=study.consolidation_rule
            )
            if result.decided:  # Reviews keep the order of their items: write those before this one first
                restore_reviews(rows)
                rows = []
                consolidate_item(item_id)
                continue
            state, dimensions = ReviewState.DISAGREEMENT, list(result.disagreeing_dimensions)
        rows.append(RestoredReview(item_id, study.pk, target.rounds[latest], state, now, dimensions))
    restore_reviews(rows)
