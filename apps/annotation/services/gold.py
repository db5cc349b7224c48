"""Gold checks and training rounds (docs/quality.md): marking decided items as gold checks, seeding them into
a round, training rounds, their scores, feedback and pass marks.

A gold check is an `Assignment` with ``gold=True``: its item is a gold item (`GoldItem`, a decided item a
lead marked), and its answer is the item's current decision, read through the reader adjudication provides
(`gold_answers.py`). Its submission is recorded like any other, but never consolidated (no
`annotation_submitted` is sent) and never counted in agreement (`Assignment.objects.reliability()`).
Seeded checks have no `RoundItem`: they are not part of the round's sample, only of its annotators' queues,
at random places among their items.

Locking: `mark_gold`, `seed_gold` and `create_training_round` lock the study row, like the other round
services, so two leads seeding at once cannot give one annotator one gold item twice.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from apps.accounts.models import Study, User
from apps.core import sql
from apps.corpus.models import Item
from apps.taxonomy.index import CodebookIndex

from .. import gold_score as gs
from ..gold_answers import gold_answers
from ..models import (
    Assignment,
    AssignmentStatus,
    GoldItem,
    LabelValue,
    Round,
    RoundKind,
    RoundPhase,
    SampleMethod,
)
from .common import AnnotationError, decided_item_ids, lock_study
from .rounds import study_members


class GoldError(AnnotationError):
    """Bad input for marking or seeding gold checks: the message names what and why."""


class TrainingLocked(AnnotationError):
    """A training round's pass mark keeps this round locked for the annotator: the message says why."""


# --- Marking ---------------------------------------------------------------------------------------


def items_by_reference(study: Study, references: Iterable[str]) -> list[int]:
    """The study's item ids for references that are item ids or URLs (GoldError naming every unknown one)."""
    refs = [r.strip() for r in references if r.strip()]
    ids = {int(r) for r in refs if r.isdigit()}
    urls = {r for r in refs if not r.isdigit()}
    found = dict(Item.objects.filter(study=study, pk__in=ids).values_list("pk", "pk"))
    found_urls = dict(Item.objects.filter(study=study, url__in=urls).values_list("url", "pk"))
    unknown = [
        r for r in refs if (r.isdigit() and int(r) not in found) or (not r.isdigit() and r not in found_urls)
    ]
    if unknown:
        raise GoldError(f"no item of study {study.slug} is {', '.join(unknown[:10])}")
    out: list[int] = []
    for r in refs:
        pk = int(r) if r.isdigit() else found_urls[r]
        if pk not in out:
            out.append(pk)
    return out


@dataclass(frozen=True)
class MarkResult:
    marked: int
    already: int


def mark_gold(study: Study, item_ids: Sequence[int], *, actor: User | None = None) -> MarkResult:
    """Mark the study's items `item_ids` as gold checks. All or nothing: an item of another study, or one
    without a decision (a gold check's answer is its decision), is refused (GoldError naming them)."""
    if not item_ids:
        raise GoldError("no item given")
    with transaction.atomic():
        lock_study(study)
        known = set(Item.objects.filter(study=study, pk__in=list(item_ids)).values_list("pk", flat=True))
        unknown = [str(i) for i in item_ids if i not in known]
        if unknown:
            raise GoldError(f"no item of study {study.slug} has the id {', '.join(unknown[:10])}")
        decided = decided_item_ids(item_ids)
        undecided = [str(i) for i in item_ids if i not in decided]
        if undecided:
            raise GoldError(
                f"only decided items can be gold checks (the decision is the answer); not decided: "
                f"{', '.join(undecided[:10])}"
            )
        already = set(GoldItem.objects.filter(item_id__in=list(item_ids)).values_list("item_id", flat=True))
        new = [
            GoldItem(study=study, item_id=i, marked_by=actor)
            for i in dict.fromkeys(item_ids)
            if i not in already
        ]
        GoldItem.objects.bulk_create(new)
    return MarkResult(len(new), len(already))


def unmark_gold(study: Study, item_ids: Sequence[int]) -> int:
    """Unmark the items; gold checks already seeded stay gold checks (their answers stay scored)."""
    deleted, _ = GoldItem.objects.filter(study=study, item_id__in=list(item_ids)).delete()
    return deleted


def gold_item_ids(study: Study) -> set[int]:
    return set(GoldItem.objects.filter(study=study).values_list("item_id", flat=True))


# --- Seeding -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SeedResult:
    round: Round
    seeded: dict[str, int] = field(default_factory=dict)  # annotator → gold checks added now


def seed_gold(
    study: Study,
    number: int,
    per_annotator: int,
    *,
    seed: int,
    annotators: Sequence[str] | None = None,
    actor: User | None = None,
) -> SeedResult:
    """Give each annotator of round `number` (or those named) gold checks until they hold `per_annotator`
    in the round: gold items they were never assigned in the study (so none is recognised), drawn with
    `seed`, placed at random among their items. Run again, it only tops up. Refused (GoldError): an
    unknown round, a round no longer blind, no annotator, or too few gold items for someone."""
    if per_annotator < 0:
        raise GoldError(f"the number of gold checks per annotator must be 0 or more (got {per_annotator})")
    with transaction.atomic():
        lock_study(study)
        round_ = Round.objects.filter(study=study, number=number).first()
        if round_ is None:
            raise GoldError(f"study {study.slug} has no round {number}")
        return _seed(study, round_, per_annotator, seed, annotators)


def _seed(
    study: Study, round_: Round, per_annotator: int, seed: int, annotators: Sequence[str] | None
) -> SeedResult:
    if round_.phase != RoundPhase.BLIND:
        raise GoldError(f"round {round_.number} is revealed: gold checks go into a round still blind")
    if annotators is None:
        names = sorted(
            set(Assignment.objects.filter(round=round_).values_list("annotator__username", flat=True))
        )
        if not names:
            raise GoldError(f"round {round_.number} has no annotators yet: assign it first, or name them")
    else:
        names = sorted(set(annotators))
    users = {u.username: u for u in study_members(study, names)}
    pool = sorted(gold_item_ids(study))
    training = round_.kind == RoundKind.TRAINING
    seen: dict[int, set[int]] = defaultdict(set)
    for annotator_id, item_id, round_id in Assignment.objects.filter(study=study).values_list(
        "annotator_id", "item_id", "round_id"
    ):
        # A training round may reuse an item its annotator labelled before; a check elsewhere may not.
        if not training or round_id == round_.pk:
            seen[annotator_id].add(item_id)
    rows: list[Assignment] = []
    seeded: dict[str, int] = {}
    for name in names:
        user = users[name]
        held = Assignment.objects.filter(round=round_, annotator=user, gold=True).count()
        wanted = max(0, per_annotator - held)
        candidates = [i for i in pool if i not in seen[user.pk]]
        if wanted > len(candidates):
            raise GoldError(
                f"{name} needs {wanted} more gold check(s) in round {round_.number}, but only "
                f"{len(candidates)} gold item(s) are left that {name} was never given: mark more gold items"
            )
        rng = random.Random(f"{seed}:{round_.number}:{name}")
        chosen = sorted(rng.sample(candidates, wanted))
        top = Assignment.objects.filter(round=round_, annotator=user).aggregate(top=Max("position"))["top"]
        span = (top or 0) + 1
        for item_id in chosen:
            position = rng.randrange(span + 1) if not training else rng.randrange(max(1, len(chosen)))
            rows.append(
                Assignment(
                    study=study, round=round_, item_id=item_id, annotator=user, position=position, gold=True
                )
            )
        seeded[name] = wanted
    Assignment.objects.bulk_create(rows)
    gold_params = {**round_.params.get("gold", {}), "per_annotator": per_annotator, "seed": seed}
    round_.params = {**round_.params, "gold": gold_params}
    round_.save(update_fields=["params"])
    return SeedResult(round_, seeded)


def _check_pass_mark(pass_mark: int | None) -> None:
    if pass_mark is not None and not 1 <= pass_mark <= 100:
        raise GoldError(f"the pass mark is a percentage from 1 to 100 (got {pass_mark})")


def create_training_round(
    study: Study,
    annotators: Sequence[str],
    size: int,
    *,
    seed: int,
    pass_mark: int | None = None,
    name: str = "",
    actor: User | None = None,
) -> SeedResult:
    """A new training round (the study's next number) giving each annotator named `size` gold items, drawn
    with `seed`; `pass_mark` (1-100 percent, or None) keeps the study's other rounds locked for each of them
    until their score reaches it. Refused (GoldError): no annotator, a size below 1, a pass mark out of
    range, too few gold items."""
    if size < 1:
        raise GoldError(f"a training round needs at least one item per annotator (got {size})")
    _check_pass_mark(pass_mark)
    if not annotators:
        raise GoldError("a training round needs at least one annotator")
    with transaction.atomic():
        lock_study(study)
        number = (Round.objects.filter(study=study).aggregate(top=Max("number"))["top"] or 0) + 1
        round_ = Round.objects.create(
            study=study,
            number=number,
            name=name or f"Training {number}",
            method=SampleMethod.MANUAL,
            seed=seed,
            requested_size=size,
            kind=RoundKind.TRAINING,
            pass_mark=pass_mark,
            created_by=actor,
            created_at=timezone.now(),
        )
        return _seed(study, round_, size, seed, annotators)


def set_pass_mark(study: Study, number: int, pass_mark: int | None) -> Round:
    """Set (1-100 percent) or clear (None) a training round's pass mark. Raising it locks the study's
    other rounds again for those of its annotators whose score is below it; lowering or clearing it lets
    them through at once (`training_lock` reads it on every request). Refused (GoldError): no such round,
    not a training round, a mark out of range."""
    _check_pass_mark(pass_mark)
    with transaction.atomic():
        round_ = Round.objects.select_for_update().filter(study=study, number=number).first()
        if round_ is None:
            raise GoldError(f"study {study.slug} has no round {number}")
        if round_.kind != RoundKind.TRAINING:
            raise GoldError(f"{round_} is not a training round: only a training round has a pass mark")
        if round_.pass_mark != pass_mark:
            round_.pass_mark = pass_mark
            round_.save(update_fields=["pass_mark"])
    return round_


# --- Scores, feedback and the pass mark ----------------------------------------------------------------


@dataclass(frozen=True)
class ItemChecks:
    assignment_id: int
    item_id: int
    round_id: int
    annotator_id: int
    checks: list[gs.Check]


def _top(index: CodebookIndex) -> Any:
    def top(category_id: int) -> str:
        return index.category(index.ancestor_at_depth(category_id, 1)).key

    return top


def gold_checks(assignments: Iterable[Assignment], index: CodebookIndex) -> list[ItemChecks]:
    """Each submitted gold assignment's scored judgements against its item's current decision (an item no
    longer decided is left out). Two queries whatever the count."""
    submitted = [a for a in assignments if a.gold and a.status == AssignmentStatus.SUBMITTED]
    if not submitted:
        return []
    answers = gold_answers({a.item_id for a in submitted})
    given: dict[int, dict[int, dict[str, list[int | None]]]] = defaultdict(lambda: defaultdict(dict))
    for assignment_id, number, dimension_id, category_id in LabelValue.objects.filter(
        finding__annotation__assignment_id__in=[a.pk for a in submitted]
    ).values_list("finding__annotation__assignment_id", "finding__number", "dimension_id", "category_id"):
        key = index.dimension(dimension_id).key
        given[assignment_id][number].setdefault(key, []).append(category_id)
    top = _top(index)
    out = []
    for a in submitted:
        answer = answers.get(a.item_id)
        if answer is None:
            continue
        mine = gs.judgements(given[a.pk].values(), top)
        gold = gs.judgements(answer.findings, top)
        out.append(ItemChecks(a.pk, a.item_id, a.round_id, a.annotator_id, gs.checks(mine, gold)))
    return out


def training_scores(study: Study, *, user: User | None = None) -> dict[tuple[int, int], gs.Score]:
    """(training round id, annotator id) → the score over the annotator's submitted training items; one
    entry per pair that has assignments (an empty score before any submission). `user`: theirs only."""
    rows = Assignment.objects.filter(study=study, round__kind=RoundKind.TRAINING)
    if user is not None:
        rows = rows.filter(annotator=user)
    assignments = list(rows)
    index = CodebookIndex.for_study(study)
    per: dict[tuple[int, int], list[gs.Check]] = {(a.round_id, a.annotator_id): [] for a in assignments}
    for checked in gold_checks(assignments, index):
        per[checked.round_id, checked.annotator_id].extend(checked.checks)
    return {key: gs.score(checks) for key, checks in per.items()}


# Whether a training round with a pass mark holds items of the user: asked on every submission, autosave and
# workbench view, and almost always no. A prepared statement (apps/core/sql.py, docs/decisions/0004): the
# ORM's join and DISTINCT cost 1-2 ms to compile for a one-row answer.
_GATED = sql.Statement(
    "taxonomist_training_gate",
    f"SELECT 1 FROM {Round._meta.db_table} r WHERE r.study_id = %(study)s AND r.kind = %(training)s "
    f"AND r.pass_mark IS NOT NULL AND EXISTS (SELECT 1 FROM {Assignment._meta.db_table} a "
    "WHERE a.round_id = r.id AND a.annotator_id = %(user)s) LIMIT 1",
    {"study": "bigint", "user": "bigint", "training": "varchar"},
)


def training_lock(user: User, study: Study) -> str | None:
    """Why the study's real rounds are locked for `user`, or None: a training round with a pass mark gives
    them items, and they have not yet submitted them all with a score at the pass mark."""
    if _GATED.one({"study": study.pk, "user": user.pk, "training": RoundKind.TRAINING.value}) is None:
        return None
    rounds = list(
        Round.objects.filter(
            study=study, kind=RoundKind.TRAINING, pass_mark__isnull=False, assignments__annotator=user
        ).distinct()
    )
    scores = training_scores(study, user=user)
    unfinished = set(
        Assignment.objects.filter(round__in=rounds, annotator=user, status=AssignmentStatus.OPEN).values_list(
            "round_id", flat=True
        )
    )
    for round_ in rounds:
        score = scores.get((round_.pk, user.pk), gs.Score(0, 0))
        if round_.pk in unfinished:
            return (
                f"Finish {round_} first: the study's other rounds open once your training score reaches "
                f"its pass mark of {round_.pass_mark} %."
            )
        if not score.passes(round_.pass_mark):
            shown = f"{score.percent:.0f} %" if score.percent is not None else "no score"
            return (
                f"Your score in {round_} is {shown}, below its pass mark of {round_.pass_mark} %: the "
                "study's other rounds stay locked for you. Ask a lead for another training round."
            )
    return None


def refuse_if_locked(user: User, assignment: Assignment) -> None:
    """Raise TrainingLocked (with `training_lock`'s reason) for an assignment of a real round while a
    training round's pass mark locks the study's real rounds for `user`."""
    if assignment.round.kind == RoundKind.TRAINING:
        return
    reason = training_lock(user, assignment.study)
    if reason is not None:
        raise TrainingLocked(reason)


def feedback(assignment: Assignment, index: CodebookIndex) -> dict[str, Any] | None:
    """What a training item's annotator sees once they submitted it: per dimension their answer and the gold
    one (by path of names), whether they match, the lead's rationale, and the definitions of the
    categories they confused. None before the submission or without a current decision."""
    if assignment.status != AssignmentStatus.SUBMITTED or not assignment.gold:
        return None
    answer = gold_answers([assignment.item_id]).get(assignment.item_id)
    if answer is None:
        return None
    given: dict[int, dict[str, list[int | None]]] = defaultdict(dict)
    for number, dimension_id, category_id in LabelValue.objects.filter(
        finding__annotation__assignment=assignment
    ).values_list("finding__number", "dimension_id", "category_id"):
        given[number].setdefault(index.dimension(dimension_id).key, []).append(category_id)
    top = _top(index)
    checks = gs.checks(gs.judgements(given.values(), top), gs.judgements(answer.findings, top))

    def chosen(findings: Iterable[Mapping[str, Sequence[int | None]]], dimension: str) -> list[int | None]:
        return sorted({c for f in findings for c in f.get(dimension, ())}, key=lambda c: (c is None, c or 0))

    rows = []
    confused: dict[int, Any] = {}
    for check in checks:
        mine = chosen(given.values(), check.dimension)
        right = chosen(answer.findings, check.dimension)
        if not check.correct:
            for cid in [*mine, *right]:
                if cid is not None:
                    top_id = index.ancestor_at_depth(cid, 1)
                    for shown in (cid, top_id):
                        confused[shown] = index.category(shown)
        rows.append(
            {
                "dimension": index.dimension(check.dimension).name,
                "given": [index.path(c) if c is not None else "pending" for c in mine] or ["(nothing)"],
                "gold": [index.path(c) for c in right if c is not None],
                "correct": check.correct,
            }
        )
    return {
        "rows": rows,
        "correct": all(c.correct for c in checks),
        "rationale": answer.rationale,
        "definitions": [
            {"path": index.path(c.id), "definition": c.definition, "include": c.include, "exclude": c.exclude}
            for c in sorted(confused.values(), key=lambda c: index.path(c.id))
        ],
    }
