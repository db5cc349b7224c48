"""Label values are read as one integer array, by PostgreSQL's binary COPY or by a cursor, alike."""

from __future__ import annotations

import numpy as np
import pytest
from django.db import DatabaseError, connection
from django.db.models import BigIntegerField, F, Value
from django.db.models.functions import Cast, Coalesce

from apps.accounts.models import Study, User
from apps.agreement.fetch import _cursor_rows, int_rows
from apps.annotation.models import LabelValue
from apps.corpus.models import Item
from apps.taxonomy.models import Codebook
from tests.agreement.conftest import Annotate

pytestmark = pytest.mark.django_db


@pytest.fixture
def labelled(
    study: Study,
    codebook: Codebook,
    annotate: Annotate,
    items: list[Item],
    annotator_a: User,
    annotator_b: User,
) -> Study:
    for n, item in enumerate(items):
        annotate(1 + n % 2, item, annotator_a, [{"kind": ["bug"], "symptom": ["oom"]}, {"kind": "pending"}])
        annotate(1 + n % 2, item, annotator_b, [{"kind": ["question"], "fix": ["code", "docs"]}])
    return study


def _query(study: Study, *, category: bool = True):  # type: ignore[no-untyped-def]
    big = BigIntegerField()
    values = LabelValue.objects.filter(finding__annotation__assignment__study=study).order_by("pk")
    return values.annotate(
        id_=Cast("pk", big),
        item_=Cast(F("finding__annotation__assignment__item_id"), big),
        category_=Coalesce(Cast("category_id", big), Value(-1), output_field=big)
        if category
        else Cast("category_id", big),
    ).values_list("id_", "item_", "category_")


def test_both_ways_read_the_same_rows_in_the_same_order(labelled: Study) -> None:
    query = _query(labelled)
    expected = np.array(list(query), dtype=np.int64)
    sql, params = query.query.sql_with_params()
    assert len(expected) == 6 * 6 and (expected[:, 2] == -1).sum() == 6  # pending: no category
    assert np.array_equal(int_rows(query, 3), expected)
    assert np.array_equal(_cursor_rows(query.db, sql, params, 3), expected)
    assert int_rows(query.filter(pk__lt=0), 3).shape == (0, 3)


@pytest.mark.skipif(connection.vendor != "postgresql", reason="the binary COPY is PostgreSQL's")
def test_the_binary_copy_refuses_nulls_rather_than_misreading_them(labelled: Study) -> None:
    with pytest.raises(DatabaseError, match="bigint columns without NULLs"):
        int_rows(_query(labelled, category=False), 3)
