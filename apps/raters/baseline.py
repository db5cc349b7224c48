"""The local baseline rater: TF-IDF and a linear classifier per dimension, cross-fitted. Pure: no Django.

The open, service-free baseline that the LLM guidelines for SE research ask beside any LLM: it learns
each dimension from the study's decided items (the gold labels) and predicts the items of a run.

Cross-fitting: the decided items are split into `folds` folds (a seeded shuffle); a decided item is
predicted by the model fitted on the other folds, so no item is ever predicted by a model that saw its
label; an item not decided is predicted by the model fitted on every decided item. The TF-IDF features
(words, sublinear term frequency) are fitted once on every text the run holds, decided
or not: they use no label, so nothing of an item's label reaches its own prediction, and one fit
instead of one per fold keeps 10,000 items within seconds (docs/performance.md).

Per dimension: a linear support-vector classifier (liblinear, one-vs-rest); a single-choice dimension
takes the highest-scoring category; a multiple-choice one every category with a positive score, and the
highest-scoring one when none has. A training set with one category only predicts that category.
Fitting is deterministic for a given seed.
"""

from __future__ import annotations

import hashlib
import json
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.sparse import csr_matrix
from sklearn.exceptions import ConvergenceWarning
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.svm import LinearSVC

BASELINE_VERSION = 1
DEFAULT_FOLDS = 5
MODEL_ID = f"tfidf-linearsvc-v{BASELINE_VERSION}"


class BaselineError(ValueError):
    """The baseline cannot be fitted (too few decided items); the message says what it needs."""


@dataclass(frozen=True)
class Dimension:
    key: str
    multiple: bool


def fingerprint(
    gold: Mapping[int, Mapping[str, tuple[str, ...]]], codebook_version: int, folds: int, seed: int
) -> str:
    """What the predictions depend on besides the item's text: the training labels, the codebook version
    and the fitting settings (a run reuses answers only while all of them are unchanged)."""
    payload = json.dumps(
        {
            "version": BASELINE_VERSION,
            "codebook": codebook_version,
            "folds": folds,
            "seed": seed,
            "gold": sorted(
                (item, sorted((k, list(v)) for k, v in dims.items())) for item, dims in gold.items()
            ),
        },
        sort_keys=True,
    )
    return hashlib.sha256(payload.encode()).hexdigest()


def _features(corpus: Sequence[str]) -> Any:
    """TF-IDF of the words that occur in two texts or more (sublinear term frequency, L2-normalised); a
    corpus where none does gives one all-zero column (the classifiers then learn the majority).

    Words only: word pairs made the matrix twice as dense and the fits twice as slow for little gain on
    issue texts (bench/bench_baseline.py), and a vocabulary of pairs took 19 s to build at 10,000 items."""
    try:
        return TfidfVectorizer(sublinear_tf=True, min_df=2, dtype=np.float32).fit_transform(corpus)
    except ValueError:  # "empty vocabulary": no word occurs twice
        return csr_matrix((len(corpus), 1), dtype=np.float32)


def _fit_predict(
    x_train: Any, train_labels: Sequence[tuple[str, ...]], x: Any, multiple: bool, seed: int
) -> list[tuple[str, ...]]:
    classes = sorted({c for labels in train_labels for c in labels})
    n = x.shape[0]
    if len(classes) == 1:
        return [(classes[0],)] * n
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        if not multiple:
            model = LinearSVC(random_state=seed, dual=True)
            model.fit(x_train, [labels[0] for labels in train_labels])
            return [(str(c),) for c in model.predict(x)]
        scores = np.full((n, len(classes)), -np.inf)
        for j, category in enumerate(classes):
            y = np.array([category in labels for labels in train_labels])
            if y.all() or not y.any():
                scores[:, j] = 1.0 if y[0] else -1.0
                continue
            model = LinearSVC(random_state=seed, dual=True)
            model.fit(x_train, y)
            scores[:, j] = model.decision_function(x)
    out = []
    for row in scores:
        chosen = [classes[j] for j in np.flatnonzero(row > 0)]
        out.append(tuple(chosen) if chosen else (classes[int(np.argmax(row))],))
    return out


def predict(
    texts: Mapping[int, str],
    gold: Mapping[int, Mapping[str, tuple[str, ...]]],
    targets: Sequence[int],
    dimensions: Sequence[Dimension],
    *,
    folds: int = DEFAULT_FOLDS,
    seed: int = 0,
) -> dict[int, dict[str, tuple[str, ...]]]:
    """Each target's predicted category keys per dimension (cross-fitted: module docstring). `texts`
    holds every decided item's text and every target's; `gold[item][dimension]` the decided keys (a
    dimension absent from an item's gold does not apply to it and does not train). A dimension with
    fewer than two decided items is not predicted. Raises BaselineError when no dimension can be."""
    if folds < 2:
        raise BaselineError(f"cross-fitting needs at least 2 folds, got {folds}")
    out: dict[int, dict[str, tuple[str, ...]]] = {t: {} for t in targets}
    order = np.random.default_rng(seed).permutation(np.array(sorted(gold), dtype=np.int64))
    predicted_any = False
    rows: dict[int, int] = {}
    corpus: list[str] = []
    for item in [*sorted(gold), *targets]:
        if item not in rows and item in texts:
            rows[item] = len(corpus)
            corpus.append(texts[item])
    matrix = _features(corpus) if corpus else None
    for dimension in dimensions:
        train = [int(i) for i in order if gold[int(i)].get(dimension.key)]
        if len(train) < 2:
            continue
        predicted_any = True
        k = min(folds, len(train))
        fold_of = {item: n % k for n, item in enumerate(train)}
        groups: dict[int | None, list[int]] = {}
        for target in targets:
            groups.setdefault(fold_of.get(target), []).append(target)
        for fold, members in sorted(groups.items(), key=lambda kv: -1 if kv[0] is None else kv[0]):
            fit = sorted(train) if fold is None else sorted(i for i in train if fold_of[i] != fold)
            labels = [gold[i][dimension.key] for i in fit]
            assert matrix is not None  # there are training items, so texts
            chosen = _fit_predict(
                matrix[[rows[i] for i in fit]],
                labels,
                matrix[[rows[t] for t in members]],
                dimension.multiple,
                seed,
            )
            for target, value in zip(members, chosen, strict=True):
                out[target][dimension.key] = value
    if not predicted_any:
        raise BaselineError(
            "the baseline learns from decided items: decide at least two items (in each dimension to "
            "predict) before running it"
        )
    return out
