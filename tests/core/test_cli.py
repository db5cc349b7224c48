"""Bad values on the command line: one line naming the flag, exit status 2, no traceback (issue 18.13)."""

from __future__ import annotations

import pytest
from django.core.management import get_commands, load_command_class
from django.core.management.base import CommandError

from apps.core import cli

BAD_VALUES = [
    (
        "create_study",
        ["s", "--name", "S", "--overlap", "0"],
        "--overlap: must be a positive whole number, got '0'",
    ),
    ("create_study", ["s", "--name", "S", "--overlap", "two"], "--overlap: must be a positive whole number"),
    ("add_member", ["s", "u", "--role", "boss"], "--role: invalid choice: 'boss'"),
    ("study_status", ["s", "--format", "xml"], "--format: invalid choice: 'xml'"),
    ("agreement", ["--ratings", "r.csv", "--bootstrap", "20000"], "--bootstrap: at most 10,000 replicates"),
    (
        "agreement",
        ["--ratings", "r.csv", "--bootstrap", "-1"],
        "--bootstrap: must be a positive whole number",
    ),
    ("agreement", ["--ratings", "r.csv", "--bootstrap", "9", "--seed", "-1"], "--seed: must be zero or a"),
    ("agreement", ["s", "--round", "abc"], "--round: must be a positive whole number, got 'abc'"),
    ("agreement", ["s", "--level", "0"], "--level: must be a positive whole number, got '0'"),
    ("agreement", ["s", "--format", "csv"], "--format: invalid choice: 'csv'"),
    ("assign", ["s", "--round", "abc", "--annotators", "a,b"], "--round: must be a positive whole number"),
    (
        "assign",
        ["s", "--round", "1", "--annotators", "a,b", "--overlap", "-2"],
        "--overlap: must be a positive",
    ),
    ("import_tosem_workbook", ["s", "f.xlsx", "--round", "0"], "--round: must be a positive whole number"),
    ("sample", ["s", "--round", "abc", "--size", "5", "--seed", "1"], "--round: must be a positive whole"),
    (
        "sample",
        ["s", "--round", "1", "--size", "-5", "--seed", "1"],
        "--size: must be a positive whole number",
    ),
    (
        "sample",
        ["s", "--round", "1", "--size", "5", "--seed", "x"],
        "--seed: must be a whole number, got 'x'",
    ),
    ("import_github", ["s", "--repo", "o/r", "--since", "yesterday"], "--since: must be an ISO date"),
    (
        "import_github",
        ["s", "--repo", "o/r", "--limit", "-5"],
        "--limit: must be a positive whole number, got '-5'",
    ),
    (
        "import_github",
        ["s", "--repo", "o/r", "--api-url", "ftp://x"],
        "--api-url: must be an http:// or https://",
    ),
    ("import_github", ["s", "--repo", "o/r", "--state", "shut"], "--state: invalid choice: 'shut'"),
    (
        "import_stackexchange",
        ["s", "--tagged", "t", "--limit", "0"],
        "--limit: must be a positive whole number",
    ),
    ("import_stackexchange", ["s", "--tagged", "t", "--api-url", "x"], "--api-url: must be an http:// or"),
    ("import_stackexchange", ["s", "--tagged", "t", "--match", "some"], "--match: invalid choice: 'some'"),
    ("import_items", ["s", "f", "--format", "xml"], "--format: invalid choice: 'xml'"),
    ("import_so_dump", ["s", "Posts.xml", "--preset", "nope"], "--preset: invalid choice: 'nope'"),
    ("export_dataset", ["s", "--format", "xml", "--output", "o"], "--format: invalid choice: 'xml'"),
    (
        "export_dataset",
        ["s", "--format", "csv", "--output", "o", "--round", "abc"],
        "--round: must be a positive",
    ),
    (
        "export_dataset",
        ["s", "--format", "csv", "--output", "o", "--level", "-1"],
        "--level: must be a positive",
    ),
    ("requeue_jobs", ["--older-than", "-1"], "--older-than: must be a number of zero or more, got '-1'"),
    ("requeue_jobs", ["--older-than", "soon"], "--older-than: must be a number of zero or more, got 'soon'"),
    ("export_codebook", ["s", "--format", "pdf"], "--format: invalid choice: 'pdf'"),
]


@pytest.mark.parametrize(("name", "args", "message"), BAD_VALUES)
def test_a_bad_value_prints_one_line_naming_the_flag_and_exits_2(
    name: str, args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    command = load_command_class(get_commands()[name], name)
    with pytest.raises(SystemExit) as exit:
        command.run_from_argv(["manage.py", name, *args])
    out, err = capsys.readouterr()
    assert exit.value.code == 2
    assert out == ""
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith(f"manage.py {name}: {message}"), err


@pytest.mark.parametrize(("name", "args", "message"), BAD_VALUES[:3])
def test_through_call_command_a_bad_value_is_a_command_error_with_status_2(
    name: str, args: list[str], message: str
) -> None:
    from django.core.management import call_command

    with pytest.raises(CommandError) as error:
        call_command(name, *args)
    assert error.value.returncode == 2
    assert str(error.value).startswith(f"Error: {message}")


def test_every_command_of_the_project_has_one_line_argument_errors() -> None:
    ours = {name: app for name, app in get_commands().items() if app.startswith("apps.")}
    assert len(ours) >= 19
    for name, app in ours.items():
        assert isinstance(load_command_class(app, name), cli.BaseCommand), name


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2021-06-01", "2021-06-01T00:00:00+00:00"),
        ("2021-06-01T12:30:00Z", "2021-06-01T12:30:00+00:00"),
        ("2021-06-01T14:30:00+02:00", "2021-06-01T12:30:00+00:00"),
        ("2021-06-01T12:30", "2021-06-01T12:30:00+00:00"),
    ],
)
def test_iso_dates_become_utc_moments(text: str, expected: str) -> None:
    assert cli.iso_datetime(text).isoformat() == expected
