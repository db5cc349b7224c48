"""Causes of disagreement (docs/labelling.md, "Causes"): the study's editable list, and the cause each
item of a revealed round carries. The one writer of `Cause` and `DisagreementCause`, but for the
restore of a replication package (`package.py`, inside `import_study`).

Who may say why an item was disagreed on is who takes part in its thread (`threads.check_thread`): the
leads, and the round's annotators of the item once the round is revealed and they have labelled it.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from django.db import IntegrityError, transaction
from django.db.models import Max
from django.utils import timezone

from apps.accounts.models import Study, User
from apps.corpus.models import Item
from apps.taxonomy.models import Category

from ..models import CODEBOOK_GAP, DEFAULT_CAUSES, Cause, DisagreementCause, Round
from .common import AnnotationError
from .threads import check_thread, is_lead

MAX_NOTE = 2_000


class CauseError(AnnotationError):
    """A refused cause or change to the list; the message names the value and what is valid."""


def study_causes(study: Study, *, with_retired: bool = False) -> list[Cause]:
    """The study's causes in order, the five defaults made on first use."""
    if not Cause.objects.filter(study=study).exists():
        Cause.objects.bulk_create(
            [
                Cause(study=study, key=key, name=name, position=i)
                for i, (key, name) in enumerate(DEFAULT_CAUSES)
            ],
            ignore_conflicts=True,  # two first uses at once make them once
        )
    found = Cause.objects.filter(study=study)
    return list(found if with_retired else found.filter(retired=False))


def _key(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")[:50]


def add_cause(study: Study, name: str) -> Cause:
    """A new cause at the end of the list, keyed from its name; refused when empty or already there."""
    name = name.strip()
    key = _key(name)
    if not key or len(name) > 100:
        raise CauseError("A cause needs a name of 1 to 100 characters with a letter or digit in it.")
    study_causes(study)
    with transaction.atomic():
        position = (Cause.objects.filter(study=study).aggregate(m=Max("position"))["m"] or 0) + 1
        try:
            with transaction.atomic():
                return Cause.objects.create(study=study, key=key, name=name, position=position)
        except IntegrityError:
            raise CauseError(f"The study already has a cause {key!r}.") from None


def _cause(study: Study, key: str, *, active: bool = True) -> Cause:
    causes = study_causes(study, with_retired=not active)
    for cause in causes:
        if cause.key == key:
            return cause
    known = ", ".join(c.key for c in causes)
    raise CauseError(f"No cause {key!r} in study {study.slug}; its causes: {known}.")


def rename_cause(study: Study, key: str, name: str) -> Cause:
    name = name.strip()
    if not name or len(name) > 100:
        raise CauseError("A cause needs a name of 1 to 100 characters.")
    cause = _cause(study, key, active=False)
    cause.name = name
    cause.save(update_fields=["name"])
    return cause


def retire_cause(study: Study, key: str, *, retired: bool = True) -> Cause:
    """Retire (or bring back) a cause: no new disagreement takes it; those that have it keep it."""
    cause = _cause(study, key, active=False)
    cause.retired = retired
    cause.save(update_fields=["retired"])
    return cause


def set_cause(
    round_: Round, item: Item, user: User, key: str, *, note: str = "", category_id: int | None = None
) -> DisagreementCause:
    """Record why the item's annotators disagreed in the round (replacing what was said before): one of
    the study's active causes, a note, and for a codebook gap the category (a proposal, or a code the
    codebook gained or changed) it led to. Refused (`threads.NotInThread` / `ThreadClosed`) to whoever may
    not take part in the item's thread."""
    check_thread(round_, item, user)
    study = round_.study
    cause = _cause(study, key)
    note = note.strip()
    if len(note) > MAX_NOTE:
        raise CauseError(f"A note holds at most {MAX_NOTE:,} characters (this one {len(note):,}).")
    category = None
    if category_id is not None:
        # an annotator links only what they may see: active codes and their own proposals
        visible = Category.objects.all() if is_lead(study, user) else Category.objects.pickable_by(user)
        category = visible.filter(pk=category_id, dimension__codebook__study=study).first()
        if category is None:
            raise CauseError(f"No category {category_id} in study {study.slug}'s codebook.")
        if cause.key != CODEBOOK_GAP:
            raise CauseError("Only a codebook gap links to the category it led to.")
    found, _ = DisagreementCause.objects.update_or_create(
        round=round_,
        item=item,
        defaults={
            "cause": cause,
            "note": note,
            "category": category,
            "set_by": user,
            "set_at": timezone.now(),
        },
    )
    return found


def clear_cause(round_: Round, item: Item, user: User) -> None:
    check_thread(round_, item, user)
    DisagreementCause.objects.filter(round=round_, item=item).delete()


@dataclass(frozen=True)
class CauseCount:
    round: int
    key: str
    name: str
    n: int


def cause_counts(study: Study) -> list[CauseCount]:
    """How many items of each revealed round carry each cause (causes with none left out), by round, then
    in the list's order. One query."""
    rows = Counter(
        DisagreementCause.objects.filter(round__study=study).values_list(
            "round__number", "cause__position", "cause__key", "cause__name"
        )
    )
    return [CauseCount(number, key, name, n) for (number, _, key, name), n in sorted(rows.items())]
