"""apps/core/sql.py: hand-written rows become the instances the ORM would build; statements prepare once."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection, models, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from apps.accounts.models import Study, User
from apps.annotation.models import Annotation, Assignment, Round
from apps.core.sql import Statement, columns, compiled_statement, instance
from tests.factories import ItemFactory

pytestmark = pytest.mark.django_db


def _row(model: type[models.Model], pk: Any) -> tuple[Any, ...]:
    with connection.cursor() as cursor:
        cursor.execute(f'SELECT {columns(model, "t")} FROM "{model._meta.db_table}" t WHERE t.id = %s', [pk])
        row = cursor.fetchone()
    assert row is not None
    return tuple(row)


def _fields(obj: models.Model) -> dict[str, Any]:
    return {f.attname: getattr(obj, f.attname) for f in obj._meta.concrete_fields}


@pytest.fixture
def annotation(study: Study, annotator_a: User) -> Annotation:
    round_ = Round.objects.create(study=study, number=1, name="Round 1")
    assignment = Assignment.objects.create(
        study=study, round=round_, item=ItemFactory(study=study), annotator=annotator_a
    )
    return Annotation.objects.create(
        assignment=assignment,
        memo="two faults, I think",
        draft={"findings": [{"values": {"type": ["fault"]}}], "memo": "ü"},
        submitted_at=timezone.now(),
        seconds_spent=42,
        imported=True,
    )


def test_a_hand_written_row_builds_the_instance_the_orm_builds(annotation: Annotation, study: Study) -> None:
    """JSON, datetimes, booleans and foreign keys come out as the ORM gives them, on every backend."""
    for model, pk in [
        (Annotation, annotation.pk),
        (Assignment, annotation.assignment_id),
        (Study, study.pk),
        (User, annotation.assignment.annotator_id),
    ]:
        built = instance(model, _row(model, pk))
        assert _fields(built) == _fields(model.objects.get(pk=pk)), model.__name__
        assert built._state.adding is False and built._state.db == connection.alias
    draft = instance(Annotation, _row(Annotation, annotation.pk)).draft
    assert draft == {"findings": [{"values": {"type": ["fault"]}}], "memo": "ü"}


def test_a_statement_names_a_type_for_every_parameter() -> None:
    with pytest.raises(ValueError, match="parameters"):
        Statement("taxonomist_test_bad", "SELECT %(a)s, %(b)s", {"a": "integer"})


def test_a_statement_passes_repeated_and_reordered_parameters(study: Study) -> None:
    statement = Statement(
        "taxonomist_test_params",
        "SELECT s.slug, %(n)s + %(m)s, %(n)s FROM accounts_study s WHERE s.id = %(study)s",
        {"study": "bigint", "n": "integer", "m": "integer"},
    )
    assert statement.one({"study": study.pk, "n": 2, "m": 40}) == (study.slug, 42, 2)
    assert statement.one({"study": study.pk + 1000, "n": 1, "m": 1}) is None


def _slug_of(name: str) -> Statement:
    """A statement reading a study's slug, prepared under `name`."""
    return Statement(name, "SELECT slug FROM accounts_study WHERE id = %(study)s", {"study": "bigint"})


def test_a_statement_is_prepared_once_per_connection_and_survives_a_rollback(study: Study) -> None:
    statement = _slug_of("taxonomist_test_once")
    with CaptureQueriesContext(connection) as queries:
        with transaction.atomic():
            assert statement.one({"study": study.pk}) == (study.slug,)
            transaction.set_rollback(True)
        for _ in range(3):
            assert statement.one({"study": study.pk}) == (study.slug,)
    sql = [q["sql"] for q in queries.captured_queries]
    postgres = connection.vendor == "postgresql"
    assert sum(s.startswith("PREPARE taxonomist_test_once") for s in sql) == (1 if postgres else 0)
    runs = "EXECUTE taxonomist_test_once" if postgres else "SELECT slug FROM accounts_study"
    assert sum(s.startswith(runs) for s in sql) == 4


def test_a_new_connection_prepares_its_statements_again(study: Study) -> None:
    if connection.vendor != "postgresql":
        pytest.skip("prepared statements are PostgreSQL's; elsewhere a statement runs as it is")
    statement = _slug_of("taxonomist_test_again")
    assert statement.one({"study": study.pk}) == (study.slug,)
    # What a new connection looks like: PostgreSQL holds none of the statements, and the wrapper's record of
    # them is gone (a new raw connection). Both, or later tests would prepare statements that still exist.
    with connection.cursor() as cursor:
        cursor.execute("DEALLOCATE ALL")
    connection._taxonomist_prepared_on = None  # type: ignore[attr-defined]
    assert statement.one({"study": study.pk}) == (study.slug,)


def test_a_statement_the_session_has_already_is_not_an_error(study: Study) -> None:
    if connection.vendor != "postgresql":
        pytest.skip("prepared statements are PostgreSQL's")
    statement = _slug_of("taxonomist_test_known")
    assert statement.one({"study": study.pk}) == (study.slug,)
    prepared_on = connection._taxonomist_prepared_on  # type: ignore[attr-defined]
    prepared_on[1].discard(statement.name)  # the record lost, the session still has it
    with transaction.atomic():
        assert statement.one({"study": study.pk}) == (study.slug,)
        assert Study.objects.filter(pk=study.pk).exists()  # the transaction is still usable


def test_a_statement_whose_text_changed_is_prepared_anew_under_the_same_name(study: Study) -> None:
    """What a deploy does to a session that outlives it (a pooler's): the statement of the same name, its
    text changed, must run its new text, not the one the session prepared before."""
    before = Statement(
        "taxonomist_test_changed", "SELECT slug FROM accounts_study WHERE id = %(study)s", {"study": "bigint"}
    )
    after = Statement(
        "taxonomist_test_changed", "SELECT name FROM accounts_study WHERE id = %(study)s", {"study": "bigint"}
    )
    assert before.name != after.name and before.name.startswith("taxonomist_test_changed_")
    assert before.one({"study": study.pk}) == (study.slug,)
    assert after.one({"study": study.pk}) == (study.name,)
    assert before.one({"study": study.pk}) == (study.slug,)


def test_an_orm_compiled_statement_runs_prepared_with_its_parameters_typed_from_their_values(
    study: Study,
) -> None:
    sql, params = (
        Study.objects.filter(pk=study.pk, name__startswith="D", archived_at__isnull=True)
        .values_list("slug")
        .query.sql_with_params()
    )
    statement = compiled_statement("taxonomist_test_compiled", sql, params)
    values = {f"p{n}": value for n, value in enumerate(params)}
    assert statement.one(values) == (study.slug,)
    assert statement.one({**values, "p0": study.pk + 1000}) is None
    with CaptureQueriesContext(connection) as queries:
        statement.one(values)
    postgres = connection.vendor == "postgresql"
    assert queries.captured_queries[-1]["sql"].startswith("EXECUTE" if postgres else "SELECT")


def test_an_orm_compiled_statement_refuses_a_parameter_it_cannot_type_or_count() -> None:
    with pytest.raises(ValueError, match="no known PostgreSQL type"):
        compiled_statement("taxonomist_test_untyped", "SELECT %s", [None])
    with pytest.raises(ValueError, match="2 placeholders for 1 parameters"):
        compiled_statement("taxonomist_test_count", "SELECT %s, %s", [1])
