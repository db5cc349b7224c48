"""The alternative-annotator test (`apps.raters.alt_test`) against the reference implementation's figures
on the paper's published data, and against an independent computation with scipy. No database."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import ttest_1samp

from apps.raters.alt_test import alt_test, benjamini_yekutieli, similarity, ttest_less_pvalue

DATA = Path(__file__).resolve().parent / "data" / "alttest"
REFERENCE = json.loads((DATA / "reference_results.json").read_text())


def _load(dataset: str) -> tuple[dict[str, dict[str, str]], dict[str, dict[str, str]]]:
    humans = json.loads((DATA / dataset / "human_annotations.json").read_text())
    models = json.loads((DATA / dataset / "llm_annotations.json").read_text())
    as_text = {a: {i: str(v) for i, v in labels.items()} for a, labels in humans.items()}
    return as_text, {m: {i: str(v) for i, v in labels.items()} for m, labels in models.items()}


@pytest.mark.parametrize("case", sorted(REFERENCE))
def test_alt_test_equals_the_reference_implementation_on_the_published_data(case: str) -> None:
    dataset, model = case.split("/")
    humans, models = _load(dataset)
    expected = REFERENCE[case]
    result = alt_test(models[model], humans, epsilon=expected["epsilon"], q=0.05)
    assert result.winning_rate == pytest.approx(expected["winning_rate"], abs=1e-9)
    assert result.advantage_probability == pytest.approx(expected["advantage_probability"], abs=1e-9)
    for mine, theirs in zip(result.annotators, expected["p_values"], strict=True):
        assert mine.p_value is not None
        assert abs(mine.p_value - theirs) <= 1e-9
    assert result.passed is (expected["winning_rate"] >= 0.5)


def test_some_published_models_pass_and_some_fail() -> None:
    """The fixture is not degenerate: the test must tell models apart (wax: gemini_pro passes at 0.5)."""
    verdicts = {case: REFERENCE[case]["winning_rate"] >= 0.5 for case in REFERENCE}
    assert any(verdicts.values()) and not all(verdicts.values())


def _independent(
    model: dict[str, str], humans: dict[str, dict[str, str]], epsilon: float, q: float
) -> tuple[float, float, list[float]]:
    """The procedure written out again with scipy's t-test and a by-hand BY step-up."""
    counts: dict[str, int] = {}
    for labels in humans.values():
        for item in labels:
            counts[item] = counts.get(item, 0) + 1
    p_values, rhos = [], []
    for h, labels in humans.items():
        items = [i for i in labels if counts[i] >= 2 and i in model]
        if len(items) < 30:
            continue
        diffs, wins = [], []
        for i in items:
            others = [humans[o][i] for o in humans if o != h and i in humans[o]]
            hs = sum(labels[i] == o for o in others) / len(others)
            ms = sum(model[i] == o for o in others) / len(others)
            diffs.append(int(hs >= ms) - int(ms >= hs))
            wins.append(int(ms >= hs))
        p_values.append(float(ttest_1samp(diffs, epsilon, alternative="less").pvalue))
        rhos.append(sum(wins) / len(wins))
    m = len(p_values)
    harmonic = sum(1 / k for k in range(1, m + 1))
    ranked = sorted(range(m), key=lambda k: p_values[k])
    rejected = 0
    for rank, k in enumerate(ranked, start=1):
        if p_values[k] <= rank / m * q / harmonic:
            rejected = rank
    return rejected / m, sum(rhos) / m, p_values


@pytest.mark.parametrize("model", ["gpt-4o", "llama-31", "mistral-v03"])
@pytest.mark.parametrize("epsilon", [0.0, 0.1, 0.3])
def test_alt_test_agrees_with_an_independent_scipy_computation(model: str, epsilon: float) -> None:
    humans, models = _load("wax")
    winning, advantage, p_values = _independent(models[model], humans, epsilon, 0.05)
    result = alt_test(models[model], humans, epsilon=epsilon, q=0.05)
    assert result.winning_rate == pytest.approx(winning, abs=1e-12)
    assert result.advantage_probability == pytest.approx(advantage, abs=1e-12)
    assert [a.p_value for a in result.annotators] == pytest.approx(p_values, abs=1e-12)


def test_annotators_with_fewer_than_30_items_and_items_with_one_annotator_are_left_out() -> None:
    items = [f"i{k}" for k in range(40)]
    humans = {
        "alice": dict.fromkeys(items, "bug"),
        "bob": dict.fromkeys(items, "bug"),
        "carol": dict.fromkeys(items[:20], "bug"),
        "dave": {"lonely": "bug"},
    }
    result = alt_test(dict.fromkeys([*items, "lonely"], "bug"), humans)
    assert [a.annotator for a in result.annotators] == ["alice", "bob"]
    assert result.skipped == {"carol": 20, "dave": 0}
    assert result.n_items == 40  # "lonely" has one annotator


def test_ties_count_for_both_so_a_model_agreeing_with_everyone_always_wins() -> None:
    items = [f"i{k}" for k in range(30)]
    humans = {name: dict.fromkeys(items, "bug") for name in ("alice", "bob", "carol")}
    result = alt_test(dict.fromkeys(items, "bug"), humans, epsilon=0.2)
    # every difference is 0 < epsilon with no variance: p = 0, every hypothesis rejected
    assert [a.p_value for a in result.annotators] == [0.0, 0.0, 0.0]
    assert result.winning_rate == 1.0 and result.passed
    assert result.advantage_probability == 1.0


def test_no_annotator_with_enough_items_gives_no_figures_and_a_reason() -> None:
    humans = {"alice": {"i1": "bug"}, "bob": {"i1": "bug"}}
    result = alt_test({"i1": "bug"}, humans)
    assert result.winning_rate is None and not result.passed
    assert result.reason is not None and "30" in result.reason


def test_multi_choice_labels_are_scored_by_jaccard_similarity() -> None:
    assert similarity(frozenset({"a", "b"}), frozenset({"b", "c"})) == pytest.approx(1 / 3)
    assert similarity(frozenset(), frozenset()) == 1.0
    assert similarity("a", "a") == 1.0 and similarity("a", "b") == 0.0
    with pytest.raises(TypeError):
        similarity("a", frozenset({"a"}))
    items = [f"i{k}" for k in range(30)]
    humans = {
        "alice": dict.fromkeys(items, frozenset({"crash", "hang"})),
        "bob": dict.fromkeys(items, frozenset({"crash"})),
    }
    # against bob, alice scores 1/2, the model {crash} scores 1: the model wins every item
    result = alt_test(dict.fromkeys(items, frozenset({"crash"})), humans)
    assert result.annotators[0].rho == 1.0


def test_ttest_matches_scipy_and_handles_constant_differences() -> None:
    rng = np.random.default_rng(7)
    values = rng.choice([-1.0, 0.0, 1.0], size=57)
    expected = ttest_1samp(values, 0.15, alternative="less").pvalue
    assert ttest_less_pvalue(values, 0.15) == pytest.approx(expected, abs=1e-12)
    assert ttest_less_pvalue(np.zeros(5), 0.2) == 0.0
    assert ttest_less_pvalue(np.ones(5), 0.2) == 1.0
    assert ttest_less_pvalue(np.zeros(5), 0.0) is None


def test_benjamini_yekutieli_rejects_up_to_the_largest_rank_below_its_threshold() -> None:
    # m = 3, H = 11/6: thresholds q/H * (1/3, 2/3, 1) = 0.00909, 0.01818, 0.02727 at q = 0.05
    assert benjamini_yekutieli([0.015, 0.001, 0.5], 0.05) == {0, 1}
    assert benjamini_yekutieli([0.02, 0.001, 0.5], 0.05) == {1}
    assert benjamini_yekutieli([0.02, 0.5, 0.6], 0.05) == set()
    assert benjamini_yekutieli([None, 0.0001], 0.05) == {1}
    assert benjamini_yekutieli([], 0.05) == set()
