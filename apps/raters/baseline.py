"""The local baseline rater: TF-IDF and a linear classifier per dimension, cross-fitted. Pure: no Django.

The open, service-free baseline that the LLM guidelines for SE research ask beside any LLM: it learns
each dimension from the study's decided items (the gold labels) and predicts the items of a run.

Cross-fitting: the decided items are split into `folds` folds (a seeded shuffle); a decided item is
predicted by the model fitted on the other folds, so no item is ever predicted by a model that saw its
label; an item not decided is predicted by the model fitted on every decided item. The vocabulary is
fitted on the training texts only.

Per dimension: a single-choice dimension is a multinomial logistic regression over its categories; a
multiple-choice one is one logistic regression per category (one-vs-rest), each category kept whose
probability is at least one half, and the likeliest one when none is. A training set with one category
only predicts that category. Fitting is deterministic for a given seed (liblinear/lbfgs are).
"""

from __future__ import annotations

import hashlib
import json
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression

BASELINE_VERSION = 1
DEFAULT_FOLDS = 5
MODEL_ID = f"tfidf-logreg-v{BASELINE_VERSION}"
MAX_FEATURES = 50_000


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


def _vectorizer() -> TfidfVectorizer:
    return TfidfVectorizer(sublinear_tf=True, ngram_range=(1, 2), min_df=1, max_features=MAX_FEATURES)


def _fit_predict(
    train_texts: Sequence[str], train_labels: Sequence[tuple[str, ...]], texts: Sequence[str], multiple: bool
) -> list[tuple[str, ...]]:
    classes = sorted({c for labels in train_labels for c in labels})
    if len(classes) == 1:
        return [(classes[0],)] * len(texts)
    vectorizer = _vectorizer()
    x_train = vectorizer.fit_transform(train_texts)
    x = vectorizer.transform(texts)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        if not multiple:
            model = LogisticRegression(max_iter=2000)
            model.fit(x_train, [labels[0] for labels in train_labels])
            return [(str(c),) for c in model.predict(x)]
        probabilities = np.zeros((len(texts), len(classes)))
        for j, category in enumerate(classes):
            y = np.array([category in labels for labels in train_labels])
            if y.all() or not y.any():
                probabilities[:, j] = float(y[0])
                continue
            model = LogisticRegression(max_iter=2000)
            model.fit(x_train, y)
            probabilities[:, j] = model.predict_proba(x)[:, list(model.classes_).index(True)]
    out = []
    for row in probabilities:
        chosen = [classes[j] for j in np.flatnonzero(row >= 0.5)]
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
            fit = train if fold is None else [i for i in train if fold_of[i] != fold]
            labels = _fit_predict(
                [texts[i] for i in fit],
                [gold[i][dimension.key] for i in fit],
                [texts[t] for t in members],
                dimension.multiple,
            )
            for target, chosen in zip(members, labels, strict=True):
                out[target][dimension.key] = chosen
    if not predicted_any:
        raise BaselineError(
            "the baseline learns from decided items: decide at least two items (in each dimension to "
            "predict) before running it"
        )
    return out
