"""``manage.py agreement``: the ratings-file form, the study form, and exit status 2 on bad input."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tracemalloc
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from apps.accounts.models import Study, User
from apps.agreement.metrics import agreement_report
from apps.agreement.models import AgreementSnapshot
from apps.agreement.ratings_csv import parse_ratings
from apps.corpus.models import Item
from apps.taxonomy.models import Codebook
from tests.agreement.conftest import Annotate

ROOT = Path(__file__).resolve().parents[2]

# Cohen's kappa example of Wikipedia: 50 items, a yes/no 20 + 15 agreements, kappa 0.4.
WIKI = [("yes", "yes")] * 20 + [("yes", "no")] * 5 + [("no", "yes")] * 10 + [("no", "no")] * 15


def _ratings_file(tmp_path: Path, rows: list[tuple[str, str, str]], name: str = "ratings.csv") -> Path:
    path = tmp_path / name
    path.write_text("item,annotator,label\n" + "".join(f"{i},{a},{label}\n" for i, a, label in rows))
    return path


@pytest.fixture
def wiki_file(tmp_path: Path) -> Path:
    rows = [
        (f"i{n}", rater, label)
        for n, pair in enumerate(WIKI)
        for rater, label in zip("AB", pair, strict=True)
    ]
    return _ratings_file(tmp_path, rows)


def run(*args: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("agreement", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def bad_input(*args: str) -> str:
    with pytest.raises(CommandError) as caught:
        run(*args)
    assert caught.value.returncode == 2
    return str(caught.value)


# ---------------------------------------------------------------------------------- --ratings FILE
def test_a_ratings_file_prints_the_design_report_as_json(wiki_file: Path) -> None:
    out, _ = run("--ratings", str(wiki_file), "--format", "json")
    report = json.loads(out)
    assert report == agreement_report(parse_ratings(wiki_file, multi=False))
    assert report["cohen_kappa"] == pytest.approx(0.4, abs=1e-12)
    assert report["n_items"] == 50 and report["n_annotators"] == 2


def test_the_bootstrap_interval_is_reproducible_with_a_seed(wiki_file: Path) -> None:
    first = json.loads(
        run("--ratings", str(wiki_file), "--bootstrap", "200", "--seed", "3", "--format", "json")[0]
    )
    second = json.loads(
        run("--ratings", str(wiki_file), "--bootstrap", "200", "--seed", "3", "--format", "json")[0]
    )
    low, high = first["krippendorff_alpha_ci"]
    assert low < first["krippendorff_alpha"] < high
    assert first["krippendorff_alpha_ci"] == second["krippendorff_alpha_ci"]


def test_multi_choice_ratings_with_declared_categories(tmp_path: Path) -> None:
    path = _ratings_file(
        tmp_path,
        [
            ("1", "a", "x"),
            ("1", "a", "y"),
            ("1", "b", "x"),
            ("2", "a", "z"),
            ("2", "b", "z"),
            ("3", "a", ""),
            ("3", "b", ""),
        ],
    )
    report = json.loads(
        run("--ratings", str(path), "--multi", "--categories", "x,y,z,w", "--format", "json")[0]
    )
    assert list(report["per_category"]) == ["x", "y", "z", "w"]
    assert report["percent_agreement"] == pytest.approx(2 / 3)
    assert "krippendorff_alpha_masi" in report and "krippendorff_alpha_jaccard" in report


def test_the_text_format_shows_undefined_figures_as_n_a_with_their_reason(tmp_path: Path) -> None:
    path = _ratings_file(tmp_path, [("1", "a", "x"), ("1", "b", "x"), ("2", "a", "x"), ("2", "b", "x")])
    out, _ = run("--ratings", str(path), "--categories", "x,y", "--format", "text")
    assert "Krippendorff's alpha" in out
    assert "n/a" in out
    assert "krippendorff_alpha: expected disagreement is zero: all 4 pairable ratings are 'x'" in out
    assert re.search(r"^Gwet's AC1 +1\.0000$", out, re.MULTILINE)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("item,label\n1,x\n", "missing column annotator"),
        ("", "empty file"),
        ("item,annotator,label\n1,a,x\n2,a,y\n", "only one annotator"),
        ("item,annotator,label\n", "no ratings after the header"),
        ("item,annotator,label,dimension\n1,a,x,d\n", "unexpected column"),
    ],
)
def test_a_bad_ratings_file_exits_with_status_2_and_a_clear_message(
    tmp_path: Path, content: str, message: str
) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(content)
    text = bad_input("--ratings", str(path), "--format", "json")
    assert message in text and str(path) in text


def test_an_undeclared_label_is_named_with_its_line(tmp_path: Path) -> None:
    path = _ratings_file(tmp_path, [("1", "a", "x"), ("1", "b", "bogus")])
    assert "line 3, field 'label', value 'bogus'" in bad_input("--ratings", str(path), "--categories", "x,y")


def test_a_missing_file_exits_with_status_2(tmp_path: Path) -> None:
    assert "no such file" in bad_input("--ratings", str(tmp_path / "nope.csv"))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "give either a study slug or --ratings"),
        (("ddp", "--ratings", "x.csv"), "not both"),
        (("--ratings", "x.csv", "--dimension", "kind"), "--dimension applies to a study"),
        (("--ratings", "x.csv", "--level", "1"), "--level applies to a study"),
        (("--ratings", "x.csv", "--seed", "1"), "--seed needs --bootstrap"),
        (("--ratings", "x.csv", "--bootstrap", "0"), "--bootstrap: must be a positive whole number"),
        (("--ratings", "x.csv", "--bootstrap", "10001"), "--bootstrap: at most 10,000 replicates"),
    ],
)
def test_options_of_the_wrong_form_are_refused(args: tuple[str, ...], message: str) -> None:
    assert message in bad_input(*args)


@pytest.mark.django_db
def test_study_only_options_are_refused_for_a_study(study: Study) -> None:
    assert "--multi applies to --ratings" in bad_input("ddp", "--multi")


def test_the_real_exit_status_is_2(tmp_path: Path) -> None:
    path = tmp_path / "one.csv"
    path.write_text("item,annotator,label\n1,a,x\n")
    env = {**os.environ, "TAXONOMIST_VAR_DIR": str(tmp_path / "var")}
    done = subprocess.run(
        [sys.executable, "manage.py", "agreement", "--ratings", str(path), "--format", "json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert "only one annotator" in done.stderr
    assert done.stdout == ""


# -------------------------------------------------------------------------------------------- STUDY
@pytest.fixture
def labelled(
    study: Study,
    codebook: Codebook,
    annotate: Annotate,
    items: list[Item],
    annotator_a: User,
    annotator_b: User,
) -> Study:
    for n, item in enumerate(items[:4]):
        annotate(1, item, annotator_a, [{"kind": ["bug"], "symptom": ["segfault"], "fix": ["code"]}])
        annotate(
            1,
            item,
            annotator_b,
            [{"kind": ["bug"], "symptom": ["oom" if n % 2 else "segfault"], "fix": ["code"]}],
        )
    annotate(2, items[4], annotator_a, [{"kind": "pending"}])
    annotate(2, items[4], annotator_b, [{"kind": ["question"]}])
    return study


@pytest.mark.django_db
def test_a_study_prints_every_dimension_keyed_by_dimension(labelled: Study) -> None:
    out, err = run("ddp", "--format", "json")
    result: dict[str, Any] = json.loads(out)
    assert list(result) == ["kind", "symptom", "fix"]
    for key, report in result.items():
        assert report["dimension"] == key and report["codebook_version"] == 3
        assert report["round"] is None and report["level"] is None
    assert result["symptom"]["percent_agreement"] == 0.5
    assert result["fix"]["values"] == "sets"
    assert "[3/3 (100 %)]" in err  # progress on stderr
    snapshot = AgreementSnapshot.objects.get()
    assert (
        snapshot.result == result and snapshot.codebook_version == 3 and snapshot.params["kind"] == "command"
    )


@pytest.mark.django_db
def test_a_study_dimension_round_and_level(labelled: Study) -> None:
    report = json.loads(
        run("ddp", "--dimension", "symptom", "--round", "1", "--level", "1", "--format", "json")[0]
    )
    assert (report["dimension"], report["round"], report["level"]) == ("symptom", 1, 1)
    assert report["percent_agreement"] == 1.0  # segfault and oom are both crashes
    assert list(report["per_category"]) == ["crash", "hang", "slow", "pending"]
    kind = json.loads(run("ddp", "--dimension", "kind", "--round", "2", "--format", "json")[0])
    assert kind["category_counts"] == {"bug": 0, "question": 1, "pending": 1}
    assert kind["percent_agreement"] == 0.0


@pytest.mark.django_db
def test_a_study_in_text(labelled: Study) -> None:
    out, _ = run("ddp", "--dimension", "symptom", "--format", "text")
    assert out.startswith("ddp · symptom · all rounds · full depth · codebook v3")
    assert "alice / bob" in out
    everything, _ = run("ddp", "--format", "text")
    assert everything.count("codebook v3") == 3


@pytest.mark.django_db
def test_unknown_studies_dimensions_and_rounds_list_the_valid_ones(labelled: Study) -> None:
    assert "No study with the slug 'nope' (known: ddp)" in bad_input("nope")
    assert "unknown dimension 'colour'; valid dimensions: kind, symptom, fix" in bad_input(
        "ddp", "--dimension", "colour"
    )
    assert "unknown round 5; valid rounds: 1, 2" in bad_input("ddp", "--round", "5")
    assert "--level: must be a positive whole number, got '0'" in bad_input("ddp", "--level", "0")
    assert not AgreementSnapshot.objects.exists()


def test_thousands_of_categories_need_memory_far_below_their_square(tmp_path: Path) -> None:
    # Each item a category of its own for A, and mostly the same for B: 4,000 distinct categories.
    n = 4_000
    rows = [(f"i{k}", "A", f"c{k}") for k in range(n)] + [
        (f"i{k}", "B", f"c{k if k % 3 else (k + 1) % n}") for k in range(n)
    ]
    table = parse_ratings(_ratings_file(tmp_path, rows), multi=False)
    assert len(table.categories) == n
    tracemalloc.start()
    try:
        report = agreement_report(table)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(report["per_category"]) == n
    assert report["per_category"]["c2"]["cohen_kappa"] == 1.0  # both chose c2 on i2 only
    # One byte per pair of categories is 16 MB; the counts the report needs grow with n, not n * n.
    assert peak < n * n // 4, f"peak {peak:,} bytes"


def test_a_ratings_directory_or_utf16_file_exits_with_status_2_in_one_line(tmp_path: Path) -> None:
    utf16 = tmp_path / "ratings.csv"
    utf16.write_bytes("item,annotator,label\nu1,a,x\nu1,b,x\n".encode("utf-16"))

    directory = bad_input("--ratings", str(tmp_path))
    encoding = bad_input("--ratings", str(utf16))

    assert "is a directory, not a file" in directory and "\n" not in directory
    assert "is UTF-16 (little-endian) text (byte-order mark at byte 0)" in encoding


def test_ratings_rows_swallowed_between_two_stray_quotes_are_refused_with_the_quote_line(
    tmp_path: Path,
) -> None:
    path = tmp_path / "ratings.csv"
    path.write_text(
        'item,annotator,label\nu1,a,x\nu1,b,"y\nu2,a,x\nu2,b,x"\nu3,a,x\nu3,b,x\n', encoding="utf-8"
    )

    message = bad_input("--ratings", str(path))

    assert "line 3" in message and "read as rows of their own" in message


def test_an_unbalanced_quote_in_a_ratings_file_names_the_line_it_opened_on(tmp_path: Path) -> None:
    path = tmp_path / "ratings.csv"
    path.write_text('item,annotator,label\nu1,a,x\nu1,b,"y\nu2,a,x\nu2,b,x\n', encoding="utf-8")

    message = bad_input("--ratings", str(path))

    assert "line 3" in message and "still open at the end of the file" in message
