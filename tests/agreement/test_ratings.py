"""From the database to rating tables: queries, submitted labels only, levels, pending, findings as sets."""

from __future__ import annotations

import numpy as np
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from pytest_django import DjangoAssertNumQueries

from apps.accounts.models import Study, User
from apps.agreement.metrics import MultiRatingTable, RatingTable, agreement_report
from apps.agreement.ratings import PENDING, RatingsError, build_table, load_study_ratings
from apps.corpus.models import Item
from apps.taxonomy.models import Category, CategoryStatus, Codebook
from tests.agreement.conftest import Annotate
from tests.factories import ItemFactory

pytestmark = pytest.mark.django_db


def _value(table: RatingTable, item: Item, annotator: str, round_number: int = 1) -> str | None:
    code = table.codes[table.items.index(f"{round_number}:{item.pk}"), table.annotators.index(annotator)]
    return None if code < 0 else table.categories[code]


def _set(table: MultiRatingTable, item: Item, annotator: str, round_number: int = 1) -> set[str] | None:
    i, a = table.items.index(f"{round_number}:{item.pk}"), table.annotators.index(annotator)
    if not table.rated[i, a]:
        return None
    return {table.categories[k] for k in np.flatnonzero(table.present[i, a])}


def test_loading_takes_the_same_number_of_queries_whatever_the_size(
    study: Study, codebook: Codebook, annotate: Annotate, annotator_a: User, annotator_b: User, carol: User
) -> None:
    def label(n_items: int) -> None:
        for _ in range(n_items):
            item = ItemFactory(study=study)
            for user in (annotator_a, annotator_b, carol):
                annotate(1, item, user, [{"kind": ["bug"], "symptom": ["oom"], "fix": ["code", "docs"]}])

    label(2)
    with CaptureQueriesContext(connection) as small:
        load_study_ratings(study)
    label(20)
    annotate(2, ItemFactory(study=study), annotator_a, [{"kind": ["question"]}, {"kind": "pending"}])
    with CaptureQueriesContext(connection) as large:
        ratings = load_study_ratings(study)
    assert len(ratings.rows) == 22 * 3 * 4 + 2
    assert len(small.captured_queries) == len(large.captured_queries)


def test_loading_is_seven_queries(
    study: Study,
    codebook: Codebook,
    annotate: Annotate,
    items: list[Item],
    annotator_a: User,
    django_assert_num_queries: DjangoAssertNumQueries,
) -> None:
    for item in items:
        annotate(1, item, annotator_a, [{"kind": ["bug"]}])
    # codebook, dimensions, categories (the index), rounds, findings, label values, annotators
    with django_assert_num_queries(7):
        load_study_ratings(study)


def test_only_submitted_annotations_count(
    study: Study,
    codebook: Codebook,
    annotate: Annotate,
    items: list[Item],
    annotator_a: User,
    annotator_b: User,
) -> None:
    annotate(1, items[0], annotator_a, [{"kind": ["bug"]}])
    annotate(1, items[0], annotator_b, [{"kind": ["question"]}], submitted=False)
    annotate(1, items[1], annotator_b, [{"kind": ["question"]}], submitted=False)
    table = build_table(load_study_ratings(study), "kind").table
    assert table.items == (f"1:{items[0].pk}",)
    assert table.annotators == ("alice",)
    assert table.n_ratings == 1


def test_values_are_compared_at_the_requested_level_of_the_tree(
    study: Study,
    codebook: Codebook,
    annotate: Annotate,
    items: list[Item],
    annotator_a: User,
    annotator_b: User,
) -> None:
    annotate(1, items[0], annotator_a, [{"symptom": ["segfault"]}])
    annotate(1, items[0], annotator_b, [{"symptom": ["oom"]}])
    annotate(1, items[1], annotator_a, [{"symptom": ["slow"]}])
    annotate(1, items[1], annotator_b, [{"symptom": ["slow"]}])
    ratings = load_study_ratings(study)

    leaf = build_table(ratings, "symptom")
    assert isinstance(leaf.table, RatingTable)
    assert leaf.table.categories == ("segfault", "oom", "deadlock", "livelock", "slow", PENDING)
    assert (_value(leaf.table, items[0], "alice"), _value(leaf.table, items[0], "bob")) == ("segfault", "oom")

    top = build_table(ratings, "symptom", level=1)
    assert isinstance(top.table, RatingTable)
    assert top.table.categories == ("crash", "hang", "slow", PENDING)
    assert (_value(top.table, items[0], "alice"), _value(top.table, items[0], "bob")) == ("crash", "crash")
    # A leaf above the level stays itself.
    assert _value(top.table, items[1], "alice") == "slow"
    assert agreement_report(top.table)["percent_agreement"] == 1.0
    assert agreement_report(leaf.table)["percent_agreement"] == 0.5
    # Deeper than the tree is the same as full depth.
    assert build_table(ratings, "symptom", level=5).table.categories == leaf.table.categories


def test_a_level_below_one_is_refused(study: Study, codebook: Codebook) -> None:
    with pytest.raises(RatingsError, match="level must be 1"):
        build_table(load_study_ratings(study), "symptom", level=0)


def test_an_inner_category_chosen_directly_is_declared_at_full_depth(
    study: Study,
    codebook: Codebook,
    annotate: Annotate,
    items: list[Item],
    annotator_a: User,
    annotator_b: User,
) -> None:
    annotate(1, items[0], annotator_a, [{"symptom": ["crash"]}])
    annotate(1, items[0], annotator_b, [{"symptom": ["segfault"]}])
    table = build_table(load_study_ratings(study), "symptom")
    assert table.table.categories == ("segfault", "oom", "deadlock", "livelock", "slow", "crash", PENDING)
    assert table.counts["crash"] == 1 and table.counts["segfault"] == 1


def test_a_retired_category_counts_only_when_used(
    study: Study,
    codebook: Codebook,
    annotate: Annotate,
    items: list[Item],
    annotator_a: User,
    annotator_b: User,
) -> None:
    Category.objects.filter(key__in=["question", "livelock"]).update(status=CategoryStatus.RETIRED)
    annotate(1, items[0], annotator_a, [{"kind": ["question"], "symptom": ["deadlock"]}])
    annotate(1, items[0], annotator_b, [{"kind": ["bug"], "symptom": ["deadlock"]}])
    ratings = load_study_ratings(study)
    assert build_table(ratings, "kind").table.categories == ("bug", "question", PENDING)
    assert build_table(ratings, "symptom").table.categories == (
        "segfault",
        "oom",
        "deadlock",
        "slow",
        PENDING,
    )


def test_pending_is_a_value_of_its_own(
    study: Study,
    codebook: Codebook,
    annotate: Annotate,
    items: list[Item],
    annotator_a: User,
    annotator_b: User,
) -> None:
    annotate(1, items[0], annotator_a, [{"kind": "pending"}])
    annotate(1, items[0], annotator_b, [{"kind": "pending"}])
    annotate(1, items[1], annotator_a, [{"kind": "pending"}])
    annotate(1, items[1], annotator_b, [{"kind": ["bug"]}])
    table = build_table(load_study_ratings(study), "kind")
    assert isinstance(table.table, RatingTable)
    assert _value(table.table, items[0], "alice") == _value(table.table, items[0], "bob") == PENDING
    report = agreement_report(table.table)
    assert report["percent_agreement"] == 0.5  # both pending agree; pending against bug does not
    assert table.counts == {"bug": 1, "question": 0, PENDING: 3}
    assert table.labels[PENDING] is None


def test_several_findings_make_each_annotators_value_a_set(
    study: Study,
    codebook: Codebook,
    annotate: Annotate,
    items: list[Item],
    annotator_a: User,
    annotator_b: User,
) -> None:
    annotate(1, items[0], annotator_a, [{"symptom": ["segfault"]}, {"symptom": ["oom"]}])
    annotate(1, items[0], annotator_b, [{"symptom": ["oom"]}])
    annotate(1, items[1], annotator_a, [{"symptom": ["deadlock"]}])
    annotate(1, items[1], annotator_b, [{"symptom": ["deadlock"]}, {"symptom": ["deadlock"]}])
    ratings = load_study_ratings(study)

    leaf = build_table(ratings, "symptom")
    assert isinstance(leaf.table, MultiRatingTable)
    assert leaf.several_findings
    assert _set(leaf.table, items[0], "alice") == {"segfault", "oom"}
    assert _set(leaf.table, items[0], "bob") == {"oom"}
    assert _set(leaf.table, items[1], "bob") == {"deadlock"}
    assert agreement_report(leaf.table)["percent_agreement"] == 0.5

    # At the top level both of alice's findings are crashes: the sets are equal.
    top = build_table(ratings, "symptom", level=1)
    assert isinstance(top.table, MultiRatingTable)
    assert _set(top.table, items[0], "alice") == {"crash"}
    assert agreement_report(top.table)["percent_agreement"] == 1.0


def test_a_multi_choice_dimension_gives_a_set_table_even_with_one_finding(
    study: Study,
    codebook: Codebook,
    annotate: Annotate,
    items: list[Item],
    annotator_a: User,
    annotator_b: User,
) -> None:
    annotate(1, items[0], annotator_a, [{"fix": ["config", "code"]}])
    annotate(1, items[0], annotator_b, [{"fix": ["code"]}])
    table = build_table(load_study_ratings(study), "fix")
    assert isinstance(table.table, MultiRatingTable)
    assert not table.several_findings
    assert _set(table.table, items[0], "alice") == {"config", "code"}
    report = agreement_report(table.table)
    assert "krippendorff_alpha_masi" in report
    assert table.counts == {"config": 1, "code": 2, "docs": 0, PENDING: 0}


def test_an_annotator_without_a_value_in_the_dimension_did_not_rate_it(
    study: Study,
    codebook: Codebook,
    annotate: Annotate,
    items: list[Item],
    annotator_a: User,
    annotator_b: User,
) -> None:
    annotate(1, items[0], annotator_a, [{"kind": ["bug"], "symptom": ["oom"]}])
    annotate(1, items[0], annotator_b, [{"kind": ["question"]}])
    annotate(1, items[1], annotator_a, [{"kind": ["bug"], "symptom": ["oom"]}])
    annotate(1, items[1], annotator_b, [{"kind": ["bug"], "symptom": ["oom"]}])
    table = build_table(load_study_ratings(study), "symptom")
    assert isinstance(table.table, RatingTable)
    assert _value(table.table, items[0], "bob") is None
    assert table.n_pairable == 1
    assert agreement_report(table.table)["pairwise"][0]["n"] == 1


def test_an_item_in_two_rounds_is_two_units_and_a_round_can_be_chosen(
    study: Study,
    codebook: Codebook,
    annotate: Annotate,
    items: list[Item],
    annotator_a: User,
    annotator_b: User,
) -> None:
    annotate(1, items[0], annotator_a, [{"kind": ["bug"]}])
    annotate(1, items[0], annotator_b, [{"kind": ["bug"]}])
    annotate(2, items[0], annotator_a, [{"kind": ["bug"]}])
    annotate(2, items[0], annotator_b, [{"kind": ["question"]}])
    ratings = load_study_ratings(study)
    every = build_table(ratings, "kind")
    assert every.units == ((1, items[0].pk), (2, items[0].pk))
    assert every.unit_of(every.table.items[1]) == (2, items[0].pk)
    second = build_table(ratings, "kind", round_number=2)
    assert second.rounds == (2,)
    assert agreement_report(second.table)["percent_agreement"] == 0.0


def test_unknown_dimensions_and_rounds_name_the_valid_ones(
    study: Study, codebook: Codebook, annotate: Annotate, items: list[Item], annotator_a: User
) -> None:
    annotate(1, items[0], annotator_a, [{"kind": ["bug"]}])
    ratings = load_study_ratings(study)
    with pytest.raises(
        RatingsError, match="unknown dimension 'colour'; valid dimensions: kind, symptom, fix"
    ):
        build_table(ratings, "colour")
    with pytest.raises(RatingsError, match="unknown round 7; valid rounds: 1"):
        build_table(ratings, "kind", round_number=7)
    with pytest.raises(RatingsError, match="valid dimensions: kind"):
        load_study_ratings(study, dimension="colour")


def test_a_category_keyed_pending_is_refused(
    study: Study, codebook: Codebook, annotate: Annotate, items: list[Item], annotator_a: User
) -> None:
    Category.objects.filter(key="question").update(key=PENDING)
    with pytest.raises(RatingsError, match="category keyed 'pending'"):
        build_table(load_study_ratings(study), "kind")


def test_loading_one_dimension_reads_only_its_labels(
    study: Study, codebook: Codebook, annotate: Annotate, items: list[Item], annotator_a: User
) -> None:
    annotate(1, items[0], annotator_a, [{"kind": ["bug"], "symptom": ["oom"], "fix": ["code", "docs"]}])
    assert len(load_study_ratings(study, dimension="fix").rows) == 2
    assert load_study_ratings(study).annotators == {annotator_a.pk: "alice"}


def test_a_study_without_labels_gives_an_empty_table(study: Study, codebook: Codebook) -> None:
    table = build_table(load_study_ratings(study), "symptom", level=1)
    assert table.table.items == () and table.table.annotators == ()
    assert (
        agreement_report(table.table)["undefined"]["krippendorff_alpha"] == "no item has two or more ratings"
    )
