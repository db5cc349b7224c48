"""Values derived from a study's data, kept in Django's cache until the data they come from change.

A value is cached under *generation tokens*: random strings, one per (kind, id), that a writer replaces
when what the kind stands for may have changed. A value found under the current tokens is current; one
computed under tokens since replaced is never found again. Two families of kinds use this:

* the labels of a study or a codebook (`apps.agreement.freshness`: `study`, `codebook`), replaced by the
  submission and codebook signals;
* everything else a study's pages count (`FIGURES`: items, rounds, assignments, decisions, screening, gold
  checks...), replaced after every request that writes to the study (`study_written`, called by the
  request middleware once the view has returned, before the response leaves), by every writing job's
  progress, by every writing command (`command_writes`) and by every codebook change.

Changes signalled inside a transaction (`changed`) replace their tokens once it has committed (at once
outside a transaction), so a value computed before the commit is not kept under the current tokens; and
before that if the sending transaction itself reads a cached value (so it, and a test, whose transaction
never commits, sees its change). In a request, "once committed" is when the response has been handed to
the server (`on_request_finished`): a submission, which reads no cached value, costs one write to the
cache, after its answer. A value is computed after its tokens were read, so it is never older than the last
change signalled before it. Values expire after `TTL` seconds anyway: writes that send no signal (the
admin, a shell) and caches that processes do not share (a local-memory cache, with neither REDIS_URL nor
CACHE_DIR set, next to a Celery worker) are noticed within that time.

The cache is an optimisation only: when it cannot be reached (Redis down), values are computed and token
replacements are skipped with a warning, so neither a write nor a page fails.
"""

from __future__ import annotations

import atexit
import hashlib
import logging
from collections.abc import Callable, Iterable
from contextvars import ContextVar
from functools import partial
from typing import Any
from uuid import uuid4

from django.core.cache import cache
from django.db import connection, transaction

logger = logging.getLogger(__name__)

TTL = 60
"""Seconds a cached value is trusted without a signal (see the module docstring)."""

FIGURES = "figures"
"""The kind whose token a write to a study replaces (`study_written`, `figures_changed`)."""

LABELS = "study"
"""The kind whose token a change of a study's labels replaces (`apps.agreement.freshness`)."""

__all__ = [
    "FIGURES",
    "LABELS",
    "TTL",
    "cached",
    "changed",
    "command_writes",
    "figures_changed",
    "on_request_finished",
    "on_request_started",
    "study_figures",
    "study_scope",
    "study_written",
]


def _token_key(kind: str, pk: int | None) -> str:
    return f"generation:{kind}:{pk}"


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
        logger.warning("cache unavailable, %s %s not marked changed: %s", kind, pk, exc)


# On the connection: the (kind, pk) whose data its open transaction changed; their tokens are replaced at
# commit, and before that only if this connection reads the cache (`_replace_pending`). Entries left by a
# rolled-back transaction go at the connection's next read of the cache (replaced first if that read is in
# a transaction: a needless but harmless miss).
_PENDING = "_taxonomist_generations_changed"


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
    "generations_after_response", default=None
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


def _value_key(scope: str, tokens: Iterable[tuple[str, int | None]], name: str) -> str:
    wanted = [(kind, pk, _token_key(kind, pk)) for kind, pk in tokens]
    found = cache.get_many([key for _, _, key in wanted])  # one round trip for every token
    current = ":".join(str(found.get(key) or _token(kind, pk)) for kind, pk, key in wanted)
    return f"generations:{scope}:{current}:{hashlib.sha256(name.encode()).hexdigest()}"


def peek(scope: str, tokens: Iterable[tuple[str, int | None]], name: str) -> tuple[Any] | None:
    """What `cached` would return without computing: ``(value,)`` when it is in the cache, else None (also
    when the cache cannot be reached)."""
    _replace_pending()
    try:
        hit = cache.get(_value_key(scope, tokens, name))
    except Exception as exc:
        logger.warning("cache unavailable, %s not read: %s", name, exc)
        return None
    return (hit[0],) if hit is not None else None


def cached[T](scope: str, tokens: Iterable[tuple[str, int | None]], name: str, compute: Callable[[], T]) -> T:
    """``compute()``, or its value from the cache when none of ``tokens`` (kind, id) was replaced since
    (nor ``TTL`` seconds passed). ``scope`` names what the value belongs to and must tell apart objects
    that reuse a deleted one's id (a study's id and creation time); ``name`` tells its values apart
    (include every parameter)."""
    _replace_pending()
    try:
        key = _value_key(scope, tokens, name)
        hit = cache.get(key)
    except Exception as exc:  # the cache backend's own errors (redis.ConnectionError, ...)
        logger.warning("cache unavailable, computing %s: %s", name, exc)
        return compute()
    if hit is not None:
        value: T = hit[0]
        return value
    value = compute()
    try:
        cache.set(key, (value,), TTL)
    except Exception as exc:
        logger.warning("cache unavailable, %s not kept: %s", name, exc)
    return value


def changed(kind: str, pk: int) -> None:
    """Forget the values cached under (kind, pk) when the transaction commits, and before that if this
    connection reads them (`_replace_pending`)."""
    if connection.in_atomic_block:
        _pending().add((kind, pk))
    transaction.on_commit(partial(_committed, kind, pk))


def figures_changed(study_id: int) -> None:
    """Study `study_id` changed outside a writing request (a job, a command, a codebook change): its figures
    are forgotten once the change commits."""
    changed(FIGURES, study_id)


def study_written(study_id: int) -> None:
    """A request that writes to study `study_id` has been served (its view returned, its transactions
    committed): the study's figures are forgotten now, before the response leaves, so that the page the
    writer is sent to next already counts the change."""
    _replace(FIGURES, study_id)


def study_figures[T](study: Any, name: str, compute: Callable[[], T]) -> T:
    """``compute()`` for a figure of `study` (a `Study`: this module cannot import it) that counts its data
    and its labels, or its cached value when neither has changed since: kept under the study's `FIGURES`
    token (any write to the study) and its labels token (`apps.agreement.freshness`)."""
    return cached(f"figures:{study_scope(study)}", [(FIGURES, study.pk), (LABELS, study.pk)], name, compute)


def study_scope(study: Any) -> str:
    """What tells a study's cached values apart: its id and its creation time (SQLite and tests reuse the
    id of a deleted study)."""
    return f"{study.pk}:{study.created_at.timestamp()}"


_COMMAND_WROTE: set[int] = set()


def _forget_at_exit() -> None:
    for study_id in sorted(_COMMAND_WROTE):
        _replace(FIGURES, study_id)
    _COMMAND_WROTE.clear()


def command_writes(study_id: int) -> None:
    """A command is about to write into study `study_id` (`apps.accounts.commands.get_study`): its figures
    are forgotten now (in a transaction: at its commit, and at its first read of the cache), and again when
    the process exits, after the command's last commit, so that a page computed while it ran is not kept."""
    figures_changed(study_id)
    if not _COMMAND_WROTE:
        atexit.register(_forget_at_exit)
    _COMMAND_WROTE.add(study_id)
