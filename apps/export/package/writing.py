"""Writing a checked package into a new study (inside `restore.import_study`'s transaction)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from django.utils import timezone

from apps.accounts.models import Study, User
from apps.adjudication.models import Decision, DecisionFinding, DecisionValue, Review, ReviewState
from apps.annotation.models import (
    Annotation,
    Assignment,
    AssignmentStatus,
    Finding,
    LabelValue,
    Round,
    RoundItem,
)
from apps.corpus.models import Item, Relevance
from apps.taxonomy.models import (
    Category,
    CategoryStatus,
    Codebook,
    CodebookChange,
    CodebookVersion,
    Dimension,
)

from .codebook_check import PackageCodebook
from .labels import PlannedAnnotation, PlannedDecision
from .reading import Problems, read_time, stamp


def users_for(names: set[str]) -> tuple[dict[str, User], list[str]]:
    """Username → user, creating inactive placeholders for the unknown ones (returned by name)."""
    found = {u.username: u for u in User.objects.filter(username__in=names)}
    missing = sorted(names - set(found))
    placeholders = []
    for name in missing:
        user = User(username=name, is_active=False, display_name=name)
        user.set_unusable_password()
        placeholders.append(user)
    for user in User.objects.bulk_create(placeholders):
        found[user.username] = user
    if missing:  # bulk_create returns no primary keys on some backends
        found.update({u.username: u for u in User.objects.filter(username__in=missing)})
    return found, missing


def write_codebook(
    study: Study, book_data: PackageCodebook, users: Mapping[str, User]
) -> dict[tuple[str, str], Category]:
    data = book_data.data
    now = timezone.now()
    book = Codebook.objects.create(
        study=study, name=data.get("name") or "", version=data["version"], updated_at=now
    )
    dimensions = {}
    for raw in data["dimensions"]:
        dimensions[raw["key"]] = Dimension(
            codebook=book,
            key=raw["key"],
            name=raw["name"],
            description=raw.get("description") or "",
            multiple=raw["multiple"],
            position=raw["position"],
            retired_at=read_time(raw.get("retired_at"), "", Problems(), required=False),
        )
    Dimension.objects.bulk_create(dimensions.values())
    categories: dict[tuple[str, str], Category] = {}
    by_depth: dict[int, list[tuple[dict[str, Any], Category]]] = defaultdict(list)
    index = book_data.index
    for raw in data["categories"]:
        key = (raw["dimension"], raw["key"])
        category = Category(
            dimension=dimensions[raw["dimension"]],
            key=raw["key"],
            name=raw["name"],
            definition=raw.get("definition") or "",
            include=raw.get("include") or "",
            exclude=raw.get("exclude") or "",
            examples=list(raw.get("examples") or []),
            position=raw["position"],
            # A merged category is stored as retired until its target exists (the check constraint).
            status=CategoryStatus.RETIRED if raw["status"] == CategoryStatus.MERGED else raw["status"],
            proposed_by=users.get(raw.get("proposed_by") or ""),
            proposal_reason=raw.get("proposal_reason") or "",
            created_at=read_time(raw.get("created_at"), "", Problems(), required=False) or now,
        )
        categories[key] = category
        by_depth[index.depth(book_data.ids[key])].append((raw, category))
    for depth in sorted(by_depth):
        for raw, category in by_depth[depth]:
            if raw.get("parent") is not None:
                category.parent = categories[(raw["dimension"], raw["parent"])]
        Category.objects.bulk_create([c for _, c in by_depth[depth]])
    merged = []
    for raw in data["categories"]:
        if raw["status"] == CategoryStatus.MERGED:
            category = categories[(raw["dimension"], raw["key"])]
            category.status = CategoryStatus.MERGED
            category.merged_into = categories[(raw["dimension"], raw["merged_into"])]
            merged.append(category)
        elif raw.get("merged_into") is not None:
            category = categories[(raw["dimension"], raw["key"])]
            category.merged_into = categories[(raw["dimension"], raw["merged_into"])]
            merged.append(category)
    Category.objects.bulk_update(merged, ["status", "merged_into"])
    conditioned = []
    for raw in data["dimensions"]:
        condition = raw.get("applies_when")
        if condition is not None:
            dimension = dimensions[raw["key"]]
            dimension.applies_when_category = categories[(condition["dimension"], condition["category"])]
            conditioned.append(dimension)
    Dimension.objects.bulk_update(conditioned, ["applies_when_category"])
    CodebookVersion.objects.bulk_create(
        CodebookVersion(
            codebook=book,
            number=raw["number"],
            snapshot=raw["snapshot"],
            created_at=stamp(raw["created_at"]),
            created_by=users.get(raw.get("created_by") or ""),
        )
        for raw in data["versions"]
    )
    CodebookChange.objects.bulk_create(
        CodebookChange(
            codebook=book,
            version=raw["version"],
            kind=raw["kind"],
            actor=users.get(raw.get("actor") or ""),
            at=stamp(raw["at"]),
            dimension=dimensions.get(raw["dimension"]) if raw.get("dimension") else None,
            category=categories[(raw["category"]["dimension"], raw["category"]["key"])]
            if raw.get("category")
            else None,
            before=raw["before"],
            after=raw["after"],
            note=raw.get("note") or "",
        )
        for raw in data["changes"]
    )
    return categories


def write_screening(
    study: Study, screening: Mapping[str, tuple[str, str, str]], users: Mapping[str, User]
) -> None:
    changed = {url: s for url, s in screening.items() if s != (Relevance.UNSCREENED, "", "")}
    if not changed:
        return
    items = list(Item.objects.filter(study=study, url__in=list(changed)).only("id", "url"))
    for item in items:
        relevance, reason, screener = changed[item.url]
        item.relevance = relevance
        item.relevance_reason = reason
        item.screened_by = users.get(screener)
    Item.objects.bulk_update(items, ["relevance", "relevance_reason", "screened_by"], batch_size=1000)


def write_rounds(
    study: Study, rounds: list[dict[str, Any]], item_ids: Mapping[str, int], users: Mapping[str, User]
) -> dict[int, int]:
    created = Round.objects.bulk_create(
        Round(
            study=study,
            number=raw["number"],
            name=raw.get("name") or "",
            method=raw["method"],
            seed=raw.get("seed"),
            requested_size=raw.get("requested_size"),
            stratify_field=raw.get("stratify_field") or "",
            params=raw.get("params") or {},
            created_at=stamp(raw["created_at"]),
            created_by=users.get(raw.get("created_by") or ""),
        )
        for raw in rounds
    )
    round_ids = dict(Round.objects.filter(study=study).values_list("number", "id"))
    del created
    RoundItem.objects.bulk_create(
        (
            RoundItem(round_id=round_ids[raw["number"]], item_id=item_ids[url], position=position)
            for raw in rounds
            for position, url in enumerate(raw["items"])
        ),
        batch_size=5000,
    )
    return round_ids


def write_annotations(
    study: Study,
    annotations: list[PlannedAnnotation],
    item_ids: Mapping[str, int],
    round_ids: Mapping[int, int],
    dimension_ids: Mapping[str, int],
    category_ids: Mapping[int, int],
    users: Mapping[str, User],
    version: int,
) -> dict[tuple[int, int | None], list[int]]:
    """Assignments, annotations, findings and values; returns (item id, round number) → annotation ids
    of the submitted annotations (the sources of the item's decision)."""
    if not annotations:
        return {}
    positions = {
        (round_id, item_id): position
        for round_id, item_id, position in RoundItem.objects.filter(round__study=study).values_list(
            "round_id", "item_id", "position"
        )
    }
    order = sorted(
        annotations,
        key=lambda a: (
            a.round,
            a.annotator,
            positions.get((round_ids[a.round], item_ids[a.url]), 0),
            item_ids[a.url],
        ),
    )
    queue: dict[tuple[int, str], int] = defaultdict(int)
    assignments = []
    for a in order:
        position = queue[(a.round, a.annotator)]
        queue[(a.round, a.annotator)] += 1
        assignments.append(
            Assignment(
                study=study,
                round_id=round_ids[a.round],
                item_id=item_ids[a.url],
                annotator=users[a.annotator],
                status=AssignmentStatus.SUBMITTED if a.status == "submitted" else AssignmentStatus.OPEN,
                position=position,
                submitted_at=a.submitted_at,
            )
        )
    Assignment.objects.bulk_create(assignments, batch_size=2000)
    assignment_ids = {
        (round_id, item_id, annotator_id): pk
        for pk, round_id, item_id, annotator_id in Assignment.objects.filter(study=study).values_list(
            "id", "round_id", "item_id", "annotator_id"
        )
    }
    submitted = [a for a in order if a.status == "submitted"]
    now = timezone.now()
    rows = [
        Annotation(
            assignment_id=assignment_ids[(round_ids[a.round], item_ids[a.url], users[a.annotator].pk)],
            memo=a.memo,
            codebook_version=version,
            started_at=a.submitted_at or now,
            submitted_at=a.submitted_at,
            updated_at=a.submitted_at or now,
            imported=True,
        )
        for a in submitted
    ]
    Annotation.objects.bulk_create(rows, batch_size=2000)
    annotation_ids = dict(
        Annotation.objects.filter(assignment__study=study).values_list("assignment_id", "id")
    )
    findings = []
    plan: list[tuple[int, int, list[tuple[str, int | None, int | None]]]] = []
    sources: dict[tuple[int, int | None], list[int]] = defaultdict(list)
    for a in submitted:
        annotation_id = annotation_ids[
            assignment_ids[(round_ids[a.round], item_ids[a.url], users[a.annotator].pk)]
        ]
        sources[(item_ids[a.url], a.round)].append(annotation_id)
        sources[(item_ids[a.url], None)].append(annotation_id)
        for number, values in sorted(a.findings.items()):
            findings.append(Finding(annotation_id=annotation_id, number=number))
            plan.append((annotation_id, number, values))
    Finding.objects.bulk_create(findings, batch_size=5000)
    finding_ids = {
        (annotation_id, number): pk
        for pk, annotation_id, number in Finding.objects.filter(
            annotation__assignment__study=study
        ).values_list("id", "annotation_id", "number")
    }
    LabelValue.objects.bulk_create(
        (
            LabelValue(
                finding_id=finding_ids[(annotation_id, number)],
                dimension_id=dimension_ids[dimension],
                category_id=category_ids[category] if category is not None else None,
                original_category_id=category_ids[original] if original is not None else None,
                pending=category is None,
            )
            for annotation_id, number, values in plan
            for dimension, category, original in values
        ),
        batch_size=5000,
    )
    return sources


def write_decisions(
    study: Study,
    decisions: list[PlannedDecision],
    item_ids: Mapping[str, int],
    round_ids: Mapping[int, int],
    dimension_ids: Mapping[str, int],
    category_ids: Mapping[int, int],
    users: Mapping[str, User],
    sources: Mapping[tuple[int, int | None], list[int]],
) -> None:
    if not decisions:
        return
    Decision.objects.bulk_create(
        (
            Decision(
                study=study,
                item_id=item_ids[d.url],
                round_id=round_ids[d.round] if d.round is not None else None,
                provenance=d.provenance,
                rationale=d.rationale,
                decided_by=users.get(d.decided_by) if d.decided_by else None,
                decided_at=d.decided_at,
                is_current=True,
                changes={},
                codebook_version=d.codebook_version,
            )
            for d in decisions
        ),
        batch_size=2000,
    )
    decision_ids = dict(Decision.objects.filter(study=study, is_current=True).values_list("item_id", "id"))
    DecisionFinding.objects.bulk_create(
        (
            DecisionFinding(decision_id=decision_ids[item_ids[d.url]], number=number)
            for d in decisions
            for number in range(1, len(d.findings) + 1)
        ),
        batch_size=5000,
    )
    finding_ids = {
        (decision_id, number): pk
        for pk, decision_id, number in DecisionFinding.objects.filter(decision__study=study).values_list(
            "id", "decision_id", "number"
        )
    }
    DecisionValue.objects.bulk_create(
        (
            DecisionValue(
                finding_id=finding_ids[(decision_ids[item_ids[d.url]], number)],
                dimension_id=dimension_ids[dimension],
                category_id=category_ids[category],
                original_category_id=category_ids[original] if original is not None else None,
            )
            for d in decisions
            for number, values in enumerate(d.findings, start=1)
            for dimension, category, original in values
        ),
        batch_size=5000,
    )
    through = Decision.source_annotations.through
    through.objects.bulk_create(
        (
            through(decision_id=decision_ids[item_ids[d.url]], annotation_id=annotation_id)
            for d in decisions
            for annotation_id in sources.get((item_ids[d.url], d.round), ())
        ),
        batch_size=5000,
    )
    Review.objects.bulk_create(
        (
            Review(
                item_id=item_ids[d.url],
                study=study,
                round_id=round_ids[d.round] if d.round is not None else None,
                state=ReviewState.DECIDED,
                updated_at=d.decided_at,
            )
            for d in decisions
        ),
        batch_size=2000,
    )
