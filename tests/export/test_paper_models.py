"""The methods section's *Model raters* (#22 point 6): which models labelled, their agreement with the
annotators and the decisions, and the alternative-annotator test, each number as models/agreement.json
holds it; the LaTeX cites Calderon et al. and compiles."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from apps.accounts.models import Study
from apps.agreement.models_report import models_agreement
from apps.export.paper import methods
from apps.export.paper.facts import write_paper
from apps.export.paper.methods_models import ModelDimensionFacts, ModelFacts, models_section
from apps.taxonomy.index import CodebookIndex
from tests.export.test_package_models import with_model  # noqa: F401 (a fixture)
from tests.export.test_paper_methods import facts, pdflatex

ALT_TEST = {
    "rater": "gpt", "epsilon": 0.2, "q": 0.05, "winning_rate": 0.667, "advantage_probability": 0.71,
    "passed": True, "n_items": 120, "annotators": [{}, {}, {}], "skipped": {}, "reason": None,
}  # fmt: skip


def model(**changes: Any) -> ModelFacts:
    base = ModelFacts(
        name="gpt",
        kind="openai",
        model="gpt-4o",
        model_ids=("gpt-4o-2024-08-06",),
        temperature=0.0,
        samples=3,
        prompt_version="v2",
        answers=360,
        dimensions=(
            ModelDimensionFacts(
                "Symptom", 118, 0.7123, (0.65, 0.77), 0.82, (0.76, 0.87), 100, 0.64, ALT_TEST
            ),
        ),
    )
    return ModelFacts(**{**base.__dict__, **changes})


def test_the_section_names_each_model_and_states_its_figures() -> None:
    section = models_section([model()], people_labels_assisted=7)

    assert section is not None and section.title == "Model raters"
    intro, figures = (p.text for p in section.paragraphs)
    assert (
        "*gpt* (a large language model; model `gpt-4o-2024-08-06`, temperature 0, 3 samples per item" in intro
    )
    assert (
        "prompt version v2, 360 answers)" in intro
        and "(Calderon, Reichart and Dror, 2025)" in intro
        and "(7 such labels were left out)" in intro
    )
    assert (
        "Krippendorff's alpha of the annotators together with *gpt* was 0.712 [0.650, 0.770] (n = 118)"
        in figures
    )
    assert "accuracy was 0.820 [0.760, 0.870] (n = 100, macro F1 0.640)" in figures
    assert (
        "winning rate of 0.667 over 3 annotators: the model passed (advantage probability 0.710)" in figures
    )
    assert [p.source for p in section.paragraphs] == ["models/raters.json", "models/agreement.json (gpt)"]


def test_a_model_that_failed_the_test_or_could_not_be_tested_says_so() -> None:
    failed = model(dimensions=(ModelDimensionFacts("Fix", 40, 0.3, None, None, None, 0, None,
                                                   {**ALT_TEST, "passed": False}),))  # fmt: skip
    untested = model(name="svm", kind="baseline", dimensions=(
        ModelDimensionFacts("Fix", 40, 0.3, None, None, None, 0, None, {"error": "needs two annotators"}),
    ))  # fmt: skip

    section = models_section([failed, untested])

    assert section is not None
    text = " ".join(p.text for p in section.paragraphs)
    assert "the model did not pass" in text
    assert "no item it labelled has a final decision yet" in text
    assert "*svm* (a local TF-IDF and linear SVM baseline; 360 answers)" in text
    assert "The alternative-annotator test could not run: needs two annotators." in text


def test_a_study_without_model_raters_has_no_such_section() -> None:
    assert models_section([]) is None
    assert "Model raters" not in methods.to_markdown(facts())


def test_the_latex_cites_the_alternative_annotator_test() -> None:
    section = models_section([model()])
    assert section is not None

    tex = methods.to_latex(facts(extra_sections=(section,)))

    assert r"Calderon, Reichart and Dror, 2025~\cite{calderon2025}" in tex
    assert "@inproceedings{calderon2025," in methods.BIBTEX


@pytest.mark.django_db
def test_a_study_s_methods_state_its_model_raters_as_the_package_computes_them(
    with_model: Study,  # noqa: F811
    tmp_path: Path,
) -> None:
    index = CodebookIndex.for_study(with_model)
    report = models_agreement(with_model, index)

    write_paper(with_model, tmp_path)

    md = (tmp_path / "methods.md").read_text(encoding="utf-8")
    assert "## Model raters" in md
    assert "*gpt* (a large language model; model `gpt-test-0601`, temperature 0.2" in md
    stated = 0
    for dimension in index.dimensions:
        people = report["raters"]["gpt"][dimension.key]["with_people"]
        if "error" in people or not people["n_pairable"]:
            continue
        alpha = people["krippendorff_alpha"]
        number = "undefined" if alpha is None else f"{alpha:.3f}"
        assert (
            f"On *{dimension.name}*, Krippendorff's alpha of the annotators together with *gpt* was {number}"
            in md
        )
        stated += 1
    assert stated >= 1

    binary = pdflatex()
    work = tmp_path / "tex"
    shutil.copytree(tmp_path, work, ignore=shutil.ignore_patterns("tex"))
    command = [binary, "-interaction=nonstopmode", "-halt-on-error", "methods.tex"]
    result = subprocess.run(command, cwd=work, capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stdout[-3000:]
