"""Django's PostgreSQL backend, with a health check that asks the socket before it asks the server.

With ``CONN_HEALTH_CHECKS``, Django checks a persistent connection the first time each request uses it,
by running ``SELECT 1``: one round trip on every request, about a tenth of a fast page's time. Here the
connection's socket is asked first, without waiting: a connection that is idle (no transaction open)
and has nothing to read is kept without a query. A server that ends a connection (``pg_terminate_backend``,
a restart, an idle timeout) sends an error and closes its end, so the socket becomes readable, and then
Django's own check runs (``SELECT 1``, the connection closed if it fails, a new one opened by the next
query). A socket that cannot be asked, a connection in a transaction, or anything unexpected: Django's check.

What neither check notices is a peer gone without a word (a host powered off): ``SELECT 1`` would wait
for the TCP timeout as the request's first query does. And a request that arrives in the instant between
a backend being signalled to end and its goodbye reaching the socket (well under a millisecond) is
answered as one in flight at that moment is: it fails (500), Django closes the connection, and the next
request reconnects. ``SELECT 1`` would have caught that request; this check trades it for one round trip
on every request.
"""

from __future__ import annotations

import select

from django.db.backends.postgresql import base


def quiet_and_idle(connection: object) -> bool:
    """True when the driver connection is open, outside a transaction and its socket has nothing to
    read: the server has neither closed it nor said anything since the last answer."""
    try:
        if getattr(connection, "closed", True):
            return False
        info = connection.info  # type: ignore[attr-defined]
        if int(info.transaction_status) != 0:  # psycopg2 TRANSACTION_STATUS_IDLE / psycopg's IDLE
            return False
        readable, _, _ = select.select([connection.fileno()], [], [], 0)  # type: ignore[attr-defined]
    except Exception:
        return False
    return not readable


class DatabaseWrapper(base.DatabaseWrapper):
    def close_if_health_check_failed(self) -> None:
        if (
            self.connection is not None
            and getattr(self, "health_check_enabled", False)  # set by Django's base class, untyped
            and not getattr(self, "health_check_done", True)
            and not self.pool
            and quiet_and_idle(self.connection)
        ):
            self.health_check_done = True
            return
        super().close_if_health_check_failed()
