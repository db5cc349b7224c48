"""``load_codebook`` and ``export_codebook``: idempotent loads, edited files applied as exact recorded
changes, dry runs and bad files writing nothing, and exports that load back unchanged."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from django.core.management import call_command
from django.core.management.base import CommandError

from apps.accounts.models import Study, User
from apps.taxonomy import services
from apps.taxonomy.codebook_spec import codebook_from_data
from apps.taxonomy.index import CodebookIndex
from apps.taxonomy.loading import export_codebook, load_codebook
from apps.taxonomy.models import (
    Category,
    CategoryStatus,
    ChangeKind,
    Codebook,
    CodebookChange,
    CodebookVersion,
)
from tests.taxonomy.conftest import CODEBOOK, category, codebook_data, dimension, put_gold, put_label

pytestmark = pytest.mark.django_db


def _write(tmp_path: Path, data: dict[str, Any], name: str = "codebook.json") -> Path:
    path = tmp_path / name
    if name.endswith(".json"):
        path.write_text(json.dumps(data), encoding="utf-8")
    else:
        path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def _counts() -> tuple[int, int, int, int]:
    return (
        Codebook.objects.count(),
        Category.objects.count(),
        CodebookChange.objects.count(),
        CodebookVersion.objects.count(),
    )


def _symptom(data: dict[str, Any]) -> dict[str, Any]:
    return next(d for d in data["dimensions"] if d["key"] == "symptom")


def test_loading_creates_the_codebook_and_the_same_file_twice_changes_nothing(
    study: Study, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path, CODEBOOK, "codebook.yaml")
    call_command("load_codebook", study.slug, str(path))
    assert "now at version 1 (11 change(s))" in capsys.readouterr().out
    before = _counts()
    call_command("load_codebook", study.slug, str(path))
    assert "unchanged, version 1" in capsys.readouterr().out
    assert _counts() == before
    snapshot = CodebookVersion.objects.get(codebook__study=study, number=1).snapshot
    assert codebook_from_data(snapshot) == codebook_from_data(CODEBOOK)


def test_an_edited_file_applies_exactly_its_differences_as_one_version(
    study: Study, codebook: Codebook, tmp_path: Path
) -> None:
    data = codebook_data()
    symptom = _symptom(data)
    training = symptom["categories"][0]
    failure = training["children"][0]
    failure["children"][0]["name"] = "Hang or deadlock"  # rename hang
    training["children"].pop()  # slow is gone: retire
    symptom["categories"][1]["children"].append(failure["children"].pop())  # crash moves under setup
    symptom["categories"].append({"key": "other", "name": "Other"})  # a new key
    call_command("load_codebook", study.slug, str(_write(tmp_path, data)))
    codebook.refresh_from_db()
    assert codebook.version == 2
    changes = list(CodebookChange.objects.filter(codebook=codebook, version=2).order_by("id"))
    assert [(c.kind, c.category.key if c.category else None) for c in changes] == [
        (ChangeKind.RENAME, "hang"),
        (ChangeKind.MOVE, "crash"),
        (ChangeKind.ADD, "other"),
        (ChangeKind.RETIRE, "slow"),
    ]
    assert changes[1].before == {"parent": "program-failure", "position": 1}
    assert changes[1].after == {"parent": "setup", "position": 1}
    assert category(study, "slow").status == CategoryStatus.RETIRED  # retired, never deleted
    index = CodebookIndex.for_study(study)
    assert index.path(category(study, "crash").pk) == "Setup > Crash"
    assert codebook_from_data(index.snapshot()) == codebook_from_data(data)
    stored = CodebookVersion.objects.get(codebook=codebook, number=2).snapshot
    assert stored == index.snapshot()


def test_reordering_in_the_file_is_recorded_and_positions_follow(
    study: Study, codebook: Codebook, tmp_path: Path
) -> None:
    data = codebook_data()
    data["dimensions"].reverse()
    _symptom(data)["categories"].reverse()
    result = load_codebook(study, codebook_from_data(data))
    # Of two swapped elements only one is reported as moved: the fewest changes that explain the order.
    assert [(c.kind, c.dimension, c.category) for c in result.changes] == [
        ("edit_dimension", "issue-type", None),
        ("reorder", "symptom", "training"),
    ]
    assert result.version == 2
    index = CodebookIndex.for_study(study)
    assert [d.key for d in index.dimensions] == ["symptom", "issue-type"]
    assert [c.key for c in index.categories_of("symptom")][:2] == ["setup", "install"]
    assert load_codebook(study, codebook_from_data(data)).changed is False


def test_a_key_that_comes_back_restores_the_retired_category(
    study: Study, codebook: Codebook, lead: User, annotator_a: User
) -> None:
    slow = category(study, "slow")
    label = put_label(study, annotator_a, slow)
    services.retire_category(slow, actor=lead)
    result = load_codebook(study, codebook_from_data(CODEBOOK))
    assert [(c.kind, c.category) for c in result.changes] == [("add", "slow")]
    slow.refresh_from_db()
    assert slow.status == CategoryStatus.ACTIVE
    label.refresh_from_db()
    assert label.category == slow
    change = CodebookChange.objects.get(codebook=codebook, version=result.version)
    assert change.kind == ChangeKind.RESTORE


def test_a_file_adding_an_open_proposals_key_accepts_it(
    study: Study, codebook: Codebook, annotator_a: User
) -> None:
    proposal = services.propose_category(dimension(study, "symptom"), "NCCL timeout", None, "", annotator_a)
    data = codebook_data()
    _symptom(data)["categories"].append({"key": proposal.category.key, "name": "NCCL timeout"})
    result = load_codebook(study, codebook_from_data(data))
    assert CodebookChange.objects.get(codebook=codebook, version=result.version).kind == ChangeKind.ACCEPT
    assert Category.objects.get(pk=proposal.category.pk).status == CategoryStatus.ACTIVE


def test_dry_run_prints_the_changes_and_writes_nothing(
    study: Study, codebook: Codebook, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = codebook_data()
    data["dimensions"][0]["categories"][0]["name"] = "Bug"
    before = _counts()
    call_command("load_codebook", study.slug, str(_write(tmp_path, data)), "--dry-run")
    out = capsys.readouterr().out
    assert "rename issue-type/fault: name 'Fault' → 'Bug'" in out
    assert "Dry run: 1 change(s) would be applied to version 1; nothing written." in out
    assert _counts() == before
    assert category(study, "fault", "issue-type").name == "Fault"


def test_dry_run_on_a_study_without_codebook_creates_nothing(
    study: Study, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    call_command("load_codebook", study.slug, str(_write(tmp_path, CODEBOOK)), "--dry-run")
    assert "would be applied to a new codebook" in capsys.readouterr().out
    assert _counts() == (0, 0, 0, 0)


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (
            lambda d: _symptom(d)["categories"][0]["children"][0].update(key="Bad Key"),
            r"dimensions\[symptom\]\.categories\[training\]\.children\[Bad Key\]: category key 'Bad Key'",
        ),
        (
            lambda d: _symptom(d)["categories"][1]["children"].append({"key": "hang", "name": "Hang again"}),
            r"duplicate category key 'hang'",
        ),
        (
            lambda d: _symptom(d).update(applies_when={"issue-type": "bug"}),
            r"dimensions\[symptom\]\.applies_when: dimension 'issue-type' has no category 'bug'",
        ),
        (
            lambda d: _symptom(d)["categories"][0].update(defintion="typo"),
            r"unknown field 'defintion' \(did you mean 'definition'\?\)",
        ),
    ],
)
def test_a_bad_file_is_refused_whole_with_the_offending_path(
    study: Study, codebook: Codebook, tmp_path: Path, mutate: Any, message: str
) -> None:
    data = codebook_data()
    data["dimensions"][0]["categories"][0]["name"] = "Bug"  # a valid edit that must not be applied either
    mutate(data)
    before = _counts()
    with pytest.raises(CommandError, match=message) as caught:
        call_command("load_codebook", study.slug, str(_write(tmp_path, data)))
    assert "nothing written" in str(caught.value)
    assert _counts() == before
    assert category(study, "fault", "issue-type").name == "Fault"


def test_unreadable_files_and_unknown_studies_are_refused(study: Study, tmp_path: Path) -> None:
    with pytest.raises(CommandError, match=r"expected a \.json, \.yaml or \.yml file"):
        call_command("load_codebook", study.slug, str(tmp_path / "codebook.txt"))
    with pytest.raises(CommandError, match="no such file"):
        call_command("load_codebook", study.slug, str(tmp_path / "missing.json"))
    broken = tmp_path / "broken.json"
    broken.write_text('{"name": "x", "dimensions": [}', encoding="utf-8")
    with pytest.raises(CommandError, match="line 1, column 30: invalid JSON"):
        call_command("load_codebook", study.slug, str(broken))
    with pytest.raises(CommandError, match="No study with the slug 'nope'"):
        call_command("load_codebook", "nope", str(broken))


def test_making_a_dimension_single_choice_over_multi_valued_findings_is_refused_whole(
    study: Study, codebook: Codebook, annotator_a: User, tmp_path: Path
) -> None:
    first = put_label(study, annotator_a, category(study, "hang"))
    put_label(study, annotator_a, category(study, "crash"), item=first.finding.annotation.assignment.item)
    data = codebook_data()
    _symptom(data)["multiple"] = False
    data["dimensions"][0]["categories"][0]["name"] = "Bug"
    with pytest.raises(CommandError, match="cannot become single-choice: 1 finding"):
        call_command("load_codebook", study.slug, str(_write(tmp_path, data)), "--dry-run")
    with pytest.raises(CommandError, match="cannot become single-choice"):
        call_command("load_codebook", study.slug, str(_write(tmp_path, data)))
    codebook.refresh_from_db()
    assert codebook.version == 1


@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_an_exported_file_loads_back_without_changes(
    study: Study, codebook: Codebook, lead: User, tmp_path: Path, fmt: str
) -> None:
    services.retire_category(category(study, "slow"), actor=lead)
    path = tmp_path / f"out.{fmt}"
    call_command("export_codebook", study.slug, "--format", fmt, "--output", str(path))
    result = load_codebook(study, codebook_from_data(yaml.safe_load(path.read_text(encoding="utf-8"))))
    assert not result.changed


def test_markdown_export_has_definitions_gold_counts_and_retired_categories(
    study: Study, codebook: Codebook, lead: User, capsys: pytest.CaptureFixture[str]
) -> None:
    put_gold(study, category(study, "hang"))
    put_gold(study, category(study, "crash"))
    put_gold(study, category(study, "crash"))
    services.merge_category(category(study, "slow"), category(study, "hang"), actor=lead)
    call_command("export_codebook", study.slug, "--format", "md")
    text = capsys.readouterr().out
    assert text.startswith("# Distributed training faults\n\nCodebook version 2. Counts are gold labels")
    assert "**Definition.** The job stops progressing." in text
    assert "  - Program Failure — 3" in text
    assert "- Symptom: Training & Evaluation > Slow (`slow`): merged into Training & Evaluation > " in text
    without = export_codebook(study, "md", counts=False)
    assert "—" not in without.split("## Issue type")[1].split("###")[0]


def test_export_to_a_missing_folder_fails_clearly(study: Study, codebook: Codebook, tmp_path: Path) -> None:
    with pytest.raises(CommandError, match="does not exist"):
        call_command(
            "export_codebook", study.slug, "--format", "json", "--output", str(tmp_path / "no" / "x.json")
        )


def test_a_retired_dimension_named_again_by_the_file_is_restored(
    study: Study, codebook: Codebook, lead: User
) -> None:
    services.retire_dimension(dimension(study, "symptom"), actor=lead)
    result = load_codebook(study, codebook_from_data(CODEBOOK))
    assert result.version == 3
    assert [c.kind for c in result.changes][:2] == ["add_dimension", "add"]
    restored = CodebookChange.objects.filter(
        codebook=codebook, version=3, kind=ChangeKind.ADD_DIMENSION
    ).get()
    assert restored.note == "restored"
    index = CodebookIndex.for_study(study)
    assert [d.key for d in index.dimensions] == ["issue-type", "symptom"]
    assert codebook_from_data(index.snapshot()) == codebook_from_data(CODEBOOK)
    assert not load_codebook(study, codebook_from_data(CODEBOOK)).changed


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "is a directory, not a file"),
        ('{"name": "Café"}'.encode("latin-1"), "byte 0xe9 at byte offset 13"),
        ('{"name": "x"}'.encode("utf-16"), "is UTF-16 (little-endian) text"),
    ],
)
def test_load_codebook_refuses_a_directory_or_another_encoding_with_status_2(
    study: Study, tmp_path: Path, content: bytes | None, message: str
) -> None:
    path = tmp_path / "codebook.json"
    if content is None:
        path.mkdir()
    else:
        path.write_bytes(content)

    with pytest.raises(CommandError) as failure:
        call_command("load_codebook", study.slug, str(path))

    assert failure.value.returncode == 2
    assert message in str(failure.value) and "\n" not in str(failure.value)
    assert _counts() == (0, 0, 0, 0)
