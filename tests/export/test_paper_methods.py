"""The methods section (md, tex, bib) and the paper folder of `export_dataset --format paper`: on plain
data, and on the demo study (real TOSEM 2023 labels), whose methods.tex compiles with pdflatex and states
its real per-round kappa; every figure of the folder is a valid SVG and PDF."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from dataclasses import replace
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import transaction

from apps.accounts.models import Study
from apps.export.package.build import agreement_data
from apps.export.paper import methods
from apps.taxonomy.index import CodebookIndex

TEX_PACKAGES = ("texlive-latex-base", "texlive-latex-recommended", "texlive-fonts-recommended")


def facts(**changes: Any) -> methods.MethodsData:
    base = methods.MethodsData(
        study="DDP faults & more",
        items=120,
        sources=(("GitHub", 80), ("Stack Overflow", 40)),
        screening=(("relevant", 100), ("irrelevant", 20)),
        exclusion_reasons=(("not distributed", 15), ("duplicate", 5)),
        rounds=(
            methods.RoundFacts(1, "Pilot", "uniform", 50, 50, 2),
            methods.RoundFacts(2, "", "stratified", 50, 48, 2),
        ),
        annotators=("alice", "bob"),
        agreement=(
            methods.AgreementFacts(
                "Symptom",
                1,
                50,
                0.7812,
                0.77,
                0.779,
                (0.61, 0.9),
                0.8,
                cohen_kappa_ci=(0.7, 0.85),
                ac1_ci=(0.72, 0.88),
            ),
            methods.AgreementFacts("Symptom", 2, 48, None, None, None, None, None),
            methods.AgreementFacts("Symptom", None, 98, 0.7, 0.7, 0.7, None, 0.7),
        ),
        bootstrap=1000,
        seed=0,
        codebook_version=4,
        dimensions=(("Symptom", 12), ("Fix", 8)),
        changes=(("renamed", 2), ("merged", 1)),
        saturation=(methods.SaturationFacts("Symptom", 98, 12, 50, 25, 0.05, 10, 75),),
        decisions=(("unanimous", 60), ("adjudicated", 38)),
        findings=110,
    )
    return replace(base, **changes)


def test_the_methods_text_states_the_numbers_with_their_sources() -> None:
    text = methods.to_markdown(facts())
    assert "holds 120 items: 80 GitHub and 40 Stack Overflow" in text
    assert "100 relevant and 20 irrelevant" in text and "15 not distributed" in text
    assert (
        "in round 1 (n = 50), Cohen's kappa was 0.781 [0.700, 0.850], "
        "Krippendorff's alpha 0.779 [0.610, 0.900] and Gwet's AC1 0.800 [0.720, 0.880]"
    ) in text
    assert "in round 2 (n = 48), Cohen's kappa was undefined" in text
    assert "reached at item 75" in text and "base 50 items with 10 categories" in text
    assert "changed 3 times: 2 renamed and 1 merged" in text
    assert "98 items have a final decision (110 findings): 60 unanimous and 38 adjudicated" in text
    assert text.count("Source: `") == sum(len(s.paragraphs) for s in methods.sections(facts())) == 8


def test_other_features_add_their_own_section_before_the_figures() -> None:
    extra = methods.Section(
        "models", "Model raters", (methods.Paragraph("Two models rated 98 items.", "models.json"),)
    )
    d = facts(extra_sections=(extra,), figures=(methods.Artifact("figures/a", "Alpha by round", "fig:a"),))
    text = methods.to_markdown(d)
    assert text.index("## Adjudication") < text.index("## Model raters") < text.index("## Figures")
    tex = methods.to_latex(d)
    assert r"\subsection{Model raters}\label{sec:methods-models}" in tex
    assert r"\includegraphics[width=\columnwidth]{figures/a.pdf}" in tex


def test_the_latex_escapes_the_study_s_own_words() -> None:
    tex = methods.to_latex(facts(study="50% of C# & {faults}_x"))
    assert r"50\% of C\# \& \{faults\}\_x" in tex
    assert r"\emph{Symptom}" in tex


# --- The demo study ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def paper(
    django_db_setup: None, django_db_blocker: Any, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    """The demo study loaded and its paper folder written once for the module; the database rolled back."""
    directory = tmp_path_factory.mktemp("paper") / "out"
    with django_db_blocker.unblock(), transaction.atomic():
        call_command("load_demo", stdout=StringIO())
        study = Study.objects.get(slug="tosem23")
        out = StringIO()
        call_command("export_dataset", "tosem23", "--format", "paper", "--output", str(directory), stdout=out)
        agreement = agreement_data(study, CodebookIndex.for_study(study))
        with pytest.raises(CommandError, match="not empty"):
            call_command("export_dataset", "tosem23", "--format", "paper", "--output", str(directory))
        transaction.set_rollback(True)
    return {"dir": directory, "agreement": agreement, "message": out.getvalue()}


@pytest.mark.django_db  # the module fixture needs the test database set up (run alone too)
def test_the_paper_folder_holds_methods_references_figures_and_tables(paper: dict[str, Any]) -> None:
    directory: Path = paper["dir"]
    for name in ("methods.md", "methods.tex", "references.bib"):
        assert (directory / name).stat().st_size > 0
    stems = {p.stem for p in (directory / "figures").iterdir()}
    for kind in ("agreement", "saturation", "distribution", "crosstab"):
        assert any(s.startswith(kind + "-") for s in stems), kind
    for stem in stems:
        assert (directory / "figures" / f"{stem}.svg").exists() and (
            directory / "figures" / f"{stem}.pdf"
        ).exists()
    assert (directory / "tables" / "crosstab-symptom-fix_pattern.tex").exists()
    assert "Wrote" in paper["message"]


@pytest.mark.django_db  # the module fixture needs the test database set up (run alone too)
def test_the_demo_methods_section_states_its_real_per_round_kappa(paper: dict[str, Any]) -> None:
    md = (paper["dir"] / "methods.md").read_text(encoding="utf-8")
    tex = (paper["dir"] / "methods.tex").read_text(encoding="utf-8")
    stated = 0
    for round_ in paper["agreement"]["rounds"]:
        report = round_["dimensions"]["distributed_specific"]
        if "error" in report or not report["n_pairable"]:
            continue
        n, kappa, (low, high) = report["n_pairable"], report["cohen_kappa"], report["cohen_kappa_ci"]
        phrase = (
            f"in round {round_['round']} (n = {n}), Cohen's kappa was {kappa:.3f} [{low:.3f}, {high:.3f}]"
        )
        assert phrase in md and phrase in tex
        stated += 1
    assert stated == 2  # rounds 1 and 2 of the demo; round 3 has no labels yet
    assert "in round 1 (n = 55), Cohen's kappa was 0.781" in md  # the cell issue #22 quotes


def pdflatex() -> str:
    """pdflatex, installed with apt when missing and possible (root, apt-get); else the test is skipped."""
    found = shutil.which("pdflatex")
    if found is None and os.geteuid() == 0 and shutil.which("apt-get"):
        subprocess.run(
            ["apt-get", "install", "-y", "--no-install-recommends", *TEX_PACKAGES],
            capture_output=True,
            check=False,
        )
        found = shutil.which("pdflatex")
    if found is None:
        pytest.skip("pdflatex is missing and apt-get could not install it (not root, or no apt-get): "
                    "apt-get install " + " ".join(TEX_PACKAGES))  # fmt: skip
    return found


@pytest.mark.django_db  # the module fixture needs the test database set up (run alone too)
def test_the_demo_methods_tex_compiles_with_pdflatex(paper: dict[str, Any], tmp_path: Path) -> None:
    binary = pdflatex()
    work = tmp_path / "tex"
    shutil.copytree(paper["dir"], work)
    command = [binary, "-interaction=nonstopmode", "-halt-on-error", "methods.tex"]
    result = subprocess.run(command, cwd=work, capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stdout[-3000:]
    pdf = (work / "methods.pdf").read_bytes()
    assert pdf.startswith(b"%PDF-") and len(pdf) > 10_000


@pytest.mark.django_db  # the module fixture needs the test database set up (run alone too)
def test_every_figure_is_a_valid_svg_and_pdf_sized_for_a_column(paper: dict[str, Any]) -> None:
    figures = sorted((paper["dir"] / "figures").iterdir())
    assert figures
    for path in figures:
        data = path.read_bytes()
        if path.suffix == ".svg":
            root = ET.fromstring(data)
            assert root.tag == "{http://www.w3.org/2000/svg}svg", path.name
            width = float(root.attrib["width"].removesuffix("pt"))
            assert width <= 7.2 * 72 + 20, (path.name, width)  # a column, or the page width for wide heatmaps
            assert not root.findall(".//{http://www.w3.org/2000/svg}text"), "glyphs are paths: no font needed"
        else:
            assert data.startswith(b"%PDF-") and data.rstrip().endswith(b"%%EOF"), path.name
            assert b"/FontFile2" in data, f"{path.name}: fonts embedded (TrueType)"
            box = re.search(rb"/MediaBox \[\s*0 0 ([\d.]+) ([\d.]+)\s*\]", data)
            assert box is not None and float(box[1]) <= 7.2 * 72 + 20, path.name
            if not path.stem.startswith("crosstab-"):
                assert float(box[1]) <= 3.5 * 72 + 20, (path.name, float(box[1]))
