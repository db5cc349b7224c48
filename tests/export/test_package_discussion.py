"""The replication package holds a revealed round's blind and after-discussion figures, its blind
record, revisions and threads; import_study restores them (#20)."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import pytest

from apps.agreement.ratings import load_study_ratings
from apps.agreement.services import dimension_report
from apps.annotation import services
from apps.annotation.models import BlindRecord, Comment, DisagreementCause, Revision, Round
from apps.annotation.services import causes, threads
from apps.export.package import build_package, import_study
from apps.taxonomy.models import Category
from tests.api.world import World, build_world

pytestmark = pytest.mark.django_db

FAULT = {"findings": [{"values": {"type": ["fault"], "symptom": ["hang"], "fix": ["config"]}}]}
HOWTO = {"findings": [{"values": {"type": ["howto"]}}]}


@pytest.fixture
def world(study: Any, owner: Any, lead: Any, annotator_a: Any, annotator_b: Any, outsider: Any) -> World:
    study.discuss_after_reveal = True
    study.save(update_fields=["discuss_after_reveal"])
    w = build_world(study, owner, lead, annotator_a, annotator_b, outsider)
    version = services.load_codebook(study).version
    services.submit_annotation(w.assignment("alice", 2), HOWTO, w.alice, codebook_version=version)
    services.submit_annotation(w.assignment("bob", 2), HOWTO, w.bob, codebook_version=version)
    services.reveal_round(study, 1, force=True, actor=lead)
    round_ = Round.objects.get(pk=w.round.pk)
    comment = threads.add_comment(round_, w.items[0], w.alice, "Why **howto**, @bob?")
    threads.edit_comment(comment, w.alice, "Why **howto**, @bob? It crashes.")
    threads.add_comment(round_, w.items[0], w.bob, "You are right.")
    services.revise_annotation(w.assignment("bob", 0), FAULT, w.bob)
    hang = Category.objects.get(dimension__codebook__study=study, key="hang")
    causes.set_cause(
        round_, w.items[0], w.bob, "codebook_gap", note="no code for timeouts", category_id=hang.pk
    )
    return w


def _kappa(study: Any, phase: str) -> Any:
    return dimension_report(load_study_ratings(study, dimension="type", phase=phase), "type", round_number=1)[
        "cohen_kappa"
    ]


def _package(world: World, tmp_path: Path, settings: Any) -> tuple[Path, Any, Any, str]:
    """The world's replication package: its path, agreement.json, discussion.json and agreement.md."""
    settings.EXPORT_ROOT = tmp_path
    path = tmp_path / "package.zip"
    build_package(world.study, path)
    with zipfile.ZipFile(path) as archive:
        return (
            path,
            json.loads(archive.read("agreement.json")),
            json.loads(archive.read("discussion.json")),
            archive.read("agreement.md").decode(),
        )


def test_the_package_holds_both_figures_and_the_threads_and_import_study_restores_them(
    world: World, tmp_path: Path, settings: Any
) -> None:
    path, agreement, discussion, report = _package(world, tmp_path, settings)
    [round1] = agreement["rounds"]
    assert round1["dimensions"]["type"]["cohen_kappa"] == pytest.approx(0.0)
    assert round1["discussed"]["type"]["cohen_kappa"] == pytest.approx(1.0)
    assert "| 1 (Round 1), blind |" in report and "| 1 (Round 1), after discussion |" in report
    assert [c["body"] for c in discussion["comments"]] == [
        "Why **howto**, @bob? It crashes.",
        "You are right.",
    ]

    restored = import_study("ddp-again", path).study
    round_ = Round.objects.get(study=restored, number=1)
    assert round_.phase == "discussion" and round_.revealed_at is not None and restored.discuss_after_reveal
    assert BlindRecord.objects.filter(round=round_).count() == 5
    assert Revision.objects.filter(annotation__assignment__study=restored).count() == 1
    comments = list(Comment.objects.filter(round=round_).order_by("created_at"))
    assert [c.author.username for c in comments] == ["alice", "bob"]
    assert [m.username for m in comments[0].mentions.all()] == ["bob"]
    assert comments[0].edits.get().body == "Why **howto**, @bob?"
    assert _kappa(restored, "blind") == pytest.approx(_kappa(world.study, "blind")) == pytest.approx(0.0)
    assert _kappa(restored, "discussed") == pytest.approx(1.0)


def test_the_package_counts_the_causes_and_what_discussion_resolved_and_import_study_restores_the_causes(
    world: World, tmp_path: Path, settings: Any
) -> None:
    path, agreement, discussion, report = _package(world, tmp_path, settings)
    outcome = agreement["rounds"][0]["discussion"]
    # item 1: bob's revision agreed (resolved by discussion); item 2 waits for bob; item 3 agreed blind
    assert (outcome["resolved_by_discussion"], outcome["unresolved"], outcome["adjudicated"]) == (1, 0, 0)
    assert outcome["share_discussion"] == pytest.approx(1.0) and outcome["causes"] == {"codebook_gap": 1}
    assert "## Disagreements after discussion" in report and "| codebook_gap 1 |" in report
    [given] = discussion["disagreement_causes"]
    assert (given["cause"], given["category"], given["set_by"]) == (
        "codebook_gap",
        ["symptom", "hang"],
        "bob",
    )
    assert [c["key"] for c in discussion["causes"]] == [
        "codebook_gap",
        "ambiguous_item",
        "slip",
        "guideline_unclear",
        "other",
    ]

    restored = import_study("ddp-again", path).study
    cause = DisagreementCause.objects.select_related("cause", "category", "set_by").get(round__study=restored)
    assert (cause.cause.key, cause.note, cause.category.key, cause.set_by.username) == (  # type: ignore[union-attr]
        "codebook_gap",
        "no code for timeouts",
        "hang",
        "bob",
    )
    assert cause.category.dimension.codebook.study == restored  # type: ignore[union-attr]


def test_the_methods_section_reports_what_discussion_resolved_and_compiles(
    world: World, tmp_path: Path
) -> None:
    """#22 point 6: the discussion's outcome, the causes given and kappa before and after, in the prose,
    traced to agreement.json, and cited in the LaTeX, which pdflatex compiles."""
    import subprocess

    from apps.export.package.build import agreement_data
    from apps.export.paper import data, methods
    from apps.export.paper.facts import methods_data
    from apps.taxonomy.index import CodebookIndex
    from tests.export.test_paper_methods import pdflatex

    index = CodebookIndex.for_study(world.study)
    facts = methods_data(
        world.study,
        index,
        agreement_data(world.study, index),
        [data.saturation(world.study, d.key, index=index) for d in index.dimensions],
    )
    text = methods.to_markdown(facts)

    assert "## Discussion of disagreements" in text
    assert (
        "In round 1, discussion resolved 1 of 1 disagreements (100%), the adjudicator decided 0 (0%)." in text
    )
    assert "The causes given were 1 codebook gap." in text
    assert "Cohen's kappa after discussion went *Issue type* from 0.000 to 1.000" in text
    latex = methods.to_latex(facts)
    assert r"Garrison et al. 2006~\cite{garrison2006}" in latex and "@article{garrison2006," in methods.BIBTEX
    binary = pdflatex()  # installed by make test (make texlive), else skipped saying how to install it
    (tmp_path / "methods.tex").write_text(latex, encoding="utf-8")
    (tmp_path / "references.bib").write_text(methods.BIBTEX, encoding="utf-8")
    run = subprocess.run(
        [binary, "-interaction=nonstopmode", "-halt-on-error", "methods.tex"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-3000:]


def test_a_rounds_kind_and_the_assisted_annotations_survive_the_package(
    world: World, tmp_path: Path, settings: Any
) -> None:
    from apps.annotation.models import Annotation, RoundKind

    services.set_round_kind(world.study, 1, RoundKind.LABELLING)
    Annotation.objects.filter(assignment=world.assignment("alice", 2)).update(suggestion_shown=True)
    path, _, discussion, _ = _package(world, tmp_path, settings)
    assert discussion["rounds"][0]["kind"] == "labelling"
    assert discussion["assisted"] == [{"round": 1, "item": world.items[2].url, "annotator": "alice"}]
    restored = import_study("ddp-again", path).study
    assert Round.objects.get(study=restored, number=1).kind == RoundKind.LABELLING
    assisted = Annotation.objects.filter(assignment__study=restored, suggestion_shown=True)
    assert [(a.assignment.item.url, a.assignment.annotator.username) for a in assisted] == [
        (world.items[2].url, "alice")
    ]
