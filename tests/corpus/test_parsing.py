"""Item files and URLs: canonical identity, the CSV/JSON/JSONL/URL-list formats, and bad rows."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from apps.corpus.parsing import (
    ImportFileError,
    ImportFileErrors,
    check_file,
    detect_format,
    iter_records,
    load_records,
    validate_then_iterate,
)
from apps.corpus.records import (
    ItemRecord,
    canonical_url,
    external_id_for_url,
    parse_timestamp,
    source_for_url,
    split_tags,
)

SAMPLES = Path(__file__).parent / "samples"


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# --- canonical URLs ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "https://github.com/horovod/horovod/issues/5",
        "http://github.com/Horovod/Horovod/issues/5/",
        "https://www.github.com/horovod/horovod/issues/5#issuecomment-123",
        "https://github.com/horovod/horovod/issues/5?utm_source=x",
        "https://github.com/horovod/horovod/pull/5/files",
        "https://api.github.com/repos/horovod/horovod/issues/5",
        "  https://github.com/horovod/horovod/issues/5\n",
    ],
)
def test_every_spelling_of_a_github_issue_has_one_canonical_url(url: str) -> None:
    assert canonical_url(url) == "https://github.com/horovod/horovod/issues/5"


@pytest.mark.parametrize(
    "url",
    [
        "https://stackoverflow.com/questions/46519919",
        "http://stackoverflow.com/questions/46519919/distributed-tensorflow-on-torque",
        "https://www.stackoverflow.com/questions/46519919/x/46520000#46520000",
        "https://stackoverflow.com/q/46519919/12345",
        "https://stackoverflow.com/questions/46519919?noredirect=1&lq=1",
    ],
)
def test_every_spelling_of_a_stack_overflow_question_has_one_canonical_url(url: str) -> None:
    assert canonical_url(url) == "https://stackoverflow.com/questions/46519919"


def test_other_urls_lose_fragment_tracking_parameters_and_trailing_slash_only() -> None:
    url = "HTTPS://Example.ORG:443/a/b/?id=3&utm_campaign=x&fbclid=y&page=2#top"
    assert canonical_url(url) == "https://example.org/a/b?id=3&page=2"


def test_other_stack_exchange_sites_keep_their_host() -> None:
    url = "https://datascience.stackexchange.com/questions/123/some-title"
    assert canonical_url(url) == "https://datascience.stackexchange.com/questions/123"
    assert source_for_url(url) == "stackexchange"
    assert external_id_for_url(url) == "datascience:123"


def test_an_answer_link_is_not_taken_for_a_question() -> None:
    assert canonical_url("https://stackoverflow.com/a/123/") == "https://stackoverflow.com/a/123"


@pytest.mark.parametrize("url", ["", "stackoverflow.com/questions/1", "ftp://x.org/a", "javascript:alert(1)"])
def test_a_value_that_is_not_an_absolute_http_url_is_refused(url: str) -> None:
    with pytest.raises(ValueError, match="not an absolute http"):
        canonical_url(url)


def test_source_and_external_id_follow_from_the_url() -> None:
    assert source_for_url("https://github.com/pytorch/pytorch/issues/2733") == "github"
    assert external_id_for_url("https://github.com/PyTorch/pytorch/issues/2733") == "pytorch/pytorch#2733"
    assert source_for_url("https://stackoverflow.com/questions/1") == "stackoverflow"
    assert external_id_for_url("https://stackoverflow.com/questions/1") == "1"
    assert source_for_url("https://example.org/x") == "file"
    assert external_id_for_url("https://example.org/x") == ""


def test_tags_split_on_semicolons_and_both_dump_spellings() -> None:
    assert split_tags("bug; module: ddp ;;bug") == ["bug", "module: ddp"]
    assert split_tags("<python><tensorflow>") == ["python", "tensorflow"]
    assert split_tags("|python|tensorflow|") == ["python", "tensorflow"]
    assert split_tags("  ") == []


def test_timestamps_are_utc_whatever_their_spelling() -> None:
    expected = datetime(2014, 1, 8, 1, 48, 28, tzinfo=UTC)
    assert parse_timestamp("2014-01-08T01:48:28Z") == expected
    assert parse_timestamp("2014-01-08T02:48:28+01:00") == expected
    assert parse_timestamp("2014-01-08T01:48:28") == expected
    assert parse_timestamp(1389145708) == expected
    assert parse_timestamp("1389145708") == expected
    assert parse_timestamp("2014-01-08") == datetime(2014, 1, 8, tzinfo=UTC)
    with pytest.raises(ValueError, match="'yesterday'"):
        parse_timestamp("yesterday")


# --- format detection --------------------------------------------------------------------------


def test_the_format_follows_the_extension_unless_given() -> None:
    assert detect_format("items.CSV") == "csv"
    assert detect_format("items.ndjson") == "jsonl"
    assert detect_format("urls.txt") == "urls"
    assert detect_format("items.data", "JSON") == "json"
    with pytest.raises(ImportFileError, match="cannot tell the format"):
        detect_format("items.data")
    with pytest.raises(ImportFileError, match="unknown format"):
        detect_format("items.csv", "xml")


# --- CSV -----------------------------------------------------------------------------------------


def test_a_csv_row_becomes_a_record_with_unknown_columns_as_metadata(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "items.csv",
        "\ufeffURL,Title,body,created_at,tags,framework,Stage\n"
        "https://github.com/Horovod/horovod/issues/100,Hang in allreduce, body text ,2019-03-01T10:00:00Z,"
        '"bug;question",horovod,training\n',
    )
    [record] = list(iter_records(path))
    assert record == ItemRecord(
        url="https://github.com/horovod/horovod/issues/100",
        source="github",
        external_id="horovod/horovod#100",
        title="Hang in allreduce",
        body=" body text ",
        body_format="markdown",
        created_at=datetime(2019, 3, 1, 10, tzinfo=UTC),
        tags=["bug", "question"],
        metadata={"framework": "horovod", "Stage": "training"},
        raw={
            "url": "https://github.com/Horovod/horovod/issues/100",
            "title": "Hang in allreduce",
            "body": " body text ",
            "created_at": "2019-03-01T10:00:00Z",
            "tags": "bug;question",
            "framework": "horovod",
            "Stage": "training",
        },
    )


def test_stack_overflow_rows_default_to_html_bodies(tmp_path: Path) -> None:
    path = write(tmp_path, "items.csv", "url,body\nhttps://stackoverflow.com/questions/7,<p>hi</p>\n")
    [record] = list(iter_records(path))
    assert (record.source, record.external_id, record.body_format) == ("stackoverflow", "7", "html")


def test_explicit_source_body_format_and_external_id_win(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "items.csv",
        "url,source,body_format,external_id\nhttps://example.org/post/1,Forum,text,F-1\n",
    )
    [record] = list(iter_records(path))
    assert (record.source, record.body_format, record.external_id) == ("forum", "text", "F-1")


def test_a_missing_url_column_names_the_columns_found(tmp_path: Path) -> None:
    check = check_file(SAMPLES / "tosem23_so_dl_distributed.csv")
    assert [str(error) for error in check.errors] == [
        "line 1, field 'url': missing required column 'url' (columns: question, tags)"
    ]


def test_a_bad_row_is_named_by_line_field_and_value(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "items.csv",
        'url,body\nhttps://example.org/1,"two\nlines"\nnot a url,x\nhttps://example.org/3,\n',
    )
    check = check_file(path)
    assert check.records == 2
    [error] = check.errors
    assert (error.line, error.field, error.value) == (4, "url", "not a url")
    assert str(error) == "line 4, field 'url', value 'not a url': not an absolute http(s) URL"


def test_bad_dates_formats_and_extra_fields_are_errors(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "items.csv",
        "url,created_at,body_format\n"
        "https://example.org/1,31/12/2020,\n"
        "https://example.org/2,,rst\n"
        "https://example.org/3,,,surplus\n"
        ",,\n",
    )
    errors = check_file(path).errors
    assert [(error.line, error.field, error.value) for error in errors] == [
        (2, "created_at", "31/12/2020"),
        (3, "body_format", "rst"),
        (4, None, "surplus"),
        (5, "url", None),
    ]


def test_a_url_too_long_to_store_is_an_error(tmp_path: Path) -> None:
    long_url = "https://example.org/" + "a" * 490
    [too_long, bad_port] = check_file(
        write(tmp_path, "items.csv", f"url\n{long_url}\nhttps://x.org:port/\n")
    ).errors
    assert (too_long.line, too_long.field, too_long.message) == (2, "url", "longer than 500 characters")
    assert (bad_port.line, bad_port.message) == (3, "not an absolute http(s) URL")


def test_the_same_item_twice_is_an_error_naming_the_first_line(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "items.csv",
        "url\nhttps://stackoverflow.com/q/5\nhttps://example.org/x\nhttp://stackoverflow.com/questions/5/slug\n",
    )
    [error] = check_file(path).errors
    assert (error.line, error.field) == (4, "url")
    assert "same item as line 2" in error.message


def test_an_empty_file_and_a_duplicated_header_are_errors(tmp_path: Path) -> None:
    assert "the file is empty" in str(check_file(write(tmp_path, "a.csv", "")).errors[0])
    assert "names this column twice" in str(
        check_file(write(tmp_path, "b.csv", "url,Title,title\n")).errors[0]
    )


def test_a_file_that_is_not_utf8_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "latin1.csv"
    path.write_bytes("url,title\nhttps://example.org/1,caf\u00e9\n".encode("latin-1"))
    [error] = check_file(path).errors
    assert "not UTF-8" in str(error)


def test_tsv_files_are_read_with_tabs(tmp_path: Path) -> None:
    path = write(tmp_path, "items.tsv", "url\ttags\nhttps://example.org/1\ta, b;c\n")
    [record] = list(iter_records(path))
    assert record.tags == ["a, b", "c"]


# --- all-or-nothing ----------------------------------------------------------------------------


def test_iterating_yields_the_good_rows_before_the_first_bad_one(tmp_path: Path) -> None:
    path = write(tmp_path, "items.csv", "url\nhttps://example.org/1\nbad\nhttps://example.org/3\n")
    seen: list[str] = []
    with pytest.raises(ImportFileError, match="line 3"):
        for record in iter_records(path):
            seen.append(record.url)
    assert seen == ["https://example.org/1"]


def test_validate_then_iterate_refuses_a_bad_file_before_yielding_anything(tmp_path: Path) -> None:
    path = write(tmp_path, "items.csv", "url\nhttps://example.org/1\nbad\nhttps://example.org/3\nworse\n")
    with pytest.raises(ImportFileErrors) as caught:
        validate_then_iterate(path)
    assert [error.line for error in caught.value.errors] == [3, 5]
    assert "2 error(s)" in str(caught.value)


def test_validate_then_iterate_streams_a_good_file(tmp_path: Path) -> None:
    path = write(tmp_path, "items.csv", "url\nhttps://example.org/1\nhttps://example.org/2\n")
    assert [record.url for record in validate_then_iterate(path)] == [
        "https://example.org/1",
        "https://example.org/2",
    ]


def test_errors_are_capped_and_the_cap_is_reported(tmp_path: Path) -> None:
    path = write(tmp_path, "items.csv", "url\n" + "bad\n" * 10)
    check = check_file(path, max_errors=3)
    assert len(check.errors) == 3
    assert check.truncated


def test_load_records_returns_the_good_records_and_every_error(tmp_path: Path) -> None:
    path = write(tmp_path, "items.jsonl", '{"url": "https://example.org/1"}\n{"title": "no url"}\n')
    records, errors = load_records(path)
    assert [record.url for record in records] == ["https://example.org/1"]
    assert [(error.line, error.field) for error in errors] == [(2, "url")]


# --- JSON and JSONL ----------------------------------------------------------------------------


def test_a_json_array_of_plain_objects_keeps_typed_metadata(tmp_path: Path) -> None:
    rows = [
        {
            "url": "https://example.org/1",
            "title": "t",
            "tags": ["x", " y ", "x"],
            "votes": 3,
            "comments": [{"body": "an answer", "author": "bob", "is_answer": True, "score": 2}],
        }
    ]
    [record] = list(iter_records(write(tmp_path, "items.json", json.dumps(rows))))
    assert record.tags == ["x", "y"]
    assert record.metadata == {"votes": 3}
    [comment] = record.comments
    assert (comment.author, comment.body, comment.is_answer, comment.score) == ("bob", "an answer", True, 2)


def test_json_values_of_the_wrong_type_are_errors(tmp_path: Path) -> None:
    rows = [
        {"url": 5},
        {"url": "https://example.org/2", "title": ["t"]},
        {"url": "https://example.org/3", "tags": [1]},
        {"url": "https://example.org/4", "comments": [{"body": "x", "score": "high"}]},
        "https://example.org/5",
    ]
    errors = check_file(write(tmp_path, "items.json", json.dumps(rows))).errors
    assert [(error.unit, error.line, error.field) for error in errors] == [
        ("item", 1, "url"),
        ("item", 2, "title"),
        ("item", 3, "tags"),
        ("item", 4, "comments[1]"),
        ("item", 5, None),
    ]
    assert str(errors[0]) == "item 1, field 'url', value 5: must be text"


def test_a_github_issue_list_export_is_recognised_and_pull_requests_skipped() -> None:
    check = check_file(SAMPLES / "github3py_betamax_repo_issues_list.json")
    assert check.ok
    assert check.records == 13
    assert [position for position, _ in check.skipped] == [6, 13, 16]
    records = list(iter_records(SAMPLES / "github3py_betamax_repo_issues_list.json"))
    first = records[0]
    assert (first.url, first.source, first.external_id, first.title) == (
        "https://github.com/betamaxpy/betamax/issues/6",
        "github",
        "betamaxpy/betamax#6",
        "Hooks",
    )
    assert first.tags == ["Enhancement"]
    assert first.raw["issue"]["id"] == 19298081


def test_a_stack_exchange_response_is_recognised_with_unescaped_titles() -> None:
    records = list(iter_records(SAMPLES / "gaea_search_advanced_questions.json"))
    assert len(records) == 10
    by_id = {record.external_id: record for record in records}
    question = by_id["35187659"]
    assert question.url == "https://stackoverflow.com/questions/35187659"
    assert question.title == "Rails ... Can't access object?"
    assert question.source == "stackoverflow"
    assert question.body_format == "html"
    assert question.metadata["accepted_answer_id"] == 35187763
    assert question.created_at is not None and question.created_at.tzinfo is UTC


def test_invalid_json_names_the_line(tmp_path: Path) -> None:
    [error] = check_file(
        write(tmp_path, "items.json", '[\n{"url": "https://example.org/1"},\n{"url": \n')
    ).errors
    assert error.line == 4
    assert "invalid JSON" in error.message


def test_a_json_document_of_the_wrong_shape_is_refused(tmp_path: Path) -> None:
    [error] = check_file(write(tmp_path, "items.json", '{"url": "https://example.org/1"}')).errors
    assert "expected a JSON array" in error.message
    api_error = '{"error_id": 502, "error_name": "throttle_violation", "error_message": "too many requests"}'
    [error] = check_file(write(tmp_path, "error.json", api_error)).errors
    assert "too many requests" in error.message


def test_jsonl_reads_one_object_per_line_and_names_bad_lines(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "items.jsonl",
        '{"url": "https://example.org/1"}\n\n{"url": "https://example.org/2"\n{"url": "https://example.org/3"}\n',
    )
    check = check_file(path)
    assert check.records == 2
    assert [(error.line, error.unit) for error in check.errors] == [(3, "line")]


def test_nan_and_infinity_in_jsonl_are_refused_naming_the_line_and_field(tmp_path: Path) -> None:
    """Python's json writes NaN for a float('nan') (a missing value): not JSON, and PostgreSQL refuses it,
    so the file is refused before anything is written, with the way to mend it."""
    path = write(
        tmp_path,
        "items.jsonl",
        '{"url": "https://example.org/1", "score": 1.5}\n'
        '{"url": "https://example.org/2", "score": NaN}\n'
        '{"url": "https://example.org/3", "sizes": {"train": [1, Infinity]}}\n'
        '{"url": "https://example.org/4", "score": -Infinity}\n',
    )
    check = check_file(path)
    assert check.records == 1
    assert [(e.line, e.field) for e in check.errors] == [(2, "score"), (3, "sizes.train[1]"), (4, "score")]
    assert str(check.errors[0]) == (
        "line 2, field 'score': NaN is not valid JSON: write null for a missing number"
    )
    assert "Infinity is not valid JSON" in str(check.errors[1])
    with pytest.raises(ImportFileErrors):
        list(validate_then_iterate(path))


def test_nan_in_a_json_array_is_refused_naming_the_item(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "items.json",
        '[{"url": "https://example.org/1", "score": 2}, {"url": "https://example.org/2", "score": NaN}]',
    )
    [error] = check_file(path).errors
    assert (error.unit, error.line, error.field) == ("item", 2, "score")
    assert "write null" in error.message


def test_a_string_nan_is_text_and_is_kept(tmp_path: Path) -> None:
    path = write(tmp_path, "items.jsonl", '{"url": "https://example.org/1", "score": "NaN", "n": null}\n')
    [record] = iter_records(path)
    assert record.metadata == {"score": "NaN", "n": None}


def test_half_a_surrogate_pair_becomes_a_replacement_character_and_a_whole_pair_is_kept(
    tmp_path: Path,
) -> None:
    """A text cut by UTF-16 units (JavaScript's, Java's) in the middle of an emoji leaves half of its
    pair, escaped; Python decodes it to a lone surrogate that no UTF-8 column can hold."""
    line = '{"url": "https://example.org/1", "title": "cut \\ud83d", "\\udc00k": ["\\ud83d\\ude00 ok"]}'
    path = write(tmp_path, "items.jsonl", line + "\n")
    [record] = iter_records(path)
    assert record.title == "cut \ufffd"
    assert record.metadata == {"\ufffdk": ["\U0001f600 ok"]}
    [from_array] = iter_records(write(tmp_path, "items.json", f"[{line}]"))
    assert from_array.title == "cut \ufffd"


def test_a_json_answer_object_is_not_taken_for_a_question(tmp_path: Path) -> None:
    answer = {"answer_id": 9, "question_id": 1, "body": "x"}
    [error] = check_file(write(tmp_path, "items.jsonl", json.dumps(answer) + "\n")).errors
    assert error.field == "answer_id"


# --- URL lists ---------------------------------------------------------------------------------


def test_a_url_list_ignores_blank_lines_and_comments(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "urls.txt",
        "# keras candidates\n\nhttps://github.com/keras-team/keras/issues/46\n"
        "  https://stackoverflow.com/q/9  \n",
    )
    records = list(iter_records(path))
    assert [(record.url, record.source) for record in records] == [
        ("https://github.com/keras-team/keras/issues/46", "github"),
        ("https://stackoverflow.com/questions/9", "stackoverflow"),
    ]
    assert all(record.title == "" and record.body == "" for record in records)


def test_the_tosem_keras_candidate_list_reads_as_305_distinct_github_issues() -> None:
    check = check_file(SAMPLES / "tosem23_keras-issues.txt")
    assert (check.records, check.errors) == (305, [])
    records = list(iter_records(SAMPLES / "tosem23_keras-issues.txt"))
    assert {record.source for record in records} == {"github"}
    assert records[0].external_id == "keras-team/keras#46"


def test_a_missing_file_is_reported(tmp_path: Path) -> None:
    [error] = check_file(tmp_path / "nope.csv").errors
    assert "cannot read the file: no such file" in str(error)
