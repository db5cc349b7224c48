"""The sample, assign and import_tosem_workbook commands: the docs/design.md §4 contract, clear failures."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from apps.accounts.models import Role, Study, User
from apps.annotation.models import Annotation, Assignment, Round, RoundItem
from apps.corpus.models import Item
from tests.factories import MembershipFactory, UserFactory

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
WORKBOOK = ROOT / "tests" / "annotation" / "data" / "reliability_analysis_round1.xlsx"
SHARED_WORKBOOK = (
    ROOT.parent / "shared" / "data" / "tosem23" / "results" / "labelling" / "reliability_analysis_round1.xlsx"
)


def test_sample_draws_and_records_and_a_rerun_changes_nothing(
    study: Study, items: list[Item], capsys: pytest.CaptureFixture[str]
) -> None:
    call_command("sample", "ddp", "--round", "1", "--size", "4", "--seed", "42", "--stratify", "source")
    out = capsys.readouterr().out
    assert "Drew 4 of 12 eligible items stratified by source into Round 1 of ddp (seed 42)" in out
    drawn = list(RoundItem.objects.order_by("position").values_list("item_id", flat=True))
    call_command("sample", "ddp", "--round", "1", "--size", "4", "--seed", "42", "--stratify", "source")
    assert "nothing changed" in capsys.readouterr().out
    assert list(RoundItem.objects.order_by("position").values_list("item_id", flat=True)) == drawn
    round_ = Round.objects.get()
    assert (round_.seed, round_.requested_size, round_.stratify_field, round_.method) == (
        42,
        4,
        "source",
        "stratified",
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nope", "--round", "1", "--size", "2", "--seed", "1"], "No study with the slug 'nope'"),
        (["ddp", "--round", "1", "--size", "50", "--seed", "1"], "Cannot draw 50 items: only 12"),
        (
            ["ddp", "--round", "0", "--size", "2", "--seed", "1"],
            "--round: must be a positive whole number, got '0'",
        ),
        (
            ["ddp", "--round", "1", "--size", "2", "--seed", "1", "--stratify", "x y"],
            "Cannot stratify by 'x y'",
        ),
    ],
)
def test_sample_refuses_bad_input_with_a_message(
    study: Study, items: list[Item], args: list[str], message: str
) -> None:
    with pytest.raises(CommandError, match=message):
        call_command("sample", *args)
    assert not Round.objects.exists()


def test_assign_gives_each_item_to_k_members(
    study: Study, items: list[Item], annotator_a: User, annotator_b: User, capsys: pytest.CaptureFixture[str]
) -> None:
    call_command("sample", "ddp", "--round", "1", "--size", "5", "--seed", "1")
    call_command("assign", "ddp", "--round", "1", "--annotators", "alice,bob")
    assert "10 assignments created" in capsys.readouterr().out
    assert Assignment.objects.count() == 10


def test_assign_refuses_a_non_member_and_writes_nothing(
    study: Study, items: list[Item], annotator_a: User, outsider: User
) -> None:
    call_command("sample", "ddp", "--round", "1", "--size", "5", "--seed", "1")
    with pytest.raises(CommandError, match="'oscar' is not a member of study ddp"):
        call_command("assign", "ddp", "--round", "1", "--annotators", "alice,oscar", "--overlap", "1")
    with pytest.raises(CommandError, match="has no round 9"):
        call_command("assign", "ddp", "--round", "9", "--annotators", "alice", "--overlap", "1")
    assert not Assignment.objects.exists()


@pytest.fixture
def tosem_study(db: None) -> Study:
    """A study with the TOSEM 2023 codebook, the round 1 posts and its two annotators."""
    study = Study.objects.create(slug="tosem", name="TOSEM 2023")
    for name in ("annotator1", "annotator2"):
        MembershipFactory(study=study, role=Role.ANNOTATOR, user=UserFactory(username=name))
    call_command("load_codebook", "tosem", str(ROOT / "fixtures" / "tosem23" / "codebook.json"))
    call_command("import_items", "tosem", str(ROOT / "fixtures" / "tosem23" / "items.csv"))
    return study


def _workbook(tmp_path: Path) -> Path:
    source = WORKBOOK if WORKBOOK.exists() else SHARED_WORKBOOK
    target = tmp_path / "round1.xlsx"
    shutil.copy(source, target)
    return target


def test_import_tosem_workbook_refuses_unresolved_cells_unless_told(
    tosem_study: Study, tmp_path: Path
) -> None:
    with pytest.raises(CommandError, match=r"label1!C14 'timeline'"):
        call_command("import_tosem_workbook", "tosem", str(_workbook(tmp_path)), "--round", "1")
    assert not Annotation.objects.exists()


def test_import_tosem_workbook_stores_both_annotators_once(
    tosem_study: Study, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(_workbook(tmp_path))
    call_command("import_tosem_workbook", "tosem", path, "--round", "1", "--skip-unresolved")
    assert "216 annotations created" in capsys.readouterr().out
    per_annotator = {
        name: Annotation.objects.filter(assignment__annotator__username=name, imported=True).count()
        for name in ("annotator1", "annotator2")
    }
    assert per_annotator == {"annotator1": 108, "annotator2": 108}
    call_command("import_tosem_workbook", "tosem", path, "--round", "1", "--skip-unresolved")
    assert "0 annotations created, 0 updated, 216 unchanged" in capsys.readouterr().out


def test_import_tosem_workbook_needs_members(tosem_study: Study, tmp_path: Path) -> None:
    with pytest.raises(CommandError, match=r"--annotators: No user named .nobody-here."):
        call_command(
            "import_tosem_workbook",
            "tosem",
            str(_workbook(tmp_path)),
            "--round",
            "1",
            "--skip-unresolved",
            "--annotators",
            "annotator1,nobody-here",
        )
