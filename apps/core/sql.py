"""Hand-written SQL for the hottest reads: model instances without the ORM's query compiler.

On the two-core machines Taxonomist is measured on, building and compiling one ORM query costs
0.5-1.5 ms of Python, several times what PostgreSQL needs to run it (docs/decisions/0004). The few
statements run on every request (session, user, membership) or on every label (next item, submit) are
written by hand instead; everything else keeps the ORM.

`columns(Model, alias)` lists a model's concrete columns in the model's field order, so a row selected
with it is built positionally by `instance(Model, row)`, the way the ORM builds its own rows
(`Model.from_db`), whatever order the table's columns have on disk.

`Statement(name, sql, types)` runs a statement as a PostgreSQL prepared statement, prepared once per
database connection: planning is what most of a complex statement's time goes to (0.5 of 0.8 ms for the
next item, 0.7 of 0.85 ms for a submission's consolidation read), and a prepared statement is planned
once for the connection's life.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping, Sequence
from functools import cache
from typing import Any

from django.db import ProgrammingError, connection, transaction
from django.db.models import Model


@cache
def columns(model: type[Model], alias: str) -> str:
    """`alias."col", ...` for the model's concrete fields, in the order `instance` expects them."""
    return ", ".join(f'{alias}."{field.column}"' for field in model._meta.concrete_fields)


@cache
def _attnames(model: type[Model]) -> list[str]:
    return [field.attname for field in model._meta.concrete_fields]


Converter = Callable[[Any, Any, Any], Any]


@cache
def _converters(model: type[Model]) -> list[tuple[int, Any, list[Converter]]]:
    """Per column of `columns(model, ...)` that needs one, the converters the ORM's compiler applies to
    it (the backend's, then the field's): JSON parsed from text, SQLite's dates and booleans, ... Once per
    model (a process has one database backend)."""
    found = []
    for position, field in enumerate(model._meta.concrete_fields):
        col = field.get_col(model._meta.db_table)
        converters = connection.ops.get_db_converters(col) + col.get_db_converters(connection)
        if converters:
            found.append((position, col, converters))
    return found


def width(model: type[Model]) -> int:
    """How many values of a row selected with `columns(model, ...)` belong to the model."""
    return len(model._meta.concrete_fields)


def instance[M: Model](model: type[M], values: Sequence[Any]) -> M:
    """The model instance of one row selected with `columns(model, ...)`, as the ORM would build it: the
    values converted as the ORM converts them (`_converters`), then `Model.from_db`."""
    row = list(values)
    for position, col, converters in _converters(model):
        value = row[position]
        for convert in converters:
            value = convert(value, col, connection)
        row[position] = value
    return model.from_db(connection.alias, _attnames(model), row)


# Per database connection: the raw connection object the statements were prepared on (a new one after a
# reconnect has none) and their names.
_PREPARED_ON = "_taxonomist_prepared_on"
DUPLICATE_PREPARED_STATEMENT = "42P05"  # SQLSTATE duplicate_prepared_statement
_PARAMETER = re.compile(r"%\((\w+)\)s")


class Statement:
    """A hand-written statement with ``%(name)s`` parameters, run as the prepared statement `self.name` (the
    given name and a digest of the text) of the connection on PostgreSQL (prepared on first use: one
    planning per connection instead of one per call) and as a plain statement elsewhere. `types` gives each
    parameter's PostgreSQL type.

    Prepared statements outlive transactions (a rollback keeps them) and end with the connection; a
    connection that `DISCARD`s them behind Django's back (a transaction-mode pooler) is not supported."""

    def __init__(self, name: str, sql: str, types: Mapping[str, str]) -> None:
        appearances = _PARAMETER.findall(sql)
        order = list(dict.fromkeys(appearances))
        if set(order) != set(types):
            raise ValueError(f"{name}: parameters {sorted(order)} but types for {sorted(types)}")
        signature = ", ".join(types[n] for n in order)
        body = _PARAMETER.sub(lambda m: f"${order.index(m.group(1)) + 1}", sql)
        # The name carries a digest of the text: a session that outlived a deploy (a pooler's) and still holds
        # the last release's statement under the same name would run the old SQL, or fail on its parameters.
        name = f"{name}_{hashlib.blake2s(f'{signature}|{body}'.encode(), digest_size=4).hexdigest()}"
        self.name = name
        self.sql = sql
        self._order = order
        self._appearances = appearances
        self._prepare = f"PREPARE {name} ({signature}) AS {body}"
        self._execute = f"EXECUTE {name} ({', '.join(['%s'] * len(order))})" if order else f"EXECUTE {name}"
        self._portable = _PARAMETER.sub("%s", sql)

    def run(self, params: Mapping[str, Any]) -> tuple[list[tuple[Any, ...]], int]:
        """The statement's rows (all of them; these statements return few) and its row count."""
        with connection.cursor() as cursor:
            if connection.vendor == "postgresql":
                self._ensure_prepared(cursor)
                cursor.execute(self._execute, [params[n] for n in self._order])
            else:
                cursor.execute(self._portable, [params[n] for n in self._appearances])
            rows = [tuple(row) for row in cursor.fetchall()] if cursor.description else []
            return rows, cursor.rowcount

    def one(self, params: Mapping[str, Any]) -> tuple[Any, ...] | None:
        """The first row, or None."""
        rows, _ = self.run(params)
        return rows[0] if rows else None

    def _ensure_prepared(self, cursor: Any) -> None:
        raw = connection.connection
        done: tuple[object, set[str]] | None = getattr(connection, _PREPARED_ON, None)
        if done is None or done[0] is not raw:
            done = (raw, set())
            setattr(connection, _PREPARED_ON, done)
        if self.name not in done[1]:
            try:
                # In a savepoint: a session that has the statement already (its record lost, a pooler that
                # does not DISCARD) must not fail the caller's transaction. Once per connection.
                with transaction.atomic():
                    cursor.execute(self._prepare)
            except ProgrammingError as exc:
                if getattr(exc.__cause__, "pgcode", None) != DUPLICATE_PREPARED_STATEMENT:
                    raise
            done[1].add(self.name)


# PostgreSQL types of the parameter values an ORM-compiled statement holds (bool before int: a subclass).
_TYPES: tuple[tuple[type, str], ...] = (
    (bool, "boolean"),
    (int, "bigint"),
    (float, "double precision"),
    (str, "text"),
)


def compiled_statement(name: str, sql: str, params: Sequence[Any]) -> Statement:
    """A :class:`Statement` of SQL the ORM compiled (``%s`` placeholders, `params` in order): its
    parameters are named ``p0``, ``p1``, ... in that order, and typed from their values. For a statement
    the ORM writes well but PostgreSQL would plan on every call (correlated subqueries: planning costs
    several times the run)."""
    if "%%" in sql:
        raise ValueError(f"{name}: a literal % in the statement is not supported")
    pieces = sql.split("%s")
    if len(pieces) != len(params) + 1:
        raise ValueError(f"{name}: {len(pieces) - 1} placeholders for {len(params)} parameters")
    types = {}
    for position, value in enumerate(params):
        kind = next((pg for python, pg in _TYPES if isinstance(value, python)), None)
        if kind is None:
            raise ValueError(f"{name}: parameter {position} is {value!r}, of no known PostgreSQL type")
        types[f"p{position}"] = kind
    named = pieces[0] + "".join(f"%(p{n})s{piece}" for n, piece in enumerate(pieces[1:]))
    return Statement(name, named, types)
