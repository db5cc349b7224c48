"""The local baseline (apps/raters/baseline.py, pure): TF-IDF and a linear SVM per dimension,
cross-fitted so that no decided item is predicted by a model that saw its label."""

from __future__ import annotations

import pytest

from apps.raters.baseline import BaselineError, Dimension, fingerprint, predict

KIND = Dimension("kind", multiple=False)
FIX = Dimension("fix", multiple=True)

CRASH = "segmentation fault core dumped crash in the allreduce kernel"
QUESTION = "how do I configure the learning rate schedule question"


def _study() -> tuple[dict[int, str], dict[int, dict[str, tuple[str, ...]]]]:
    texts, gold = {}, {}
    for i in range(10):
        texts[i] = f"{CRASH} {i}"
        gold[i] = {"kind": ("bug",), "fix": ("code",)}
    for i in range(10, 20):
        texts[i] = f"{QUESTION} {i}"
        gold[i] = {"kind": ("question",), "fix": ("docs", "config")}
    return texts, gold


def test_items_not_decided_are_predicted_from_every_decided_item() -> None:
    texts, gold = _study()
    texts |= {100: "another crash: segmentation fault, core dumped", 101: "how do I configure the schedule?"}
    out = predict(texts, gold, [100, 101], [KIND, FIX])
    assert out[100] == {"kind": ("bug",), "fix": ("code",)}
    assert out[101] == {"kind": ("question",), "fix": ("config", "docs")}


def test_a_decided_item_is_predicted_by_a_model_that_never_saw_it() -> None:
    texts, gold = _study()
    # One item of a category nobody else has, with words nobody else uses: a model that saw it would
    # give it back its own label; the cross-fitted one cannot know the category at all.
    texts[50] = "zebra quokka narwhal"
    gold[50] = {"kind": ("unique",), "fix": ("code",)}
    out = predict(texts, gold, [50, 3, 14], [KIND])
    assert out[50]["kind"] != ("unique",)
    assert out[3] == {"kind": ("bug",)} and out[14] == {"kind": ("question",)}


def test_the_predictions_are_the_same_for_the_same_seed() -> None:
    texts, gold = _study()
    targets = list(range(20))
    assert predict(texts, gold, targets, [KIND, FIX], seed=3) == predict(
        texts, gold, targets, [KIND, FIX], seed=3
    )


def test_a_dimension_with_one_category_predicts_it_and_one_too_rare_is_left_out() -> None:
    texts = {1: "a", 2: "b", 3: "c"}
    gold = {1: {"kind": ("bug",), "fix": ("code",)}, 2: {"kind": ("bug",)}, 3: {"kind": ("bug",)}}
    out = predict(texts, gold, [1, 2, 3], [KIND, FIX])
    assert all(out[i]["kind"] == ("bug",) for i in (1, 2, 3))
    assert all("fix" not in out[i] for i in (1, 2, 3))  # one decided item only: not predicted


def test_too_few_decided_items_are_refused_with_what_is_needed() -> None:
    with pytest.raises(BaselineError, match="decide at least two items"):
        predict({1: "a", 2: "b"}, {1: {"kind": ("bug",)}}, [2], [KIND])
    with pytest.raises(BaselineError, match="at least 2 folds"):
        predict({1: "a"}, {}, [1], [KIND], folds=1)


def test_the_fingerprint_changes_with_the_training_labels_and_the_codebook() -> None:
    _, gold = _study()
    first = fingerprint(gold, 3, 5, 0)
    assert first == fingerprint(dict(reversed(list(gold.items()))), 3, 5, 0)
    assert first != fingerprint({**gold, 0: {"kind": ("question",)}}, 3, 5, 0)
    assert first != fingerprint(gold, 4, 5, 0)
