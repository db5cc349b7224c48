"""Agreement metrics: published worked examples, conventions of docs/design.md §6, undefined cases,
properties.

Comparisons with the reference libraries on random data live in test_metrics_references.py.
"""

import json
from collections.abc import Mapping, Sequence

import numpy as np
import pytest

from apps.agreement.metrics import (
    MultiRatingTable,
    RatingTable,
    Result,
    agreement_report,
    bootstrap_alpha_ci,
    cohen_kappa,
    confusion_matrix,
    fleiss_kappa,
    gwet_ac1,
    jaccard_distance,
    krippendorff_alpha_nominal,
    krippendorff_alpha_set,
    masi_distance,
    pairwise,
    per_category,
    percent_agreement,
)


def table_from_columns(columns: Mapping[str, Sequence[str | None]], categories: Sequence[str]) -> RatingTable:
    """One list per annotator, one entry per item (``None`` = did not rate); items are u1, u2, ..."""
    triples = [
        (f"u{i + 1}", annotator, label)
        for annotator, labels in columns.items()
        for i, label in enumerate(labels)
        if label is not None
    ]
    return RatingTable.from_triples(triples, categories)


def table_from_contingency(matrix: Sequence[Sequence[int]], categories: Sequence[str]) -> RatingTable:
    """Two annotators: ``matrix[r][c]`` items rated ``categories[r]`` by alice, ``categories[c]`` by bob."""
    triples = []
    for r, row in enumerate(matrix):
        for c, count in enumerate(row):
            for k in range(count):
                item = f"{r}-{c}-{k}"
                triples += [(item, "alice", categories[r]), (item, "bob", categories[c])]
    return RatingTable.from_triples(triples, categories)


def value(result: Result) -> float:
    assert result.value is not None, result.reason
    return result.value


# Krippendorff (2011), "Computing Krippendorff's alpha-reliability", section C: 4 observers, 12 units,
# values 1-5 with missing data; the same data is irrCAC's raw_4raters (Gwet 2014).
KRIPPENDORFF_2011 = {
    "A": ["1", "2", "3", "3", "2", "1", "4", "1", "2", None, None, None],
    "B": ["1", "2", "3", "3", "2", "2", "4", "1", "2", "5", None, "3"],
    "C": [None, "3", "3", "3", "2", "3", "4", "2", "2", "5", "1", None],
    "D": ["1", "2", "3", "3", "2", "4", "4", "1", "2", "5", "1", None],
}
FIVE = ["1", "2", "3", "4", "5"]


# ---------------------------------------------------------------------------------- published values
def test_fleiss_kappa_of_the_fleiss_1971_wikipedia_example_is_0_210() -> None:
    # 10 subjects, 14 raters, 5 categories; Wikipedia "Fleiss' kappa": P = 0.378, Pe = 0.213, kappa = 0.210.
    counts = [
        [0, 0, 0, 0, 14],
        [0, 2, 6, 4, 2],
        [0, 0, 3, 5, 6],
        [0, 3, 9, 2, 0],
        [2, 2, 8, 1, 1],
        [7, 7, 0, 0, 0],
        [3, 2, 6, 3, 0],
        [2, 5, 3, 2, 2],
        [6, 5, 2, 1, 0],
        [0, 2, 2, 3, 7],
    ]
    codes = np.array([np.repeat(np.arange(5), row) for row in counts])
    table = RatingTable(
        codes, tuple("abcde"), tuple(f"s{i}" for i in range(10)), tuple(f"r{j}" for j in range(14))
    )

    assert round(value(fleiss_kappa(table)), 3) == 0.210
    assert round(value(percent_agreement(table)), 3) == 0.378


@pytest.mark.parametrize(
    ("matrix", "expected"),
    [
        ([[20, 5], [10, 15]], 0.4),  # Wikipedia "Cohen's kappa", simple example: po = 0.7, pe = 0.5
        ([[45, 15], [25, 15]], 0.1304),  # Wikipedia, same percentages but different numbers (1)
        ([[25, 35], [5, 35]], 0.2593),  # Wikipedia, same percentages but different numbers (2)
    ],
)
def test_cohen_kappa_matches_the_wikipedia_examples(matrix: list[list[int]], expected: float) -> None:
    table = table_from_contingency(matrix, ["yes", "no"])

    assert round(value(cohen_kappa(table)), 4) == expected


def test_nominal_alpha_of_krippendorff_2011_with_missing_data_is_0_743() -> None:
    table = table_from_columns(KRIPPENDORFF_2011, FIVE)

    assert round(value(krippendorff_alpha_nominal(table)), 3) == 0.743


def test_nominal_alpha_of_the_wikipedia_three_coder_example_is_0_691() -> None:
    table = table_from_columns(
        {
            "c1": [None, None, None, None, None, "3", "4", "1", "2", "1", "1", "3", "3", None, "3"],
            "c2": ["1", None, "2", "1", "3", "3", "4", "3", None, None, None, None, None, None, None],
            "c3": [None, None, "2", "1", "3", "4", "4", None, "2", "1", "1", "3", "3", None, "4"],
        },
        ["1", "2", "3", "4"],
    )

    assert round(value(krippendorff_alpha_nominal(table)), 6) == 0.691358


def test_gwet_ac1_of_gwet_2014_four_raters_example_is_0_77544() -> None:
    # Gwet (2014), Handbook of Inter-Rater Reliability; irrCAC raw_4raters: AC1 0.77544, pa 0.81818.
    table = table_from_columns(KRIPPENDORFF_2011, FIVE)

    assert round(value(gwet_ac1(table)), 5) == 0.77544
    assert round(value(percent_agreement(table)), 5) == 0.81818


def test_gwet_ac1_of_gwet_2014_abstractors_table_is_0_84933() -> None:
    # Gwet (2014): two abstractors, 100 pregnancies, irrCAC table_cont3x3abstractors: AC1 0.84933, pa 0.89.
    table = table_from_contingency([[13, 0, 0], [0, 20, 7], [0, 4, 56]], ["Ectopic", "AIU", "NIU"])

    assert round(value(gwet_ac1(table)), 5) == 0.84933
    assert value(percent_agreement(table)) == pytest.approx(0.89, abs=1e-15)


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ({"x", "y"}, {"x", "y", "z", "w"}, 1 - (2 / 4) * (2 / 3)),  # nltk doctest: 0.6667
        ({"x"}, {"x", "y"}, 1 - (1 / 2) * (2 / 3)),  # subset: M = 2/3
        ({"x", "y"}, {"y", "z"}, 1 - (1 / 3) * (1 / 3)),  # overlap: M = 1/3
        ({"x"}, {"y"}, 1.0),  # disjoint
        ({"x", "y"}, {"y", "x"}, 0.0),  # equal
        (set(), set(), 0.0),  # two empty sets: same value
        (set(), {"x"}, 1.0),
    ],
)
def test_masi_distance_follows_passonneau_2006(a: set[str], b: set[str], expected: float) -> None:
    assert masi_distance(a, b) == pytest.approx(expected, abs=1e-15)
    assert masi_distance(b, a) == masi_distance(a, b)


def test_jaccard_distance_is_one_minus_jaccard_and_zero_for_two_empty_sets() -> None:
    assert jaccard_distance({"x", "y"}, {"y", "z"}) == pytest.approx(2 / 3, abs=1e-15)
    assert jaccard_distance(set(), set()) == 0.0
    assert jaccard_distance(set(), {"x"}) == 1.0


# ------------------------------------------------------------------------------------ conventions
def test_percent_agreement_averages_the_share_of_agreeing_pairs_over_items_with_two_ratings() -> None:
    table = table_from_columns(
        {"a": ["x", "x", "x", "y"], "b": ["x", "y", None, "y"], "c": ["x", "y", None, None]}, ["x", "y"]
    )
    # item 1: 3 of 3 pairs agree; item 2: 1 of 3; item 3: a single rating, left out; item 4: 1 of 1.
    assert value(percent_agreement(table)) == pytest.approx((1 + 1 / 3 + 1) / 3, abs=1e-15)


def test_cohen_kappa_is_listwise_over_items_both_annotators_rated() -> None:
    complete = table_from_columns({"a": ["x", "y", "x", "y"], "b": ["x", "y", "y", "y"]}, ["x", "y"])
    with_gaps = table_from_columns(
        {"a": ["x", "y", "x", "y", "x", None], "b": ["x", "y", "y", "y", None, "x"]}, ["x", "y"]
    )

    assert cohen_kappa(with_gaps) == cohen_kappa(complete)


def test_cohen_kappa_is_null_with_three_annotators_and_pairwise_gives_every_pair() -> None:
    table = table_from_columns(KRIPPENDORFF_2011, FIVE)

    assert cohen_kappa(table).value is None
    assert "exactly two annotators" in str(cohen_kappa(table).reason)
    pairs = pairwise(table)
    assert [(p.a, p.b) for p in pairs] == [
        ("A", "B"),
        ("A", "C"),
        ("A", "D"),
        ("B", "C"),
        ("B", "D"),
        ("C", "D"),
    ]
    two = table_from_columns({"A": KRIPPENDORFF_2011["A"], "B": KRIPPENDORFF_2011["B"]}, FIVE)
    assert pairs[0].cohen_kappa == cohen_kappa(two)
    assert pairs[0].n == 9
    assert pairs[0].percent_agreement.value == pytest.approx(8 / 9, abs=1e-15)


def test_fleiss_kappa_is_null_when_items_have_different_numbers_of_ratings() -> None:
    table = table_from_columns(KRIPPENDORFF_2011, FIVE)

    result = fleiss_kappa(table)

    assert result.value is None
    assert "same number" in str(result.reason)


def test_fleiss_kappa_is_null_when_every_item_has_a_single_rating() -> None:
    table = table_from_columns({"a": ["x", None], "b": [None, "y"]}, ["x", "y"])

    assert fleiss_kappa(table).value is None
    assert "single rating" in str(fleiss_kappa(table).reason)


def test_fleiss_kappa_ignores_items_nobody_rated() -> None:
    rated = table_from_columns({"a": ["x", "y", "x"], "b": ["x", "y", "y"]}, ["x", "y"])
    codes = np.vstack([rated.codes, [[-1, -1]]])
    with_empty_item = RatingTable(codes, rated.categories, (*rated.items, "nobody"), rated.annotators)

    assert fleiss_kappa(with_empty_item) == fleiss_kappa(rated)
    assert krippendorff_alpha_nominal(with_empty_item) == krippendorff_alpha_nominal(rated)
    assert gwet_ac1(with_empty_item) == gwet_ac1(rated)


def test_gwet_ac1_counts_declared_categories_nobody_used() -> None:
    columns = {"a": ["x", "y", "x", "x"], "b": ["x", "y", "y", "x"]}
    two = table_from_columns(columns, ["x", "y"])
    five = table_from_columns(columns, ["x", "y", "z", "v", "w"])

    # p_e = sum pi (1 - pi) / (q - 1) shrinks when q grows; kappa and alpha do not see unused categories.
    assert value(gwet_ac1(five)) > value(gwet_ac1(two))
    assert cohen_kappa(five) == cohen_kappa(two)
    assert krippendorff_alpha_nominal(five) == krippendorff_alpha_nominal(two)


# ------------------------------------------------------------------------------------ undefined
def test_everyone_using_one_category_leaves_kappa_and_alpha_undefined_not_one() -> None:
    table = table_from_columns({"a": ["x", "x", "x"], "b": ["x", "x", "x"]}, ["x", "y"])

    for metric in (cohen_kappa, fleiss_kappa, krippendorff_alpha_nominal):
        result = metric(table)
        assert result.value is None
        assert "expected disagreement is zero" in str(result.reason)
    assert percent_agreement(table).value == 1.0
    assert gwet_ac1(table).value == 1.0


def test_gwet_ac1_is_undefined_with_a_single_declared_category() -> None:
    table = table_from_columns({"a": ["x", "x"], "b": ["x", "x"]}, ["x"])

    assert gwet_ac1(table).value is None
    assert "two or more possible values (declared categories)" in str(gwet_ac1(table).reason)
    assert percent_agreement(table).value == 1.0


def test_no_item_with_two_ratings_leaves_every_coefficient_undefined() -> None:
    table = table_from_columns({"a": ["x", None], "b": [None, "y"]}, ["x", "y"])

    for metric in (percent_agreement, cohen_kappa, fleiss_kappa, krippendorff_alpha_nominal, gwet_ac1):
        assert metric(table).value is None, metric.__name__
    assert "no item is rated by both" in str(cohen_kappa(table).reason)
    assert "two or more ratings" in str(krippendorff_alpha_nominal(table).reason)


def test_a_result_refuses_nan_and_needs_exactly_a_value_or_a_reason() -> None:
    with pytest.raises(ValueError, match="finite"):
        Result(float("nan"))
    with pytest.raises(ValueError, match="either a value or a reason"):
        Result(None, None)
    with pytest.raises(ValueError, match="either a value or a reason"):
        Result(0.5, "why")


# ------------------------------------------------------------------------------------ edge cases
def test_singleton_items_change_neither_alpha_nor_percent_agreement() -> None:
    base = {"a": ["x", "y", "x", "y"], "b": ["x", "y", "y", "y"]}
    plus_singletons = {"a": [*base["a"], "x", None], "b": [*base["b"], None, "x"]}
    before, after = table_from_columns(base, ["x", "y"]), table_from_columns(plus_singletons, ["x", "y"])

    assert krippendorff_alpha_nominal(after) == krippendorff_alpha_nominal(before)
    assert percent_agreement(after) == percent_agreement(before)
    assert cohen_kappa(after) == cohen_kappa(before)


def test_an_annotator_without_any_rating_changes_alpha_nothing_and_gets_empty_pairs() -> None:
    triples = [(item, annotator, label) for item, annotator, label in _triples(KRIPPENDORFF_2011)]
    table = RatingTable.from_triples(triples, FIVE)
    with_silent = RatingTable.from_triples(triples, FIVE, annotators=["A", "B", "C", "D", "silent"])

    assert krippendorff_alpha_nominal(with_silent) == krippendorff_alpha_nominal(table)
    assert gwet_ac1(with_silent) == gwet_ac1(table)
    silent_pairs = [p for p in pairwise(with_silent) if "silent" in (p.a, p.b)]
    assert len(silent_pairs) == 4
    assert all(
        p.n == 0 and p.cohen_kappa.value is None and p.percent_agreement.value is None for p in silent_pairs
    )


def test_two_annotators_one_of_them_silent_leave_cohen_kappa_undefined() -> None:
    table = RatingTable.from_triples([("u1", "a", "x"), ("u2", "a", "y")], ["x", "y"], annotators=["a", "b"])

    assert cohen_kappa(table).value is None
    assert "no item is rated by both" in str(cohen_kappa(table).reason)


def test_an_undeclared_label_is_an_error_that_names_it() -> None:
    with pytest.raises(ValueError, match=r"'bogus'.*not a declared category"):
        RatingTable.from_triples([("u1", "a", "x"), ("u1", "b", "bogus")], ["x", "y"])


def test_two_ratings_by_one_annotator_of_one_item_are_an_error() -> None:
    with pytest.raises(ValueError, match="two ratings by annotator 'a'"):
        RatingTable.from_triples([("u1", "a", "x"), ("u1", "a", "y")], ["x", "y"])


def test_a_table_refuses_codes_outside_the_categories() -> None:
    with pytest.raises(ValueError, match=r"\[-1, 2\)"):
        RatingTable(np.array([[0, 2]]), ("x", "y"), ("u1",), ("a", "b"))


def test_pending_is_a_value_of_its_own() -> None:
    table = table_from_columns({"a": ["x", "pending", "y"], "b": ["x", "y", "y"]}, ["x", "y", "pending"])

    assert value(percent_agreement(table)) == pytest.approx(2 / 3, abs=1e-15)
    assert "pending" in per_category(table)


# ------------------------------------------------------------------------------------ properties
def _triples(columns: Mapping[str, Sequence[str | None]]) -> list[tuple[str, str, str]]:
    return [
        (f"u{i + 1}", annotator, label)
        for annotator, labels in columns.items()
        for i, label in enumerate(labels)
        if label is not None
    ]


def _random_triples(seed: int, n_items: int = 40, n_annotators: int = 3) -> list[tuple[str, str, str]]:
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 4, n_items)
    triples = []
    for i in range(n_items):
        for a in range(n_annotators):
            if rng.random() < 0.2:
                continue
            label = truth[i] if rng.random() < 0.6 else rng.integers(0, 4)
            triples.append((f"item{i}", f"ann{a}", "wxyz"[label]))
    return triples


def _coefficients(report: dict[str, object]) -> dict[str, object]:
    keep = ("percent_agreement", "cohen_kappa", "fleiss_kappa", "krippendorff_alpha", "gwet_ac1")
    return {key: report[key] for key in keep}


@pytest.mark.parametrize("seed", range(5))
def test_permuting_items_changes_nothing(seed: int) -> None:
    triples = _random_triples(seed)
    shuffled = [triples[i] for i in np.random.default_rng(99).permutation(len(triples))]

    assert agreement_report(RatingTable.from_triples(shuffled, "wxyz")) == agreement_report(
        RatingTable.from_triples(triples, "wxyz")
    )


@pytest.mark.parametrize("seed", range(5))
def test_swapping_annotators_changes_nothing(seed: int) -> None:
    triples = _random_triples(seed)
    rename = {"ann0": "ann2", "ann1": "ann0", "ann2": "ann1"}
    swapped = [(item, rename[annotator], label) for item, annotator, label in triples]

    before = agreement_report(RatingTable.from_triples(triples, "wxyz"))
    after = agreement_report(RatingTable.from_triples(swapped, "wxyz"))

    assert _coefficients(after) == _coefficients(before)
    assert after["per_category"] == before["per_category"]
    pair_values = sorted((p["n"], p["percent_agreement"], p["cohen_kappa"]) for p in before["pairwise"])
    assert (
        sorted((p["n"], p["percent_agreement"], p["cohen_kappa"]) for p in after["pairwise"]) == pair_values
    )


@pytest.mark.parametrize("seed", range(5))
def test_renaming_categories_changes_nothing(seed: int) -> None:
    triples = _random_triples(seed, n_annotators=2)
    rename = {"w": "zeta", "x": "alpha", "y": "mu", "z": "beta"}
    renamed = [(item, annotator, rename[label]) for item, annotator, label in triples]

    before = agreement_report(RatingTable.from_triples(triples, "wxyz"))
    after = agreement_report(RatingTable.from_triples(renamed, ["beta", "mu", "alpha", "zeta"]))

    assert _coefficients(after) == _coefficients(before)
    assert after["pairwise"] == before["pairwise"]
    assert {rename[c]: v for c, v in before["per_category"].items()} == after["per_category"]


@pytest.mark.parametrize("seed", range(3))
def test_multi_choice_coefficients_do_not_depend_on_item_or_annotator_order(seed: int) -> None:
    rng = np.random.default_rng(seed)
    triples = [
        (f"item{i}", f"ann{a}", label)
        for i in range(30)
        for a in range(3)
        for label in (rng.choice(["x", "y", "z"], size=rng.integers(1, 3), replace=False).tolist() or [""])
    ]
    shuffled = [triples[i] for i in rng.permutation(len(triples))]
    rename = {"ann0": "ann1", "ann1": "ann2", "ann2": "ann0"}
    moved = [(item, rename[annotator], label) for item, annotator, label in shuffled]

    before = agreement_report(MultiRatingTable.from_triples(triples, ["x", "y", "z"]))
    after = agreement_report(MultiRatingTable.from_triples(moved, ["x", "y", "z"]))

    keys = ("krippendorff_alpha_masi", "krippendorff_alpha_jaccard", "per_category")
    assert _coefficients(after) == _coefficients(before)
    assert {k: after[k] for k in keys} == {k: before[k] for k in keys}


# ------------------------------------------------------------------------------------ multi-choice
def _multi(rows: dict[str, list[set[str] | None]], categories: Sequence[str]) -> MultiRatingTable:
    triples = []
    for annotator, sets in rows.items():
        for i, chosen in enumerate(sets):
            if chosen is None:
                continue
            triples += [(f"u{i + 1}", annotator, label) for label in sorted(chosen)] or [
                (f"u{i + 1}", annotator, "")
            ]
    return MultiRatingTable.from_triples(triples, categories)


def test_an_empty_choice_is_a_rating_and_not_a_missing_one() -> None:
    table = _multi({"a": [set(), {"x"}, None], "b": [set(), {"x"}, {"y"}]}, ["x", "y"])

    assert table.rated.tolist() == [[True, True], [True, True], [False, True]]
    assert table.n_ratings == 5
    assert table.as_nominal().categories == ("[]", '["x"]', '["y"]')
    assert value(percent_agreement(table)) == 1.0


def test_a_multi_table_refuses_choices_where_nobody_rated() -> None:
    present = np.array([[[True], [False]]])
    rated = np.array([[True, False]])

    with pytest.raises(ValueError, match="marked as not rated"):
        MultiRatingTable(present, ~rated, ("x",), ("u1",), ("a", "b"))
    assert MultiRatingTable(present, rated, ("x",), ("u1",), ("a", "b")).n_ratings == 1


def test_a_multi_table_refuses_an_undeclared_label_and_duplicate_names() -> None:
    with pytest.raises(ValueError, match=r"'z'.*not a declared category"):
        MultiRatingTable.from_triples([("u1", "a", "x"), ("u1", "b", "z")], ["x", "y"])
    with pytest.raises(ValueError, match="duplicate category 'x'"):
        MultiRatingTable.from_triples([("u1", "a", "x")], ["x", "x"])


def test_multi_choice_alpha_with_masi_weighs_partial_agreement() -> None:
    table = _multi(
        {"a": [{"x"}, {"x", "y"}, {"y"}, {"z"}], "b": [{"x"}, {"x"}, {"y"}, {"x", "z"}]}, ["x", "y", "z"]
    )

    nominal = value(krippendorff_alpha_nominal(table))
    masi = value(krippendorff_alpha_set(table, "masi"))
    jaccard = value(krippendorff_alpha_set(table, "jaccard"))

    # Partial overlaps count as partial agreement, so both set distances are kinder than nominal.
    assert nominal < masi
    assert nominal < jaccard


def test_multi_choice_alpha_is_undefined_when_every_rating_is_the_same_set() -> None:
    table = _multi({"a": [{"x", "y"}, {"x", "y"}], "b": [{"x", "y"}, {"x", "y"}]}, ["x", "y"])

    for distance in ("masi", "jaccard"):
        result = krippendorff_alpha_set(table, distance)
        assert result.value is None
        assert "expected disagreement is zero" in str(result.reason)


def test_multi_choice_gwet_ac1_runs_over_every_subset_of_the_declared_categories() -> None:
    table = _multi({"a": [{"x"}, {"x", "y"}, {"y"}], "b": [{"x"}, {"y"}, {"y"}]}, ["x", "y"])
    # By hand: pa = (1 + 0 + 1) / 3; pi_S = mean over items of the share of raters choosing set S;
    # q = 4 subsets of {x, y} (the empty set and {x, y} included).
    pi = {"x": 2 / 6, "xy": 1 / 6, "y": 3 / 6}
    pe = sum(p * (1 - p) for p in pi.values()) / (4 - 1)

    assert value(gwet_ac1(table)) == pytest.approx((2 / 3 - pe) / (1 - pe), abs=1e-15)


def test_per_category_of_a_multi_table_uses_present_or_absent_per_category() -> None:
    table = _multi(
        {"a": [{"x"}, {"x", "y"}, set(), {"y"}], "b": [{"x"}, {"x"}, {"y"}, {"y"}]}, ["x", "y", "z"]
    )
    binary_x = table_from_columns({"a": ["1", "1", "0", "0"], "b": ["1", "1", "0", "0"]}, ["0", "1"])
    binary_y = table_from_columns({"a": ["0", "1", "0", "1"], "b": ["0", "0", "1", "1"]}, ["0", "1"])

    result = per_category(table)

    assert list(result) == ["x", "y", "z"]
    assert result["x"].cohen_kappa == cohen_kappa(binary_x)
    assert result["y"].krippendorff_alpha == krippendorff_alpha_nominal(binary_y)
    assert result["y"].fleiss_kappa == fleiss_kappa(binary_y)
    assert result["z"].krippendorff_alpha.value is None  # nobody chose z: one value, "not z"
    assert "'not z'" in str(result["z"].krippendorff_alpha.reason)


# ------------------------------------------------------------------------------------ confusion matrix
def test_confusion_matrix_counts_and_lists_the_items_of_each_cell() -> None:
    table = table_from_columns(
        {"a": ["x", "x", "y", "y", None], "b": ["x", "y", "y", "y", "x"]}, ["x", "y", "z"]
    )

    matrix = confusion_matrix(table, "a", "b")

    assert matrix.labels == ("x", "y", "z")
    assert matrix.counts.tolist() == [[1, 1, 0], [0, 2, 0], [0, 0, 0]]
    assert matrix.items[0][1] == ("u2",)
    assert matrix.items[1][1] == ("u3", "u4")
    assert matrix.items[2][2] == ()


def test_confusion_matrix_refuses_an_unknown_annotator() -> None:
    table = table_from_columns({"a": ["x"], "b": ["x"]}, ["x", "y"])

    with pytest.raises(ValueError, match="unknown annotator 'carol'"):
        confusion_matrix(table, "a", "carol")


# ------------------------------------------------------------------------------------ bootstrap
def test_bootstrap_interval_is_reproducible_with_a_seed_and_brackets_plausible_values() -> None:
    table = RatingTable.from_triples(_random_triples(1, n_items=200), "wxyz")

    first = bootstrap_alpha_ci(table, 300, seed=7)
    second = bootstrap_alpha_ci(table, 300, seed=7)

    assert first == second
    assert first.value is not None
    low, high = first.value
    assert -1 <= low < value(krippendorff_alpha_nominal(table)) < high <= 1
    assert first.replicates == 300


def test_bootstrap_drops_replicates_where_alpha_is_undefined() -> None:
    # Three pairable units; a resample of only the two agreeing-on-'x' units leaves a single value.
    table = table_from_columns({"a": ["x", "x", "y"], "b": ["x", "x", "x"]}, ["x", "y"])

    result = bootstrap_alpha_ci(table, 200, seed=3)

    assert result.value is not None
    assert 0 < result.replicates < 200


def test_bootstrap_interval_is_null_when_alpha_is_never_defined() -> None:
    table = table_from_columns({"a": ["x", "x"], "b": ["x", "x"]}, ["x", "y"])

    result = bootstrap_alpha_ci(table, 50, seed=1)

    assert result.value is None
    assert "every bootstrap replicate" in str(result.reason)


def test_bootstrap_needs_a_positive_number_of_replicates() -> None:
    table = table_from_columns({"a": ["x", "y"], "b": ["x", "x"]}, ["x", "y"])

    with pytest.raises(ValueError, match="must be positive"):
        bootstrap_alpha_ci(table, 0, seed=1)


# ------------------------------------------------------------------------------------ report
def test_report_has_exactly_the_design_keys_and_is_strict_json() -> None:
    table = table_from_columns(KRIPPENDORFF_2011, FIVE)

    report = agreement_report(table, bootstrap=100, seed=1)

    assert list(report) == [
        "n_items",
        "n_annotators",
        "n_ratings",
        "percent_agreement",
        "cohen_kappa",
        "fleiss_kappa",
        "krippendorff_alpha",
        "gwet_ac1",
        "per_category",
        "pairwise",
        "krippendorff_alpha_ci",
        "cohen_kappa_ci",
        "fleiss_kappa_ci",
        "gwet_ac1_ci",
        "undefined",
    ]
    assert (report["n_items"], report["n_annotators"], report["n_ratings"]) == (12, 4, 41)
    assert list(report["per_category"]) == FIVE
    assert set(report["per_category"]["1"]) == {"cohen_kappa", "fleiss_kappa", "krippendorff_alpha"}
    assert set(report["pairwise"][0]) == {"a", "b", "n", "percent_agreement", "cohen_kappa"}
    assert json.loads(json.dumps(report, allow_nan=False)) == report


def test_report_of_a_multi_table_adds_masi_and_jaccard_alpha() -> None:
    table = _multi({"a": [{"x"}, {"x", "y"}, {"y"}], "b": [{"x"}, {"y"}, {"y"}]}, ["x", "y"])

    report = agreement_report(table)

    assert report["krippendorff_alpha_masi"] == krippendorff_alpha_set(table, "masi").value
    assert report["krippendorff_alpha_jaccard"] == krippendorff_alpha_set(table, "jaccard").value
    assert list(report)[-3:] == ["per_category", "pairwise", "undefined"]


def test_report_gives_a_reason_for_every_null_and_only_for_nulls() -> None:
    table = table_from_columns(
        {"a": ["x", "x", "x"], "b": ["x", "x", "x"], "c": ["x", None, "x"]}, ["x", "y"]
    )

    report = agreement_report(table, bootstrap=20, seed=1)

    nulls = {"cohen_kappa", "fleiss_kappa", "krippendorff_alpha", "krippendorff_alpha_ci"}
    nulls |= {"cohen_kappa_ci", "fleiss_kappa_ci"}  # undefined point estimates: no interval either
    nulls |= {
        f"per_category[{name}].{metric}"
        for name, metrics in report["per_category"].items()
        for metric, number in metrics.items()
        if number is None
    }
    nulls |= {
        f"pairwise[{pair['a']}, {pair['b']}].{metric}"
        for pair in report["pairwise"]
        for metric in ("percent_agreement", "cohen_kappa")
        if pair[metric] is None
    }
    assert all(report[key] is None for key in ("cohen_kappa", "fleiss_kappa", "krippendorff_alpha"))
    assert report["percent_agreement"] == 1.0
    assert report["gwet_ac1"] == 1.0 and report["gwet_ac1_ci"] == [1.0, 1.0]
    assert set(report["undefined"]) == nulls


def test_set_alpha_over_hundreds_of_categories_needs_memory_far_below_their_cube() -> None:
    import tracemalloc

    from apps.agreement.metrics import MultiRatingTable, agreement_report

    k = 300  # a dense count per (|A & B|, |A|, |B|) took 8 * 301**3 bytes = 218 MB
    triples = [(f"i{n}", "A", f"c{n}") for n in range(k)] + [
        (f"i{n}", rater, f"c{(n + step) % k}") for n in range(k) for rater, step in (("A", 1), ("B", 0))
    ]
    table = MultiRatingTable.from_triples(triples)
    tracemalloc.start()
    try:
        report = agreement_report(table)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert report["krippendorff_alpha_masi"] is not None
    assert peak < (k + 1) ** 3, f"peak {peak:,} bytes"  # an eighth of the dense counts alone


def test_a_multi_choice_table_above_the_documented_size_is_refused_with_its_numbers() -> None:
    from apps.agreement.metrics import MAX_MULTI_CELLS, MultiRatingTable

    categories = [f"c{k}" for k in range(5_000)]
    items = MAX_MULTI_CELLS // (2 * len(categories)) + 1
    triples = [(f"i{n}", rater, "c0") for n in range(items) for rater in "AB"]
    with pytest.raises(ValueError) as refused:
        MultiRatingTable.from_triples(triples, categories)
    assert str(refused.value).startswith(
        f"{items:,} items x 2 annotators x 5,000 categories is {items * 2 * 5_000:,} multi-choice cells, "
        "above the limit of 100,000,000"
    )
