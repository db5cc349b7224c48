"""Rounds: reproducible samples, items added by hand or filter, relevance screening, balanced assignment."""

from __future__ import annotations

import re
import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import Count, Q
from django.db.models.fields.json import KT
from django.utils import timezone

from apps.accounts.models import Membership, Study, User
from apps.core import generations
from apps.corpus.models import Item, ItemQuerySet, Relevance
from apps.corpus.services.grid_writes import ScreeningError, screen

from ..models import (
    Annotation,
    Assignment,
    AssignmentStatus,
    Round,
    RoundItem,
    RoundKind,
    SampleMethod,
)
from ..sampling import SamplingError, assign_balanced, draw_sample, rebalance_open
from ..signals import items_moved
from ..writes import delete_drafts
from .common import RoundError, lock_study

STRATUM_MISSING = "(none)"
_METADATA_KEY = re.compile(r"^[A-Za-z0-9_-]{1,100}$")


@dataclass(frozen=True)
class SampleResult:
    round: Round
    drawn: int
    population: int
    created: bool  # False: the round was already drawn with these parameters; nothing changed


def eligible_items(study: Study) -> ItemQuerySet:
    """Items that can be drawn into a new round: in no round yet, and not screened irrelevant."""
    return Item.objects.filter(study=study).relevant().filter(round_items__isnull=True)


def _strata(items: ItemQuerySet, stratify_field: str) -> dict[int, str]:
    field_name = stratify_field.strip()
    if field_name == "source":
        pairs = items.values_list("id", "source")
    elif field_name in ("tag", "tags"):
        pairs = items.annotate(stratum=KT("tags__0")).values_list("id", "stratum")
    else:
        key = field_name.removeprefix("metadata.")
        if not _METADATA_KEY.match(key):
            raise RoundError(
                f"Cannot stratify by {stratify_field!r}: use 'source', 'tag', or a metadata key made of "
                "letters, digits, '_' and '-' (e.g. 'framework' or 'metadata.framework')."
            )
        pairs = items.annotate(stratum=KT(f"metadata__{key}")).values_list("id", "stratum")
    strata = {
        item_id: (str(value) if value not in (None, "") else STRATUM_MISSING) for item_id, value in pairs
    }
    if strata and field_name not in ("source",) and set(strata.values()) == {STRATUM_MISSING}:
        raise RoundError(f"No eligible item has a value for {stratify_field!r}: nothing to stratify by.")
    return strata


def draw_round(
    study: Study,
    *,
    number: int,
    size: int,
    seed: int,
    stratify_field: str = "",
    actor: User | None = None,
) -> SampleResult:
    """Draw `size` eligible items (`eligible_items`) into round `number`, uniformly or stratified by
    `stratify_field` (``source``, ``tag`` — an item's first tag — or a metadata key), with
    `sampling.draw_sample` and `seed`: the same study state and seed give the same sample.

    The round records method, seed, size, stratify field, the population size and the drawn count per
    stratum (`Round.params`), for the paper. Drawing again into a round already drawn with the same
    parameters changes nothing (`created=False`); a round holding other items is refused. RoundError
    names the problem (size above the population, unknown field, ...).
    """
    if number < 1:
        raise RoundError(f"Round numbers start at 1 (got {number}).")
    if size < 1:
        raise RoundError(f"The sample size must be at least 1 (got {size}).")
    method = SampleMethod.STRATIFIED if stratify_field.strip() else SampleMethod.UNIFORM
    with transaction.atomic():
        lock_study(study)
        existing = Round.objects.filter(study=study, number=number).first()
        if existing is not None:
            n_items = existing.round_items.count()
            if n_items:
                same = (
                    existing.method == method
                    and existing.seed == seed
                    and existing.requested_size == size
                    and existing.stratify_field == stratify_field.strip()
                )
                if same:
                    return SampleResult(existing, n_items, existing.params.get("population", 0), False)
                seed_text = "" if existing.seed is None else f", seed {existing.seed}"
                raise RoundError(
                    f"Round {number} already holds {n_items} items (method "
                    f"{existing.get_method_display()}{seed_text}); choose another round number."
                )
        items = eligible_items(study)
        population = sorted(items.values_list("id", flat=True))
        if size > len(population):
            raise RoundError(
                f"Cannot draw {size} items: only {len(population)} items of the study are in no round and "
                "not screened irrelevant."
            )
        strata = _strata(items, stratify_field) if stratify_field.strip() else None
        try:
            chosen = draw_sample(population, size, seed, strata)
        except SamplingError as exc:
            raise RoundError(str(exc)) from exc
        params: dict[str, Any] = {"population": len(population)}
        if strata is not None:
            drawn: dict[str, int] = defaultdict(int)
            available: dict[str, int] = defaultdict(int)
            for item_id in chosen:
                drawn[strata[item_id]] += 1
            for label in strata.values():
                available[label] += 1
            params["strata"] = {
                k: {"population": available[k], "drawn": drawn.get(k, 0)} for k in sorted(available)
            }
        values = {
            "method": method, "seed": seed, "requested_size": size,
            "stratify_field": stratify_field.strip(), "params": params,
        }  # fmt: skip
        if existing is None:
            round_ = Round.objects.create(study=study, number=number, created_by=actor, **values)
        else:
            for name, value in values.items():
                setattr(existing, name, value)
            existing.save(update_fields=list(values))
            round_ = existing
        RoundItem.objects.bulk_create(
            [RoundItem(round=round_, item_id=item_id, position=i) for i, item_id in enumerate(chosen)]
        )
        items_moved.send(sender=Round, item_ids=list(chosen))
    return SampleResult(round_, len(chosen), len(population), True)


@dataclass(frozen=True)
class AddResult:
    round: Round
    added: int
    already_in_round: int
    irrelevant: int
    round_created: bool


def add_items_to_round(
    study: Study,
    number: int,
    item_ids: Iterable[int],
    *,
    method: str = SampleMethod.MANUAL,
    actor: User | None = None,
    description: Mapping[str, Any] | None = None,
) -> AddResult:
    """Put items of the study into round `number` (created, with `method`, if missing), after its
    current items. Items already in the round and items screened irrelevant are skipped and counted;
    ids that are not items of the study are refused (RoundError naming them). `description` (e.g. the
    filter used) is appended to `Round.params["added"]`, so the round says how it was made."""
    ids = list(dict.fromkeys(item_ids))
    if number < 1:
        raise RoundError(f"Round numbers start at 1 (got {number}).")
    if not ids:
        raise RoundError("No items to add.")
    with transaction.atomic():
        lock_study(study)
        found = dict(Item.objects.filter(study=study, pk__in=ids).values_list("pk", "relevance"))
        unknown = [i for i in ids if i not in found]
        if unknown:
            raise RoundError(f"Not items of study {study.slug}: {', '.join(map(str, unknown[:20]))}.")
        round_, created = Round.objects.get_or_create(
            study=study, number=number, defaults={"method": method, "created_by": actor}
        )
        present = set(
            RoundItem.objects.filter(round=round_, item_id__in=ids).values_list("item_id", flat=True)
        )
        irrelevant = [i for i in ids if found[i] == Relevance.IRRELEVANT and i not in present]
        new = [i for i in ids if i not in present and found[i] != Relevance.IRRELEVANT]
        start = (
            RoundItem.objects.filter(round=round_)
            .order_by("-position")
            .values_list("position", flat=True)
            .first()
        )
        offset = 0 if start is None else start + 1
        RoundItem.objects.bulk_create(
            [RoundItem(round=round_, item_id=item_id, position=offset + i) for i, item_id in enumerate(new)]
        )
        if new:
            params = dict(round_.params)
            params.setdefault("added", []).append(
                {"method": str(method), "count": len(new), "at": timezone.now().isoformat(),
                 **(dict(description) if description else {})}
            )  # fmt: skip
            round_.params = params
            round_.save(update_fields=["params"])
            items_moved.send(sender=Round, item_ids=new)
    return AddResult(round_, len(new), len(present), len(irrelevant), created)


def matching_items(
    study: Study, *, source: str = "", tag: str = "", text: str = "", only_unassigned: bool = True
) -> ItemQuerySet:
    """Items of the study matching a filter (lead page "add by filter"): source, a tag (exact, any
    case), words in the title; by default only items in no round and not screened irrelevant."""
    items = eligible_items(study) if only_unassigned else Item.objects.filter(study=study).relevant()
    if source:
        items = items.filter(source=source)
    if tag:
        # JSON containment is not supported on SQLite, so the tag is matched on the serialised list.
        items = items.filter(tags__icontains=f'"{tag.strip()}"')
    for word in text.split():
        items = items.filter(title__icontains=word)
    return items.order_by("id")


def screen_items(
    study: Study, item_ids: Iterable[int], relevance: str, *, reason: str = "", actor: User | None = None
) -> int:
    """Record a relevance decision on items of the study; an irrelevant item needs a reason and is kept
    out of later samples. Returns how many items changed."""
    if relevance not in Relevance.values:
        raise RoundError(f"Unknown relevance {relevance!r}; choose one of {', '.join(Relevance.values)}.")
    ids = list(item_ids)
    try:
        with transaction.atomic():
            return screen(Item.objects.filter(study=study, pk__in=ids), relevance, reason=reason, actor=actor)
    except ScreeningError as exc:
        raise RoundError(str(exc)) from exc


# --- Assignment ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AssignResult:
    round: Round
    created: int
    moved: int
    loads: Mapping[str, int]  # annotator → assignments in the round
    open_loads: Mapping[str, int]  # annotator → open assignments in the round


def study_members(study: Study, usernames: Sequence[str]) -> list[User]:
    """The users named, in order, each a member of the study (any role); RoundError names the others."""
    names = [u.strip() for u in usernames if u.strip()]
    if not names:
        raise RoundError("Name at least one annotator.")
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise RoundError(f"Annotators listed more than once: {', '.join(repeated)}.")
    users = {u.username: u for u in User.objects.filter(username__in=names)}
    unknown = [n for n in names if n not in users]
    if unknown:
        raise RoundError(f"No user named {', '.join(map(repr, unknown))}.")
    members = set(
        Membership.objects.filter(study=study, user__in=users.values()).values_list(
            "user__username", flat=True
        )
    )
    outsiders = [n for n in names if n not in members]
    if outsiders:
        raise RoundError(
            f"{', '.join(map(repr, outsiders))} {'is' if len(outsiders) == 1 else 'are'} not a member of "
            f"study {study.slug}: add them first (add_member {study.slug} USERNAME --role annotator)."
        )
    return [users[n] for n in names]


def assign_round(
    study: Study,
    number: int,
    usernames: Sequence[str],
    *,
    overlap: int | None = None,
    actor: User | None = None,
) -> AssignResult:
    """Give each item of round `number` to exactly `overlap` (default: the study's) of the annotators
    named, balancing their loads (`sampling.assign_balanced`: loads differ by at most one).

    Run again after adding items or annotators, it only completes and rebalances: items without
    assignments are assigned, items with fewer than `overlap` get more annotators, and the *open* work is
    shared evenly among the annotators named (`sampling.rebalance_open`); submitted work never moves, and
    an annotator of the round left out of `usernames` hands over all their open work. Drafts of moved
    assignments are deleted (they were the previous annotator's). Annotators must be study members.
    """
    k = study.overlap if overlap is None else overlap
    if k < 1:
        raise RoundError(f"The overlap must be at least 1 (got {k}).")
    with transaction.atomic():
        lock_study(study)
        round_ = Round.objects.filter(study=study, number=number).first()
        if round_ is None:
            raise RoundError(f"Study {study.slug} has no round {number}: draw it first (sample).")
        users = study_members(study, usernames)
        if k > len(users):
            raise RoundError(f"An overlap of {k} needs at least {k} annotators; {len(users)} named.")
        by_name = {u.username: u for u in users}
        items = list(
            RoundItem.objects.filter(round=round_).order_by("position").values_list("item_id", "position")
        )
        if not items:
            raise RoundError(f"Round {number} has no items yet.")
        position = dict(items)
        existing = list(  # gold checks seeded into the round are not its sample's: they never move
            Assignment.objects.reliability()
            .filter(round=round_)
            .values_list("item_id", "annotator__username", "status")
        )
        holders: dict[int, set[str]] = defaultdict(set)
        load: dict[str, int] = defaultdict(int)
        for item_id, name, _status in existing:
            holders[item_id].add(name)
            load[name] += 1
        seed = round_.seed or 0
        new_pairs: list[tuple[int, str]] = []
        unassigned = [item_id for item_id, _ in items if not holders[item_id]]
        if unassigned:
            try:
                plan = assign_balanced(unassigned, list(by_name), k, {n: load[n] for n in by_name}, seed)
            except SamplingError as exc:
                raise RoundError(str(exc)) from exc
            for item_id, names in plan.items():
                new_pairs.extend((item_id, n) for n in names)
                for n in names:
                    load[n] += 1
        for item_id, _ in items:  # top up items that have fewer annotators than the overlap
            held = holders[item_id]
            if not held:
                continue
            for _ in range(k - len(held)):
                free = [n for n in by_name if n not in held]
                if not free:
                    break
                chosen = min(free, key=lambda n: (load[n], n))
                held.add(chosen)
                load[chosen] += 1
                new_pairs.append((item_id, chosen))
        Assignment.objects.bulk_create(
            [
                Assignment(
                    study=study,
                    round=round_,
                    item_id=item_id,
                    annotator=by_name[name],
                    position=position[item_id],
                )
                for item_id, name in new_pairs
            ]
        )
        moved = _rebalance(round_, list(by_name), seed)
        round_.params = {**round_.params, "assignment": {"annotators": sorted(by_name), "overlap": k}}
        round_.save(update_fields=["params"])
        loads, open_loads = round_loads(round_)
        items_moved.send(sender=Round, item_ids=[item_id for item_id, _ in new_pairs])
    return AssignResult(round_, len(new_pairs), moved, loads, open_loads)


def _rebalance(round_: Round, names: list[str], seed: int) -> int:
    rows = list(
        Assignment.objects.reliability()
        .filter(round=round_)
        .values_list("id", "item_id", "annotator__username", "status")
    )
    open_pairs = [(item, name) for _, item, name, status in rows if status == AssignmentStatus.OPEN]
    closed = [(item, name) for _, item, name, status in rows if status != AssignmentStatus.OPEN]
    try:
        moves = rebalance_open(open_pairs, names, closed_assignments=closed, seed=seed)
    except SamplingError as exc:
        raise RoundError(str(exc)) from exc
    if not moves:
        return 0
    ids = {(item, name): pk for pk, item, name, _ in rows}
    users = {u.username: u for u in User.objects.filter(username__in=names)}
    moving = {ids[(m.item_id, m.from_annotator)]: users[m.to_annotator] for m in moves}
    delete_drafts(moving)
    objects = list(Assignment.objects.filter(pk__in=list(moving)))
    for assignment in objects:
        assignment.annotator = moving[assignment.pk]
    Assignment.objects.bulk_update(objects, ["annotator"])
    return len(objects)


def round_loads(round_: Round) -> tuple[dict[str, int], dict[str, int]]:
    """Assignments per annotator in the round: all of them, and the open ones."""
    rows = (
        Assignment.objects.filter(round=round_)
        .values("annotator__username")
        .annotate(n=Count("id"), n_open=Count("id", filter=Q(status=AssignmentStatus.OPEN)))
    )
    return (
        {r["annotator__username"]: r["n"] for r in rows},
        {r["annotator__username"]: r["n_open"] for r in rows},
    )


def reassign(assignment: Assignment, to_user: User, *, actor: User | None = None) -> Assignment:
    """Give an open assignment to another member of the study (the lead's "reassign"). Refuses a
    submitted assignment (its labels stay with their author) and an annotator who already holds the item
    in the round. The previous annotator's draft is deleted."""
    with transaction.atomic():
        locked = Assignment.objects.select_for_update().select_related("study", "round").get(pk=assignment.pk)
        if locked.status != AssignmentStatus.OPEN:
            raise RoundError("This assignment is submitted: its labels stay with their annotator.")
        if locked.annotator_id == to_user.pk:
            return locked
        study_members(locked.study, [to_user.username])
        if Assignment.objects.filter(round=locked.round, item_id=locked.item_id, annotator=to_user).exists():
            raise RoundError(f"{to_user.username} already has this item in {locked.round}.")
        delete_drafts([locked.pk])
        locked.annotator = to_user
        locked.save(update_fields=["annotator"])
    return locked


# --- Drafts and submission ----------------------------------------------------------------------------


def round_progress(study: Study) -> list[dict[str, Any]]:
    """Per round and annotator: assigned, done, open and the median seconds per submitted item. Two
    queries whatever the size (the medians from one list of seconds)."""
    rows = (
        Assignment.objects.filter(study=study)
        .values("round_id", "annotator__username")
        .annotate(total=Count("id"), done=Count("id", filter=Q(status=AssignmentStatus.SUBMITTED)))
        .order_by("round_id", "annotator__username")
    )
    seconds: dict[tuple[int, str], list[int]] = defaultdict(list)
    for round_id, name, spent in Annotation.objects.filter(
        assignment__study=study, submitted_at__isnull=False, seconds_spent__isnull=False, imported=False
    ).values_list("assignment__round_id", "assignment__annotator__username", "seconds_spent"):
        if spent is not None:
            seconds[(round_id, name)].append(spent)
    out = []
    for r in rows:
        spent_list = seconds.get((r["round_id"], r["annotator__username"]), [])
        out.append(
            {
                "round_id": r["round_id"],
                "annotator": r["annotator__username"],
                "total": r["total"],
                "done": r["done"],
                "open": r["total"] - r["done"],
                "percent": round(100 * r["done"] / r["total"]) if r["total"] else 0,
                "median_seconds": round(statistics.median(spent_list)) if spent_list else None,
            }
        )
    return out


@dataclass(frozen=True)
class RoundsOverview:
    """The rounds page's figures: the rounds (each with `n_items`), `round_progress`, how many items a new
    round can draw from, and how many are unscreened."""

    rounds: list[Round]
    progress: list[dict[str, Any]]
    eligible: int
    unscreened: int


def rounds_overview(study: Study) -> RoundsOverview:
    """`RoundsOverview` of `study`, from the cache while nothing in the study has changed
    (`apps.core.generations.study_figures`): the medians read every submission's seconds and the eligible
    count every item (210 ms at 100,000 items), on every view of the rounds page."""

    def compute() -> RoundsOverview:
        rounds = Round.objects.filter(study=study).annotate(n_items=Count("round_items")).order_by("number")
        return RoundsOverview(
            rounds=list(rounds),
            progress=round_progress(study),
            eligible=eligible_items(study).count(),
            unscreened=Item.objects.filter(study=study, relevance=Relevance.UNSCREENED).count(),
        )

    return generations.study_figures(study, "annotation.rounds_overview", compute)


def set_round_kind(study: Study, number: int, kind: str) -> Round:
    """Make the round a reliability round or a labelling round (`RoundKind`). A round that becomes a
    reliability round shows no model suggestion from then on (`annotation/suggestions.may_suggest`); the
    annotations already marked assisted stay marked."""
    kinds = [k for k in RoundKind.values if k != RoundKind.TRAINING]
    if kind not in kinds:
        raise RoundError(
            f"unknown round kind {kind!r}; valid kinds: {', '.join(kinds)} (a training round is created "
            "as one: create_training_round)"
        )
    with transaction.atomic():
        round_ = Round.objects.select_for_update().filter(study=study, number=number).first()
        if round_ is None:
            raise RoundError(f"study {study.slug} has no round {number}")
        if round_.kind == RoundKind.TRAINING:
            raise RoundError(f"round {number} is a training round: its kind cannot change")
        if round_.kind != kind:
            round_.kind = kind
            round_.save(update_fields=["kind"])
    return round_


def release_open_assignments(study: Study, user: User) -> int:
    """Return a departing member's open assignments in the study to the pool: they are deleted with their
    drafts, so each item lacks an annotator until the lead assigns its round again (`assign_round` tops
    items up to the overlap and rebalances). Submitted work stays, attributed to its author, and so does
    an assignment sent back for relabelling (its draft holds the labels they had submitted). Returns how
    many went back. Runs in the caller's transaction (`accounts.services.remove_member`), under the
    study's row lock like every change to a round's assignments."""
    lock_study(study)
    released = dict(
        Assignment.objects.filter(study=study, annotator=user, status=AssignmentStatus.OPEN)
        .filter(send_backs__isnull=True, blind_record__isnull=True)
        .values_list("pk", "item_id")
    )
    if released:
        delete_drafts(list(released))
        Assignment.objects.filter(pk__in=list(released)).delete()
        items_moved.send(sender=Assignment, item_ids=sorted(set(released.values())))  # the grid's columns
    return len(released)
