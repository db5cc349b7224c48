"""The shared file reader (`apps.core.files`): stray quotes, encodings, directories. No database."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from apps.core.files import CsvFormatError, FileReadError, check_utf8, csv_records, open_text, read_text

STRAY = (
    "url,title,body\n"
    "https://github.com/q/r/issues/1,ok,b\n"
    'https://github.com/q/r/issues/2,"He said ""hi,b\n'
    "https://github.com/q/r/issues/3,ok3,b\n"
    "https://github.com/q/r/issues/4,ok4,b\n"
)


def records(text: str) -> list[tuple[int, list[str]]]:
    return list(csv_records(io.StringIO(text, newline="")))


def test_a_quote_still_open_at_the_end_of_the_file_is_refused_with_the_line_it_opened_on() -> None:
    with pytest.raises(CsvFormatError) as error:
        records(STRAY)

    assert error.value.line == 3
    assert "still open at the end of the file" in str(error.value)


def test_a_multi_line_quoted_body_as_wide_as_the_header_is_read_with_its_line_ends() -> None:
    text = 'url,title,body\nu1,one,"first line\nsecond line\n\nfourth"\nu2,two,b\n'

    assert records(text) == [
        (1, ["url", "title", "body"]),
        (2, ["u1", "one", "first line\nsecond line\n\nfourth"]),
        (6, ["u2", "two", "b"]),
    ]


def test_a_quote_that_closes_lines_later_in_a_record_of_another_width_is_refused() -> None:
    text = 'url,title,body\nu1,"He said ""hi,b\nu2,ok2",b,extra\nu3,ok3,b\n'

    with pytest.raises(CsvFormatError) as error:
        records(text)

    assert error.value.line == 2
    assert "runs to line 3" in str(error.value) and "4 fields where the header has 3" in str(error.value)


def test_text_after_a_closing_quote_is_refused_with_its_line() -> None:
    with pytest.raises(CsvFormatError) as error:
        records('url,title\nu1,ok\nu2,"x"y\n')

    assert error.value.line == 3
    assert "text after its closing quote" in str(error.value)


def test_a_latin1_file_names_the_byte_and_its_offset(tmp_path: Path) -> None:
    path = tmp_path / "items.csv"
    path.write_bytes("url,title\nhttps://example.org/a,café\n".encode("latin-1"))

    with pytest.raises(FileReadError) as error:
        check_utf8(path)

    assert error.value.offset == len(b"url,title\nhttps://example.org/a,caf")
    assert "byte 0xe9 at byte offset 35" in str(error.value) and "latin-1" in str(error.value)
    assert "\n" not in str(error.value)


def test_a_bad_byte_past_the_first_chunk_is_placed_by_its_offset_in_the_file(tmp_path: Path) -> None:
    path = tmp_path / "big.csv"
    prefix = b"x" * ((1 << 20) - 1) + "é".encode()  # é straddles the 1 MiB chunk boundary
    path.write_bytes(prefix + b"\xe9 and more")

    with pytest.raises(FileReadError) as error:
        check_utf8(path)

    assert error.value.offset == len(prefix)


def test_a_utf16_file_is_named_as_such(tmp_path: Path) -> None:
    path = tmp_path / "labels.csv"
    path.write_bytes("item,annotator\n".encode("utf-16"))
    bare = tmp_path / "bare.csv"
    bare.write_bytes("item,annotator\n".encode("utf-16-le"))

    with pytest.raises(
        FileReadError, match=r"is UTF-16 \(little-endian\) text \(byte-order mark at byte 0\)"
    ):
        read_text(path)
    with pytest.raises(FileReadError, match=r"looks like UTF-16 text \(a NUL byte at byte 1\)"):
        check_utf8(bare)


def test_utf8_with_a_byte_order_mark_is_accepted_and_the_mark_dropped(tmp_path: Path) -> None:
    path = tmp_path / "items.csv"
    path.write_bytes(b"\xef\xbb\xbfurl\nhttps://example.org/a\n")

    assert check_utf8(path) == path
    assert read_text(path) == "url\nhttps://example.org/a\n"
    with open_text(path) as handle:
        assert handle.read() == "url\nhttps://example.org/a\n"


def test_a_directory_is_refused_where_a_file_is_expected(tmp_path: Path) -> None:
    with pytest.raises(FileReadError, match="is a directory, not a file"):
        read_text(tmp_path)
    with pytest.raises(FileReadError, match="no such file"):
        check_utf8(tmp_path / "missing.csv")


def test_a_bad_byte_met_while_streaming_is_reported_with_its_offset(tmp_path: Path) -> None:
    path = tmp_path / "items.jsonl"
    path.write_bytes(b'{"url": "https://example.org/a"}\n' * 3000 + b'{"title": "caf\xe9"}\n')

    with pytest.raises(FileReadError) as error, open_text(path) as handle:
        for _ in handle:
            pass

    assert error.value.offset == 33 * 3000 + len(b'{"title": "caf')


def test_rows_swallowed_between_two_stray_quotes_in_the_last_column_are_refused_with_the_line_it_opened() -> (
    None
):
    text = 'url,title,body\nu1,ok,b\nu2,ok2,"He said hi\nu3,ok3,b\nu4,ok4,she said bye"\nu5,ok5,b\n'

    with pytest.raises(CsvFormatError) as error:
        records(text)

    assert error.value.line == 3
    assert "runs to line 5 and takes in lines 4-5, which read as rows of their own" in str(error.value)


def test_one_row_swallowed_by_a_quote_that_closes_mid_row_is_refused() -> None:
    text = 'url,title,body\nu1,"He said hi,b\nu2,ok2",b\nu3,ok3,b\n'

    with pytest.raises(CsvFormatError) as error:
        records(text)

    assert error.value.line == 2
    assert "takes in line 3, which read as rows" in str(error.value)


def test_blank_lines_between_swallowed_rows_do_not_hide_them() -> None:
    text = 'url,title,body\nu1,ok,"He said hi\n\nu2,ok2,b\n\nu3,ok3,bye"\n'

    with pytest.raises(CsvFormatError) as error:
        records(text)

    assert error.value.line == 2


def test_rows_shorter_than_the_header_are_caught_when_the_caller_says_such_rows_are_allowed() -> None:
    text = 'item,annotator,label,memo\nu1,a,x,"He said hi\nu1,b,x\nu2,a,x,bye"\n'

    assert len(records(text)) == 2  # by the header's width alone, "u1,b,x" is not a row
    with pytest.raises(CsvFormatError) as error:
        list(csv_records(io.StringIO(text, newline=""), row_width=lambda header: 3))

    assert error.value.line == 2


def test_a_github_issue_body_with_code_and_commas_is_read_whole_with_its_line_ends() -> None:
    body = (
        "When I call `parse(a, b)` on a list, it crashes, every time.\n"
        "\n"
        "Steps to reproduce:\n"
        "```python\n"
        "from lib import parse\n"
        "parse([1, 2, 3], strict=True, encoding='utf-8')\n"
        "```\n"
        "\n"
        "Expected: a, b, c. Got:\n"
        "ValueError: bad input, expected str, got list"
    )
    quoted = body.replace('"', '""')
    text = f'url,title,body\nu1,Crash in parse,"{quoted}"\nu2,two,"short, but, with commas"\n'

    assert records(text) == [
        (1, ["url", "title", "body"]),
        (2, ["u1", "Crash in parse", body]),
        (12, ["u2", "two", "short, but, with commas"]),
    ]
