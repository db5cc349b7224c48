"""`import_labels STUDY FILE.csv [--decisions]`: both modes, errors by row, all-or-nothing, idempotence."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from apps.accounts.models import Study, User
from apps.adjudication.models import Decision, Provenance, Review, ReviewState
from apps.adjudication.queries import decision_findings
from apps.annotation.models import Annotation, Round
from apps.corpus.models import Item
from apps.taxonomy.models import Category, Codebook
from apps.taxonomy.services import retire_category
from tests.factories import ItemFactory

pytestmark = pytest.mark.django_db

URL1 = "https://github.com/pytorch/pytorch/issues/101"
URL2 = "https://github.com/pytorch/pytorch/issues/102"


@pytest.fixture
def items(study: Study, codebook: Codebook) -> list[Item]:
    return [ItemFactory(study=study, url=URL1, title="one"), ItemFactory(study=study, url=URL2, title="two")]


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "labels.csv"
    path.write_text(text, encoding="utf-8")
    return str(path)


def run(*args: str) -> str:
    from io import StringIO

    out = StringIO()
    call_command("import_labels", *args, stdout=out, stderr=StringIO())
    return out.getvalue()


def gold_keys(decision: Decision) -> list[dict[str, set[str]]]:
    names = dict(Category.objects.values_list("id", "key"))
    return [{d: {names[c] for c in ids} for d, ids in f.items()} for f in decision_findings(decision)]


GOLD = (
    "item,annotator,dimension,label,finding,memo\n"
    f"{URL1},,type,fault,1,Confirmed with the authors.\n"
    f"{URL1},,symptom,Crash > Segfault,1,\n"
    f"{URL1},,fix,config,1,\n"
    f"{URL1},,fix,Code,1,\n"
    f"{URL2},,type,How-to,1,\n"
)


def test_gold_decisions_are_imported_with_provenance_imported(
    tmp_path: Path, study: Study, items: list[Item]
) -> None:
    output = run(study.slug, write(tmp_path, GOLD), "--decisions")
    assert "2 decision(s) created" in output
    one = Decision.objects.get(item__url=URL1)
    assert one.provenance == Provenance.IMPORTED and one.decided_by is None
    assert gold_keys(one) == [{"type": {"fault"}, "symptom": {"segfault"}, "fix": {"config", "code"}}]
    assert one.rationale == "Confirmed with the authors."
    assert Review.objects.get(item__url=URL1).state == ReviewState.DECIDED
    assert json.loads(json.dumps(one.changes))["annotations"] == []


def test_reimporting_the_same_decisions_changes_nothing(
    tmp_path: Path, study: Study, items: list[Item]
) -> None:
    path = write(tmp_path, GOLD)
    run(study.slug, path, "--decisions")
    output = run(study.slug, path, "--decisions")
    assert "0 decision(s) created" in output and "2 unchanged" in output
    assert Decision.objects.count() == 2


def test_reimporting_different_labels_supersedes_and_keeps_the_old_decision(
    tmp_path: Path, study: Study, items: list[Item]
) -> None:
    run(study.slug, write(tmp_path, GOLD), "--decisions")
    old = Decision.objects.get(item__url=URL1)
    changed = GOLD.replace("Crash > Segfault", "hang")
    output = run(study.slug, write(tmp_path, changed), "--decisions")
    assert "1 decision(s) created (1 replacing a different one), 1 unchanged" in output
    new = Decision.objects.get(item__url=URL1, is_current=True)
    old.refresh_from_db()
    assert (new.supersedes, old.is_current) == (old, False)
    assert new.changes["previous"]["dimensions"] == {"symptom": {"from": ["segfault"], "to": ["hang"]}}


def test_bad_decision_rows_are_reported_by_row_field_and_value_and_nothing_is_written(
    tmp_path: Path, study: Study, items: list[Item], lead: User
) -> None:
    retire_category(Category.objects.get(key="upgrade"), actor=lead)
    bad = (
        "item,annotator,dimension,label,finding\n"
        f"{URL1},,type,fault,1\n"  # fine on its own
        f"{URL1},,symptom,crash,1\n"
        f"{URL1},,fix,upgrade,1\n"  # row 4: retired
        "https://github.com/nobody/nothing/issues/1,,type,fault,1\n"  # row 5: unknown item
        f"{URL2},,type,explosion,1\n"  # row 6: unknown label
        f"{URL2},,mood,sad,2\n"  # row 7: unknown dimension
    )
    with pytest.raises(CommandError) as caught:
        run(study.slug, write(tmp_path, bad), "--decisions")
    message = str(caught.value)
    assert "nothing written" in message
    assert "row 4, label 'upgrade'" in message and "retired" in message
    assert "row 5, item 'https://github.com/nobody/nothing/issues/1'" in message
    assert "row 6, label 'explosion'" in message
    assert "row 7, dimension 'mood'" in message
    assert not Decision.objects.exists() and not Review.objects.exists()


def test_two_categories_on_a_single_choice_dimension_are_refused(
    tmp_path: Path, study: Study, items: list[Item]
) -> None:
    bad = f"item,annotator,dimension,label\n{URL1},,type,fault\n{URL1},,type,howto\n{URL2},,type,howto\n"
    with pytest.raises(CommandError) as caught:
        run(study.slug, write(tmp_path, bad), "--decisions")
    assert "row 3, label 'howto': 'Issue type' takes one category; finding 1 already has 'Fault'" in str(
        caught.value
    )
    assert not Decision.objects.exists()


def test_a_pending_gold_label_is_refused(tmp_path: Path, study: Study, items: list[Item]) -> None:
    with pytest.raises(CommandError, match="row 2, label 'pending': a gold decision cannot be pending"):
        run(
            study.slug,
            write(tmp_path, f"item,annotator,dimension,label\n{URL2},,type,pending\n"),
            "--decisions",
        )


def test_a_dimension_that_does_not_apply_is_refused(tmp_path: Path, study: Study, items: list[Item]) -> None:
    bad = f"item,annotator,dimension,label\n{URL2},,type,howto\n{URL2},,symptom,hang\n"
    with pytest.raises(CommandError, match="row 3, dimension 'symptom': does not apply"):
        run(study.slug, write(tmp_path, bad), "--decisions")


def test_an_unknown_round_is_refused(tmp_path: Path, study: Study, items: list[Item]) -> None:
    with pytest.raises(CommandError, match="row 2, round '7': no such round"):
        run(
            study.slug,
            write(tmp_path, f"item,annotator,dimension,label,round\n{URL1},,type,howto,7\n"),
            "--decisions",
        )


def test_plain_mode_imports_annotators_labels_and_consolidates_them(
    tmp_path: Path, study: Study, items: list[Item], annotator_a: User, annotator_b: User
) -> None:
    labels = (
        "item,annotator,dimension,label,round\n"
        f"{URL1},alice,type,howto,1\n"
        f"{URL1},bob,type,howto,1\n"
        f"{URL2},alice,type,fault,1\n"
        f"{URL2},alice,symptom,crash,1\n"
        f"{URL2},alice,fix,code,1\n"
        f"{URL2},bob,type,fault,1\n"
        f"{URL2},bob,symptom,hang,1\n"
        f"{URL2},bob,fix,code,1\n"
    )
    path = write(tmp_path, labels)
    output = run(study.slug, path)
    assert "4 annotations created" in output
    assert Decision.objects.get(item__url=URL1).provenance == Provenance.UNANIMOUS
    review = Review.objects.get(item__url=URL2)
    assert (review.state, review.disagreeing_dimensions) == (ReviewState.DISAGREEMENT, ["symptom"])
    assert "4 unchanged" in run(study.slug, path)
    assert Annotation.objects.count() == 4


def test_plain_mode_errors_name_the_row_and_write_nothing(
    tmp_path: Path, study: Study, items: list[Item], annotator_a: User
) -> None:
    labels = f"item,annotator,dimension,label\n{URL1},alice,type,howto\n{URL1},nobody,type,howto\n"
    with pytest.raises(CommandError) as caught:
        run(study.slug, write(tmp_path, labels))
    assert "row 3, annotator 'nobody'" in str(caught.value)
    assert not Annotation.objects.exists()


def test_a_missing_file_a_bad_header_and_an_unknown_study_are_clear_errors(
    tmp_path: Path, study: Study, items: list[Item]
) -> None:
    with pytest.raises(CommandError, match="no such file"):
        run(study.slug, str(tmp_path / "missing.csv"))
    with pytest.raises(CommandError, match="missing column"):
        run(study.slug, write(tmp_path, "url,label\nx,y\n"), "--decisions")
    with pytest.raises(CommandError, match="No study with the slug 'nope'"):
        run("nope", write(tmp_path, GOLD), "--decisions")


def test_study_status_counts_imported_decisions(
    tmp_path: Path, study: Study, items: list[Item], capsys: pytest.CaptureFixture[str]
) -> None:
    run(study.slug, write(tmp_path, GOLD), "--decisions")
    call_command("study_status", study.slug, "--format", "json")
    status = json.loads(capsys.readouterr().out)
    assert status["decisions"] == {
        "unanimous": 0,
        "majority": 0,
        "discussed": 0,
        "adjudicated": 0,
        "imported": 2,
    }
    assert status["disagreements_open"] == 0


def test_unbalanced_quote_in_a_labels_memo_is_refused_and_nothing_is_written(
    tmp_path: Path, study: Study, items: list[Item], annotator_a: User, annotator_b: User
) -> None:
    labels = (
        "item,annotator,dimension,label,round,memo\n"
        f'{URL1},alice,type,howto,1,"He said ""hi\n'
        f"{URL1},bob,type,howto,1,\n"
        f"{URL2},alice,type,howto,1,\n"
        f"{URL2},bob,type,howto,1,\n"
    )
    with pytest.raises(CommandError) as caught:
        run(study.slug, write(tmp_path, labels))
    assert "row 2, row: not readable as CSV: line 2: a quoted field opened on this line is still open" in str(
        caught.value
    )
    assert not Annotation.objects.exists() and not Decision.objects.exists()


@pytest.mark.parametrize(
    "swallowed",
    [
        f"{URL1},bob,type,howto,1,\n{URL2},alice,type,howto,1,\n",
        f"{URL1},bob,type,howto\n{URL2},alice,type,howto\n",
    ],
    ids=["full rows", "rows without the optional columns"],
)
def test_label_rows_swallowed_between_two_stray_quotes_in_memos_are_refused_and_nothing_is_written(
    tmp_path: Path, study: Study, items: list[Item], annotator_a: User, annotator_b: User, swallowed: str
) -> None:
    labels = (
        "item,annotator,dimension,label,round,memo\n"
        f'{URL1},alice,type,howto,1,"He said hi\n'
        f"{swallowed}"
        f'{URL2},bob,type,howto,1,she said bye"\n'
    )
    with pytest.raises(CommandError) as caught:
        run(study.slug, write(tmp_path, labels))
    assert (
        "row 2, row: not readable as CSV: line 2: a quoted field opened on this line runs to line 5"
        in str(caught.value)
    )
    assert not Annotation.objects.exists() and not Decision.objects.exists()


def test_a_memo_with_line_ends_and_commas_is_imported_whole(
    tmp_path: Path, study: Study, items: list[Item], annotator_a: User, annotator_b: User
) -> None:
    memo = "Asked on the forum, see below.\n\nQuote: how do I call f(a, b, c)?\nAnswer: use g, not f."
    labels = (
        "item,annotator,dimension,label,round,memo\n"
        f'{URL1},alice,type,howto,1,"{memo}"\n'
        f"{URL1},bob,type,howto,1,\n"
    )
    run(study.slug, write(tmp_path, labels))
    assert Annotation.objects.get(assignment__annotator=annotator_a).memo == memo


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "is a directory, not a file"),
        (f"item,annotator,dimension,label\n{URL1},alice,type,caf\xe9\n".encode("latin-1"), "byte 0xe9 at"),
        (f"item,annotator,dimension,label\n{URL1},alice,type,howto\n".encode("utf-16"), "is UTF-16"),
    ],
)
def test_a_labels_directory_or_another_encoding_exits_with_status_2_in_one_line(
    tmp_path: Path, study: Study, items: list[Item], content: bytes | None, message: str
) -> None:
    path = tmp_path / "labels.csv"
    if content is None:
        path.mkdir()
    else:
        path.write_bytes(content)
    with pytest.raises(CommandError) as caught:
        run(study.slug, str(path))
    assert caught.value.returncode == 2
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_labels_leaving_an_applicable_dimension_empty_are_refused_with_row_and_dimension(
    tmp_path: Path, study: Study, items: list[Item], annotator_a: User, annotator_b: User
) -> None:
    labels = (
        "item,annotator,dimension,label,round\n"
        f"{URL1},alice,type,fault,1\n"
        f"{URL1},alice,fix,code,1\n"
        f"{URL1},bob,type,fault,1\n"
        f"{URL1},bob,fix,code,1\n"
    )
    with pytest.raises(CommandError) as caught:
        run(study.slug, write(tmp_path, labels))
    message = str(caught.value)
    assert "row 2, dimension 'symptom'" in message and "row 4, dimension 'symptom'" in message
    assert not Annotation.objects.exists() and not Decision.objects.exists()


def test_a_gold_decision_leaving_an_applicable_dimension_empty_is_refused_with_row_and_dimension(
    tmp_path: Path, study: Study, items: list[Item]
) -> None:
    gold = f"item,annotator,dimension,label\n{URL2},,type,howto\n{URL1},,type,fault\n{URL1},,fix,code\n"
    with pytest.raises(CommandError) as caught:
        run(study.slug, write(tmp_path, gold), "--decisions")
    assert "row 3, dimension 'symptom': finding 1 of item" in str(caught.value)
    assert "dimension 'fix'" not in str(caught.value)
    assert not Decision.objects.exists()


def test_an_item_labelled_by_one_annotator_waits_and_is_never_unanimous(
    tmp_path: Path, study: Study, items: list[Item], annotator_a: User, annotator_b: User
) -> None:
    labels = f"item,annotator,dimension,label,round\n{URL1},alice,type,howto,1\n"
    run(study.slug, write(tmp_path, labels))
    assert not Decision.objects.exists()
    assert Review.objects.get(item__url=URL1).state == ReviewState.ANNOTATING

    run(study.slug, write(tmp_path, labels + f"{URL1},bob,type,howto,1\n"))
    assert Decision.objects.get(item__url=URL1, is_current=True).provenance == Provenance.UNANIMOUS


def test_a_label_for_an_item_in_no_round_is_refused_unless_round_names_it(
    tmp_path: Path, study: Study, items: list[Item], annotator_a: User, annotator_b: User
) -> None:
    path = write(
        tmp_path, f"item,annotator,dimension,label\n{URL1},alice,type,howto\n{URL1},bob,type,howto\n"
    )
    with pytest.raises(CommandError) as caught:
        run(study.slug, path)
    assert f"row 2, round: item {URL1} is in no round" in str(caught.value)
    assert not Round.objects.exists() and not Annotation.objects.exists()

    assert "created round(s) 2" in run(study.slug, path, "--round", "2")
    assert Decision.objects.get(item__url=URL1).provenance == Provenance.UNANIMOUS


def test_a_label_beyond_the_items_overlap_is_refused_or_accepted_and_counted_with_allow_extra(
    tmp_path: Path, study: Study, items: list[Item], annotator_a: User, annotator_b: User, annotator_c: User
) -> None:
    path = write(
        tmp_path,
        "item,annotator,dimension,label,round\n"
        f"{URL1},alice,type,howto,1\n{URL1},bob,type,howto,1\n{URL1},carol,type,fault,1\n"
        f"{URL1},carol,symptom,hang,1\n{URL1},carol,fix,code,1\n",
    )
    with pytest.raises(CommandError) as caught:
        run(study.slug, path)
    assert "row 4, annotator 'carol'" in str(caught.value) and "overlap of 2" in str(caught.value)
    assert not Annotation.objects.exists()

    output = run(study.slug, path, "--allow-extra")
    assert "3 annotations created" in output and "1 annotation(s) beyond the round's overlap" in output
    assert Review.objects.get(item__url=URL1).state == ReviewState.DISAGREEMENT
