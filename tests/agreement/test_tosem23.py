"""The real check: Cohen's kappa of the TOSEM 2023 reliability rounds 1 and 2, computed twice.

(a) from a study built from ``fixtures/tosem23`` (the codebook loaded, both annotators' labels imported)
through `apps.agreement`; (b) independently, from ``labels_round{1,2}.csv`` with plain pandas and
``sklearn.metrics.cohen_kappa_score``. They must agree to 1e-9. The table is in docs/agreement.md
("The real check").

Rule applied by (b), written out independently of `apps.agreement.ratings`: an annotator's value for an
item is the set of labels over all their findings in the dimension (``pending`` included, each label
replaced by its top-level ancestor for the stage); items both annotators rated are compared, two values
agreeing when the sets are equal.
"""

from __future__ import annotations

import json
from typing import Any

import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score

from apps.accounts.models import Study
from apps.agreement.ratings import load_study_ratings
from apps.agreement.services import dimension_report
from tests.agreement.conftest import FIXTURES

pytestmark = pytest.mark.django_db

# (name in the docs, dimension, level): issue type, stage (symptom level 1), leaf symptom, fix pattern.
CHECKS = [
    ("issue type", "issue_type", None),
    ("stage", "symptom", 1),
    ("leaf symptom", "symptom", None),
    ("fix pattern", "fix_pattern", None),
]


def _top_level(dimension: str) -> dict[str, str]:
    """Category key → key of its top-level ancestor, read straight from codebook.json."""
    book = json.loads((FIXTURES / "codebook.json").read_text(encoding="utf-8"))
    (spec,) = [d for d in book["dimensions"] if d["key"] == dimension]
    out: dict[str, str] = {}

    def walk(categories: list[dict[str, Any]], top: str | None) -> None:
        for category in categories:
            root = top or category["key"]
            out[category["key"]] = root
            walk(category.get("children", []), root)

    walk(spec["categories"], None)
    return out


def pandas_kappa(round_number: int, dimension: str, level: int | None) -> tuple[float, int]:
    """Cohen's kappa of annotator1 and annotator2 and the number of items both rated, from the CSV."""
    rows = pd.read_csv(FIXTURES / f"labels_round{round_number}.csv", dtype=str, keep_default_na=False)
    rows = rows[rows["dimension"] == dimension].copy()
    if level == 1:
        top = _top_level(dimension)
        rows["label"] = rows["label"].map(lambda label: label if label == "pending" else top[label])
    values = rows.groupby(["item", "annotator"])["label"].agg(lambda labels: "|".join(sorted(set(labels))))
    wide = values.unstack("annotator").dropna()
    return float(cohen_kappa_score(wide["annotator1"], wide["annotator2"])), len(wide)


def test_cohens_kappa_from_the_study_equals_pandas_and_sklearn_on_the_csv(tosem_study: Study) -> None:
    # One study for every check: building it takes seconds.
    ratings = load_study_ratings(tosem_study)
    checked = []
    for round_number in (1, 2):
        for name, dimension, level in CHECKS:
            report = dimension_report(ratings, dimension, round_number=round_number, level=level)
            expected, n_both = pandas_kappa(round_number, dimension, level)
            where = f"round {round_number}, {name}"
            assert report["n_annotators"] == 2, where
            assert report["pairwise"][0]["n"] == n_both, where
            assert report["cohen_kappa"] == pytest.approx(expected, abs=1e-9), where
            checked.append((round_number, name, report["cohen_kappa"], expected, n_both))
    assert len(checked) == 8
    # The study answers at its codebook version, and the stage level declares the four stages + pending.
    stage = dimension_report(ratings, "symptom", round_number=1, level=1)
    assert stage["codebook_version"] == ratings.codebook_version >= 1
    assert list(stage["per_category"]) == [
        "package-build-import",
        "communication-setup",
        "data-and-model-preparation",
        "training-evaluation",
        "pending",
    ]
