"""The quality report's arithmetic (apps/quality/report.py), on hand-made data, against reference
implementations: statsmodels' Wilson interval, scikit-learn's Cohen's kappa, scipy's binomial test."""

from __future__ import annotations

import pytest
from scipy.stats import false_discovery_control, fisher_exact
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.proportion import proportion_confint

from apps.quality.report import (
    Judgement,
    Timing,
    annotator_rows,
    category_use,
    confusions,
    drift,
    text_report,
    too_fast,
    value_name,
    wilson_interval,
)


def J(
    annotator: str, round_: int, item: int, *value: str, gold: bool = False, dimension: str = "kind"
) -> Judgement:
    return Judgement(annotator, round_, item, dimension, frozenset(value), gold)


@pytest.mark.parametrize(("hits", "n"), [(0, 1), (1, 1), (7, 10), (55, 62), (0, 40), (40, 40)])
def test_the_wilson_interval_is_statsmodels(hits: int, n: int) -> None:
    low, high = wilson_interval(hits, n)  # type: ignore[misc]
    ref_low, ref_high = proportion_confint(hits, n, alpha=0.05, method="wilson")
    assert low == pytest.approx(ref_low, abs=1e-9) and high == pytest.approx(ref_high, abs=1e-9)


def test_no_items_have_no_interval_and_impossible_counts_are_refused() -> None:
    assert wilson_interval(0, 0) is None
    with pytest.raises(ValueError, match=r"\[0, 3\]"):
        wilson_interval(4, 3)


def test_final_accuracy_and_kappa_compare_each_item_with_its_decision() -> None:
    mine = ["bug", "bug", "question", "bug", "question", "bug", "question", "question"]
    final = ["bug", "question", "question", "bug", "question", "bug", "bug", "question"]
    judgements = [J("alice", 1, i, value) for i, value in enumerate(mine)]
    finals = {(i, "kind"): frozenset([value]) for i, value in enumerate(final)}

    [per_round, overall] = annotator_rows(judgements, finals, [])

    assert (per_round.round, overall.round) == (1, None)
    assert overall.n_final == 8 and overall.final_accuracy == pytest.approx(6 / 8)
    assert overall.final_kappa == pytest.approx(cohen_kappa_score(mine, final), abs=1e-9)
    assert overall.final_interval == pytest.approx(proportion_confint(6, 8, method="wilson"), abs=1e-9)


def test_gold_checks_are_counted_apart_from_the_reliability_items() -> None:
    judgements = [
        J("alice", 1, 1, "bug"),
        J("alice", 2, 2, "bug", gold=True),
        J("alice", 2, 3, "bug", gold=True),
        J("alice", 2, 4, "question"),
    ]
    finals = {
        (1, "kind"): frozenset(["bug"]),
        (2, "kind"): frozenset(["bug"]),
        (3, "kind"): frozenset(["question"]),
    }

    rows = {row.round: row for row in annotator_rows(judgements, finals, [])}

    assert (rows[None].n_gold, rows[None].gold_accuracy) == (2, 0.5)
    assert (rows[None].n_final, rows[None].final_accuracy) == (1, 1.0)  # item 4 has no decision
    assert rows[1].n_gold == 0 and rows[1].gold_accuracy is None
    assert rows[1].undefined["gold_accuracy"].startswith("no gold check answered")
    assert rows[2].n_final == 0 and "no decided item" in rows[2].undefined["final_accuracy"]


def test_a_set_value_matches_only_the_same_set_and_pending_counts_as_its_own_value() -> None:
    judgements = [
        J("bob", 1, 1, "config", "code", dimension="fix"),
        J("bob", 1, 2, "config", dimension="fix"),
        J("bob", 1, 3, "pending", dimension="fix"),
    ]
    both = frozenset(["config", "code"])
    finals = {(1, "fix"): both, (2, "fix"): both, (3, "fix"): frozenset(["docs"])}

    [_, overall] = annotator_rows(judgements, finals, [])

    assert overall.final_accuracy == pytest.approx(1 / 3)
    assert overall.pending_rate == pytest.approx(1 / 3)
    assert value_name(both) == "code+config"


def test_median_active_time_is_per_annotator_and_round_and_missing_time_is_said() -> None:
    judgements = [J("alice", 1, 1, "bug"), J("alice", 2, 2, "bug"), J("bob", 1, 1, "bug")]
    timings = [Timing("alice", 1, 1, 30, 50), Timing("alice", 1, 9, 50, 50), Timing("alice", 2, 2, 300, 50)]

    rows = {(r.annotator, r.round): r for r in annotator_rows(judgements, {}, timings)}

    assert rows["alice", 1].median_active_seconds == 40
    assert rows["alice", None].median_active_seconds == 50
    assert rows["bob", None].median_active_seconds is None
    assert "no active time" in rows["bob", None].undefined["median_active_seconds"]


def test_one_round_asked_gives_that_rounds_rows_only() -> None:
    judgements = [J("alice", 1, 1, "bug"), J("alice", 2, 2, "bug")]
    assert [r.round for r in annotator_rows(judgements, {}, [], round_number=2)] == [2]


def test_over_use_is_fishers_exact_test_against_the_others_adjusted_for_the_dimensions_tests() -> None:
    judgements = [J("alice", 1, i, "bug") for i in range(20)]
    judgements += [J("bob", 1, i, "bug" if i < 4 else "question") for i in range(20)]
    judgements += [J("bob", 1, 99, "pending")]

    uses = {(u.annotator, u.category): u for u in category_use(judgements)}

    alice = uses["alice", "bug"]
    assert (alice.count, alice.n, alice.others_share) == (20, 20, pytest.approx(4 / 21))
    assert alice.p_value == pytest.approx(fisher_exact([[20, 0], [4, 17]]).pvalue)
    raw = [u.p_value for u in category_use(judgements)]
    assert [u.q_value for u in category_use(judgements)] == pytest.approx(
        list(false_discovery_control(raw, method="bh"))
    )
    assert alice.tendency == "over" and uses["alice", "question"].tendency == "under"
    assert uses["bob", "bug"].tendency == "under"
    assert ("bob", "pending") not in uses  # pending is no category


def test_a_difference_chance_explains_is_not_flagged() -> None:
    judgements = [J("alice", 1, i, "bug" if i < 6 else "question") for i in range(10)]
    judgements += [J("bob", 1, i, "bug" if i < 4 else "question") for i in range(10)]
    assert all(u.tendency == "" for u in category_use(judgements))


def test_the_confusions_are_the_most_frequent_differences_with_the_decision() -> None:
    judgements = [J("alice", 1, i, "bug") for i in range(5)] + [J("alice", 1, 9, "question")]
    finals = {(i, "kind"): frozenset(["question"]) for i in range(3)} | {(9, "kind"): frozenset(["bug"])}

    found = confusions(judgements, finals)

    assert [(c.chosen, c.final, c.count) for c in found] == [("bug", "question", 3), ("question", "bug", 1)]


def test_long_items_labelled_in_seconds_are_flagged_and_short_ones_never() -> None:
    timings = [
        Timing("alice", 1, 1, 10, 500),  # 3,000 words a minute
        Timing("alice", 1, 2, 120, 500),  # 250 words a minute
        Timing("alice", 1, 3, 1, 80),  # short
    ]
    assert [t.item for t in too_fast(timings)] == [1]


def test_drift_lists_each_rounds_accuracy_in_order_and_the_text_report_has_every_row() -> None:
    judgements = [J("alice", 2, 1, "bug"), J("alice", 1, 2, "bug"), J("alice", 1, 3, "bug")]
    finals = {
        (1, "kind"): frozenset(["bug"]),
        (2, "kind"): frozenset(["bug"]),
        (3, "kind"): frozenset(["question"]),
    }
    rows = annotator_rows(judgements, finals, [])

    assert drift(rows) == {("alice", "kind"): [(1, 0.5), (2, 1.0)]}
    assert len(text_report(rows).splitlines()) == 2 + len(rows)
