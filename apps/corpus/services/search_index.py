"""The full-text column of items (PostgreSQL): filled after an import, in the background.

`search_vector` used to be a stored generated column, computed by PostgreSQL on every insert: half of an
import's time (migration 0010). It is now filled here, in batches of their own transactions, for the items
of a study that have none (new, or whose title or body changed: a trigger clears the vector). Until then
`apps.corpus.search.matches` parses those rows on the fly, so a search is complete meanwhile. SQLite keeps
its FTS5 index in step by triggers and needs nothing here.
"""

from __future__ import annotations

import logging

from django.db import connection, transaction

from ..search import TSVECTOR

logger = logging.getLogger(__name__)

BATCH = 2000  # items a transaction: a few hundred ms each, so a long fill never holds many row locks

# Hand-written (decision 0010): the model does not declare the column, so the ORM cannot write it.
# The inner SELECT finds the pending rows through the partial index `item_search_pending`.
_FILL = (
    f"UPDATE corpus_item SET search_vector = {TSVECTOR} WHERE id IN (SELECT id FROM corpus_item "
    "WHERE study_id = %s AND search_vector IS NULL LIMIT %s)"
)


def fill_search_vectors(study_id: int, *, batch: int = BATCH) -> int:
    """Compute the full-text vector of every item of study `study_id` that has none; how many were filled.
    Idempotent, and safe beside an import or another fill (a row is written whole either way)."""
    if connection.vendor != "postgresql":
        return 0
    filled = 0
    while True:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(_FILL, [study_id, batch])
            done: int = cursor.rowcount
        filled += done
        if done < batch:
            return filled


def pending_search_vectors(study_id: int) -> int:
    """How many items of the study wait for their full-text vector (0 on SQLite)."""
    if connection.vendor != "postgresql":
        return 0
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM corpus_item WHERE study_id = %s AND search_vector IS NULL", [study_id]
        )
        return int(cursor.fetchone()[0])


def fill_search_vectors_soon(study_id: int) -> None:
    """Send `tasks.index_search_task` for the study once the current transaction commits (PostgreSQL
    only). With the broker down nothing is sent: searches stay complete, parsing the waiting rows, and the
    next import sends it again."""
    if connection.vendor != "postgresql":
        return
    from ..tasks import index_search_task  # the tasks module imports the services

    def send() -> None:
        try:
            index_search_task.delay(study_id)
        except Exception as exc:  # the broker's own errors
            logger.warning("search index of study %s not sent to a worker: %s", study_id, exc)

    transaction.on_commit(send)
