"""Send an item's outdated labels back to their annotators (docs/paper.md, the re-review worklist).

One transaction per call: the item's row is locked (as consolidation locks it), its current decision
withdrawn, whatever its provenance (it rests on labels the codebook has since changed under), the named
annotators' submitted labels reopened as drafts (`annotation.services.send_back`), and the item
consolidated, which leaves its Review ``annotating`` until they submit again; their new labels are then
consolidated like any others.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from django.db import transaction
from django.utils import timezone

from apps.accounts.models import Study, User
from apps.annotation.models import SendBack
from apps.annotation.services import load_codebook
from apps.annotation.services.send_back import reopen_for_relabelling
from apps.corpus.models import Item

from ..models import Decision
from ..progress import refresh_progress
from .consolidate import consolidate_item
from .writes import withdraw


def send_back(
    study: Study, item: Item, notes: Mapping[str, Sequence[str]], *, by: User | None
) -> list[SendBack]:
    """Send `item`'s labels of the annotators in `notes` (username → what changed under their labels)
    back to them. AnnotationError when none of them has submitted labels on it."""
    with transaction.atomic():
        locked = Item.objects.select_for_update().get(pk=item.pk, study=study)
        book = load_codebook(study)
        sent = reopen_for_relabelling(locked.pk, notes, book=book, by=by, now=timezone.now())
        current = Decision.objects.filter(item=locked, is_current=True).first()
        if current is not None:
            withdraw(current)
        consolidate_item(locked.pk, index=book.index)
        refresh_progress([locked.pk])
    return sent
