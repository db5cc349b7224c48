"""Local-baseline benchmark (issue #21): TF-IDF and logistic regression trained and cross-fitted on
``--items`` decided items (10,000) and predicting every one of them, the work of a baseline run over a
fully decided study, on synthetic issue texts of about ``--chars`` characters (1,500).

Usage (no database: `apps.raters.baseline` is pure):

    .venv/bin/python bench/bench_baseline.py [--items 10000] [--chars 1500] [--folds 5]

Three dimensions like the TOSEM 2023 codebook's: a single-choice one of 4 categories, a single-choice one
of 12, and a multiple-choice one of 8 (one to three per item). Each category has words of its own mixed
into a shared vocabulary, so the classifiers have something to learn. Target: at most 30 s, peak RSS
printed. Prints the figures and ``met`` / ``MISSED``.
"""

from __future__ import annotations

import argparse
import random
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from apps.raters.baseline import Dimension, predict  # noqa: E402

TARGET_SECONDS = 30.0
COMMON = [f"word{i}" for i in range(3000)]


def synthetic(n: int, chars: int, seed: int) -> tuple[dict[int, str], dict[int, dict[str, tuple[str, ...]]]]:
    rng = random.Random(seed)
    spec = {"type": [f"t{i}" for i in range(4)], "symptom": [f"s{i}" for i in range(12)]}
    fixes = [f"f{i}" for i in range(8)]
    own = {key: [f"{key}cue{j}" for j in range(20)] for key in [*spec["type"], *spec["symptom"], *fixes]}
    texts, gold = {}, {}
    for item in range(n):
        labels = {dim: (rng.choice(keys),) for dim, keys in spec.items()}
        labels["fix"] = tuple(sorted(rng.sample(fixes, rng.randint(1, 3))))
        cues = [w for keys in labels.values() for key in keys for w in rng.sample(own[key], 3)]
        words: list[str] = []
        while sum(len(w) + 1 for w in words) < chars:
            words.append(rng.choice(cues) if rng.random() < 0.08 else rng.choice(COMMON))
        texts[item] = " ".join(words)
        gold[item] = labels
    return texts, gold


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--chars", type=int, default=1500)
    parser.add_argument("--folds", type=int, default=5)
    args = parser.parse_args()
    texts, gold = synthetic(args.items, args.chars, seed=2023)
    dimensions = [Dimension("type", False), Dimension("symptom", False), Dimension("fix", True)]
    start = time.perf_counter()
    out = predict(texts, gold, list(texts), dimensions, folds=args.folds, seed=0)
    seconds = time.perf_counter() - start
    right = {d.key: sum(out[i].get(d.key) == gold[i][d.key] for i in texts) / len(texts) for d in dimensions}
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"items {args.items}, {args.chars} characters, {args.folds} folds, 3 dimensions")
    rate = args.items / seconds
    print(f"cross-fitted fit and predict: {seconds:.1f} s ({rate:.0f} items/s), peak RSS {peak:.0f} MB")
    print("exact-match accuracy (cross-fitted): " + ", ".join(f"{k} {v:.3f}" for k, v in right.items()))
    print(f"target ≤ {TARGET_SECONDS:.0f} s: {'met' if seconds <= TARGET_SECONDS else 'MISSED'}")


if __name__ == "__main__":
    main()
