"""How `rows.StudyReader` reads: one label text per finding, and queries that stay cheap in a large table."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.accounts.models import Study, User
from apps.adjudication.models import DecisionValue, Provenance
from apps.annotation.models import Round
from apps.export.findings import parse_labels
from apps.export.rows import ExportOptions, StudyReader
from apps.export.tables import PENDING_VALUE, ExportItem, FindingRecord, Value
from apps.taxonomy.index import CodebookIndex
from apps.taxonomy.models import Category
from tests.factories import ItemFactory

from .conftest import Labeller

pytestmark = pytest.mark.django_db

FAULT = Value("fault", "Fault")
HOWTO = Value("howto", "How-to")


def read(study: Study, **options: object) -> dict[str, ExportItem]:
    include_open = bool(options.pop("include_open", False))
    reader = StudyReader(
        study,
        CodebookIndex.for_study(study),
        ExportOptions(format="csv", **options),  # type: ignore[arg-type]
        include_open=include_open,
        chunk_size=2,
    )
    return {item.url: item for item in reader}


def test_label_texts_read_back_as_dimension_category_original_and_pending() -> None:
    assert parse_labels("") == []
    assert parse_labels(":::") == []  # the outer join's row of a finding without values
    assert parse_labels("3:17::,3:18:12:,4:::p") == [
        (3, 17, None, False),
        (3, 18, 12, False),
        (4, None, None, True),
    ]


def test_findings_without_values_pending_values_and_moved_values_are_read_back(
    labelled: Study, annotator_b: User
) -> None:
    labeller = Labeller(labelled)
    item = ItemFactory(study=labelled, url="https://github.com/o/r/issues/6", title="Empty findings")
    round2 = Round.objects.get(study=labelled, number=2)
    labeller.annotate(item, annotator_b, round2, [{}])
    labeller.decide(item, [{}, {"type": ["howto"]}], Provenance.IMPORTED, round_=round2)
    moved = DecisionValue.objects.get(
        finding__decision__item__url__endswith="/issues/1", dimension__key="symptom"
    )
    moved.original_category = Category.objects.get(dimension__codebook__study=labelled, key="oom")
    moved.save()

    items = read(labelled, raw=True)

    empty = items["https://github.com/o/r/issues/6"]
    assert empty.decision is not None
    assert empty.decision.findings == (FindingRecord(1, {}), FindingRecord(2, {"type": (HOWTO,)}))
    assert [a.findings for a in empty.annotations] == [(FindingRecord(1, {}),)]
    (alice, *_) = items["https://github.com/o/r/issues/4"].annotations
    assert alice.findings == (FindingRecord(1, {"type": (FAULT,), "symptom": (PENDING_VALUE,)}),)
    first = items["https://github.com/o/r/issues/1"].decision
    assert first is not None
    assert first.findings[0].values["symptom"] == (Value("segfault", "Crash > Segfault", "oom"),)


def test_records_are_the_same_when_the_finding_cache_is_emptied_while_reading(labelled: Study) -> None:
    index = CodebookIndex.for_study(labelled)
    options = ExportOptions(format="zip")
    reader = StudyReader(labelled, index, options, include_open=True, chunk_size=1)
    reader.values.max_cached = 1
    assert list(reader) == list(StudyReader(labelled, index, options, include_open=True))


def test_decided_items_are_bounded_by_id_on_both_sides_of_the_join(labelled: Study) -> None:
    # Bounded on one side only, PostgreSQL merge-joins the other from its first row for every chunk.
    with CaptureQueriesContext(connection) as queries:
        read(labelled)
    pages = [q["sql"] for q in queries.captured_queries if 'FROM "corpus_item"' in q["sql"]]
    assert len(pages) == 3  # items 1-2, item 3, the empty page
    for sql in pages:
        assert '"corpus_item"."id" >' in sql and '"adjudication_decision"."item_id" >' in sql


def test_annotations_and_their_findings_are_read_by_id_not_joined_to_the_assignments(labelled: Study) -> None:
    # Joined to the assignments of an id range, PostgreSQL scans the annotations of every study per chunk.
    with CaptureQueriesContext(connection) as queries:
        read(labelled, include_open=True)
    reads = [
        q["sql"]
        for q in queries.captured_queries
        if q["sql"].startswith(('SELECT "annotation_annotation"', 'SELECT "annotation_finding"'))
    ]
    assert reads
    assert not any("annotation_assignment" in sql for sql in reads)
