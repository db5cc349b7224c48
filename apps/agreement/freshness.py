"""Values derived from a study's labels, kept in the cache until the labels change (issue 10).

What a dashboard snapshot depends on (`fingerprints.fingerprint`: counts and the latest change over every
submitted label of the study) and the confusion matrix take a second each at 100,000 items, and the
dashboard needs both on every view. `cached` keeps such values in Django's cache under the study's
*labels generation*, two tokens (`apps.core.generations`) that the receivers below replace whenever the
labels may have changed:

* the study's token, on `annotation_submitted` (a submission or an edit, from the workbench, the API or
  a label import) when the annotation's assignment is at hand;
* the codebook's token, on `annotation_submitted` when the sender passes the codebook `index` instead,
  and on `codebook_changed` (sent after every codebook change, merges and splits that move labels
  included).

When the tokens are replaced (after the commit; in a request, once the response is handed over), how long
a value is trusted without a signal (`TTL`) and what happens when the cache cannot be reached: see
`apps.core.generations`. The receivers run no query for the senders there are. Other writes to a study
(rounds, decisions, screening) do not replace these tokens: the dashboard's figures come from labels only,
and recomputing them costs seconds at 100,000 items.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from apps.accounts.models import Study
from apps.annotation.models import Annotation
from apps.core import generations
from apps.core.generations import TTL
from apps.taxonomy.index import CodebookIndex
from apps.taxonomy.models import Codebook

__all__ = [
    "TTL",
    "cached",
    "labels_changed",
    "on_annotation_submitted",
    "on_codebook_changed",
    "peek",
]


def cached[T](study: Study, codebook_id: int | None, name: str, compute: Callable[[], T]) -> T:
    """``compute()``, or its value from the cache when the study's labels have not changed since (nor
    ``TTL`` seconds passed). ``name`` tells the values of one study apart (include every parameter)."""
    return generations.cached(*_kept_under(study, codebook_id), name, compute)


def peek(study: Study, codebook_id: int | None, name: str) -> tuple[Any] | None:
    """``(value,)`` when `cached` has the value of ``name`` for the study's labels as they are, else None
    (nothing is computed)."""
    return generations.peek(*_kept_under(study, codebook_id), name)


def _kept_under(study: Study, codebook_id: int | None) -> tuple[str, list[tuple[str, int | None]]]:
    """The scope and the tokens (the study's labels, its codebook's) a study's label values are kept under."""
    return f"agreement:{generations.study_scope(study)}", [
        (generations.LABELS, study.pk),
        ("codebook", codebook_id),
    ]


def labels_changed(*, study_id: int | None = None, codebook_id: int | None = None) -> None:
    """Forget the values cached for a study's labels (by study or by codebook) when the transaction commits,
    and before that if this connection reads them."""
    for kind, pk in ((generations.LABELS, study_id), ("codebook", codebook_id)):
        if pk is not None:
            generations.changed(kind, pk)


def on_annotation_submitted(sender: object, *, annotation: Annotation, **kwargs: Any) -> None:
    index = kwargs.get("index")
    if isinstance(index, CodebookIndex) and index.codebook_id is not None:
        labels_changed(codebook_id=index.codebook_id)
    elif Annotation.assignment.is_cached(annotation):
        labels_changed(study_id=annotation.assignment.study_id)
    else:  # no sender does this today: one query then
        study_id = Annotation.objects.values_list("assignment__study_id", flat=True).get(pk=annotation.pk)
        labels_changed(study_id=study_id)


def on_codebook_changed(sender: object, *, codebook: Codebook, **kwargs: Any) -> None:
    labels_changed(codebook_id=codebook.pk)
    generations.figures_changed(codebook.study_id)  # the study's pages count categories and show the version
