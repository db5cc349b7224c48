"""Values derived from a study's labels, kept in the cache until the labels change (issue 10).

What a dashboard snapshot depends on (`services.fingerprint`: counts and the latest change over every
submitted label of the study) and the confusion matrix take a second each at 100,000 items, and the
dashboard needs both on every view. `cached` keeps such values in Django's cache under the study's
*labels generation*, two tokens that the receivers below replace whenever the labels may have changed:

* the study's token, on `annotation_submitted` (a submission or an edit, from the workbench, the API or
  a label import) when the annotation's assignment is at hand;
* the codebook's token, on `annotation_submitted` when the sender passes the codebook `index` instead,
  and on `codebook_changed` (sent after every codebook change, merges and splits that move labels
  included).

Tokens are replaced once the sending transaction has committed (at once outside a transaction), so a
value computed from the database before the commit is not kept under the current tokens; and before that
if the sending transaction itself reads a cached value (so it, and a test, whose transaction never
commits, sees its change). In a request, "once committed" is when the response has been handed to the
server (`on_request_finished`): a submission, which reads no cached value, costs one write to the cache,
after its answer. Between the commit and that write (a fraction of a millisecond) another process may
still serve the value cached before. A value is computed after its tokens were read, so it is never older
than the last change signalled before it. Values expire after `TTL` seconds anyway: writes that send no
signal (the admin, a shell) and caches that processes do not share (the local-memory cache, without
REDIS_URL, next to a Celery worker importing labels) are noticed within that time. The receivers run no
query for the senders there are.

The cache is an optimisation only: when it cannot be reached (Redis down), values are computed and
token replacements are skipped with a warning, so neither a submission nor the dashboard fails.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from contextvars import ContextVar
from functools import partial
from typing import Any
from uuid import uuid4

from django.core.cache import cache
from django.db import connection, transaction

from apps.accounts.models import Study
from apps.annotation.models import Annotation
from apps.taxonomy.index import CodebookIndex
from apps.taxonomy.models import Codebook

logger = logging.getLogger(__name__)

TTL = 60
"""Seconds a cached value is trusted without a signal (see the module docstring)."""

__all__ = [
    "TTL",
    "cached",
    "labels_changed",
    "on_annotation_submitted",
    "on_codebook_changed",
    "on_request_finished",
    "on_request_started",
]


def _token_key(kind: str, pk: int | None) -> str:
    return f"agreement:labels:{kind}:{pk}"


def _token(kind: str, pk: int | None) -> str:
    key = _token_key(kind, pk)
    token = cache.get(key)
    if token is None:
        cache.add(key, uuid4().hex, timeout=None)
        # Evicted again at once: a token of our own, under which nothing will be found again.
        token = cache.get(key) or uuid4().hex
    return str(token)


def _replace(kind: str, pk: int) -> None:
    try:
        cache.set(_token_key(kind, pk), uuid4().hex, timeout=None)
    except Exception as exc:  # the cache backend's own errors (redis.ConnectionError, ...)
        logger.warning("agreement cache unavailable, %s %s not marked changed: %s", kind, pk, exc)


# On the connection: the (kind, pk) whose labels its open transaction changed; their tokens are replaced
# at commit, and before that only if this connection reads the cache (`_replace_pending`). Entries left by a
# rolled-back transaction go at the connection's next read of the cache (replaced first if that read is in
# a transaction: a needless but harmless miss).
_PENDING = "_taxonomist_labels_changed"


def _pending() -> set[tuple[str, int]]:
    pending: set[tuple[str, int]] | None = getattr(connection, _PENDING, None)
    if pending is None:
        pending = set()
        setattr(connection, _PENDING, pending)
    return pending


def _replace_pending() -> None:
    """Before this connection reads the cache: the changes its open transaction signalled replace their
    tokens now, so that it (and a test, whose transaction never commits) sees them."""
    pending = _pending()
    if pending and connection.in_atomic_block:
        for kind, pk in pending:
            _replace(kind, pk)
    pending.clear()


# Inside a request (between Django's request_started and request_finished): the tokens to replace once the
# response has been handed to the server. request_finished is sent when the server closes the response,
# after it has written it, so this write to the cache is not part of the time the client waits.
_AFTER_RESPONSE: ContextVar[list[tuple[str, int]] | None] = ContextVar(
    "agreement_after_response", default=None
)


def _committed(kind: str, pk: int) -> None:
    _pending().discard((kind, pk))
    queue = _AFTER_RESPONSE.get()
    if queue is None:  # a job, a command, a shell: now
        _replace(kind, pk)
    elif (kind, pk) not in queue:
        queue.append((kind, pk))


def on_request_started(**_: Any) -> None:
    _AFTER_RESPONSE.set([])


def on_request_finished(**_: Any) -> None:
    queue = _AFTER_RESPONSE.get()
    _AFTER_RESPONSE.set(None)
    for kind, pk in queue or ():
        _replace(kind, pk)


def cached[T](study: Study, codebook_id: int | None, name: str, compute: Callable[[], T]) -> T:
    """``compute()``, or its value from the cache when the study's labels have not changed since (nor
    ``TTL`` seconds passed). ``name`` tells the values of one study apart (include every parameter)."""
    _replace_pending()
    try:
        tokens = f"{_token('study', study.pk)}:{_token('codebook', codebook_id)}"
        # The creation time tells apart studies that reuse a deleted one's id (SQLite, tests).
        study_key = f"{study.pk}:{study.created_at.timestamp()}"
        key = f"agreement:{study_key}:{tokens}:{hashlib.sha256(name.encode()).hexdigest()}"
        hit = cache.get(key)
    except Exception as exc:  # the cache backend's own errors (redis.ConnectionError, ...)
        logger.warning("agreement cache unavailable, computing %s: %s", name, exc)
        return compute()
    if hit is not None:
        value: T = hit[0]
        return value
    value = compute()
    try:
        cache.set(key, (value,), TTL)
    except Exception as exc:
        logger.warning("agreement cache unavailable, %s not kept: %s", name, exc)
    return value


def labels_changed(*, study_id: int | None = None, codebook_id: int | None = None) -> None:
    """Forget the values cached for a study's labels (by study or by codebook) when the transaction commits,
    and before that if this connection reads them (`_replace_pending`)."""
    for kind, pk in (("study", study_id), ("codebook", codebook_id)):
        if pk is not None:
            if connection.in_atomic_block:
                _pending().add((kind, pk))
            transaction.on_commit(partial(_committed, kind, pk))


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
