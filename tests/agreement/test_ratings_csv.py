"""The ratings CSV of docs/design.md §5: item,annotator,label, single-label or multi-choice."""

import io
from pathlib import Path

import pytest

from apps.agreement.metrics import MultiRatingTable, RatingTable, agreement_report
from apps.agreement.ratings_csv import RatingsFileError, parse_ratings

ISSUE = "https://github.com/o/r/issues/"


def test_single_label_ratings_become_a_table_with_missing_ratings() -> None:
    text = f"item,annotator,label\n{ISSUE}1,alice,bug\n{ISSUE}1,bob,bug\n{ISSUE}2,bob,question\n"

    table = parse_ratings(text, multi=False)

    assert isinstance(table, RatingTable)
    assert table.items == (f"{ISSUE}1", f"{ISSUE}2")
    assert table.annotators == ("alice", "bob")
    assert table.categories == ("bug", "question")
    assert table.codes.tolist() == [[0, 0], [-1, 1]]


def test_columns_may_come_in_any_order_with_any_case_and_spaces() -> None:
    text = " Label ,ITEM,annotator\nbug, u1 ,alice\nbug,u1,bob\n"

    table = parse_ratings(text, multi=False)

    assert table.items == ("u1",)
    assert table.codes.tolist() == [[0, 0]]


def test_declared_categories_keep_their_order_and_unused_ones() -> None:
    table = parse_ratings("item,annotator,label\nu1,a,y\nu1,b,y\n", multi=False, categories=["x", "y", "z"])

    assert table.categories == ("x", "y", "z")
    assert agreement_report(table)["per_category"].keys() == {"x", "y", "z"}


def test_multi_choice_rows_form_a_set_and_an_empty_label_is_no_category() -> None:
    text = "item,annotator,label\nu1,alice,bug\nu1,alice,crash\nu1,bob,bug\nu2,alice,\nu2,bob,crash\n"

    table = parse_ratings(text, multi=True)

    assert isinstance(table, MultiRatingTable)
    assert table.categories == ("bug", "crash")
    assert table.rated.tolist() == [[True, True], [True, True]]
    assert table.present.tolist() == [[[True, True], [True, False]], [[False, False], [False, True]]]


def test_pending_is_parsed_as_an_ordinary_label() -> None:
    table = parse_ratings("item,annotator,label\nu1,a,pending\nu1,b,bug\n", multi=False)

    assert table.categories == ("bug", "pending")


def test_a_file_object_a_path_and_a_byte_order_mark_are_accepted(tmp_path: Path) -> None:
    text = "\ufeffitem,annotator,label\r\nu1,a,x\r\nu1,b,y\r\n"
    path = tmp_path / "ratings.csv"
    path.write_text(text, encoding="utf-8")

    from_text = parse_ratings(text, multi=False)
    from_file = parse_ratings(io.StringIO(text), multi=False)
    from_path = parse_ratings(path, multi=False)

    assert from_text.codes.tolist() == from_file.codes.tolist() == from_path.codes.tolist() == [[0, 1]]


def test_blank_lines_are_skipped_and_line_numbers_stay_physical() -> None:
    text = "item,annotator,label\n\nu1,a,x\n\nu1,a,y\n"

    with pytest.raises(RatingsFileError) as error:
        parse_ratings(text, multi=False)

    assert error.value.line == 5
    assert "first on line 3" in str(error.value)


def test_a_quoted_label_with_a_comma_and_a_newline_is_one_field() -> None:
    text = 'item,annotator,label\nu1,a,"x, y"\nu1,b,"x, y"\n"u2",a,"multi\nline"\nu3,b,x\n'

    with pytest.raises(RatingsFileError) as error:
        parse_ratings(text + "u3,b,z\n", multi=False)
    table = parse_ratings(text, multi=False)

    assert table.categories == ("multi\nline", "x", "x, y")
    assert error.value.line == 7  # the quoted newline makes u2's row two physical lines


# ---------------------------------------------------------------------------------- errors
@pytest.mark.parametrize("text", ["", "\n\n", "\ufeff"])
def test_an_empty_file_is_an_error(text: str) -> None:
    with pytest.raises(RatingsFileError, match="empty file"):
        parse_ratings(text, multi=False)


def test_a_header_without_rows_is_an_error() -> None:
    with pytest.raises(RatingsFileError, match="no ratings"):
        parse_ratings("item,annotator,label\n", multi=False)


def test_a_missing_column_is_named() -> None:
    with pytest.raises(RatingsFileError) as error:
        parse_ratings("item,label\nu1,x\n", multi=False)

    assert error.value.line == 1
    assert error.value.field == "annotator"
    assert "missing column annotator" in str(error.value)


def test_an_extra_column_is_refused_with_its_name() -> None:
    with pytest.raises(RatingsFileError) as error:
        parse_ratings("item,annotator,dimension,label\nu1,a,type,x\n", multi=False)

    assert error.value.value == "dimension"
    assert "unexpected column" in str(error.value)


def test_a_column_named_twice_is_an_error() -> None:
    with pytest.raises(RatingsFileError, match="named twice"):
        parse_ratings("item,annotator,label,Label\nu1,a,x,x\n", multi=False)


def test_a_row_with_the_wrong_number_of_fields_names_its_line() -> None:
    with pytest.raises(RatingsFileError) as error:
        parse_ratings("item,annotator,label\nu1,a,x\nu1,b\n", multi=False)

    assert error.value.line == 3
    assert "expected 3 fields" in str(error.value)


@pytest.mark.parametrize(("row", "field"), [(" ,a,x", "item"), ("u1,  ,x", "annotator")])
def test_an_empty_item_or_annotator_is_an_error(row: str, field: str) -> None:
    with pytest.raises(RatingsFileError) as error:
        parse_ratings(f"item,annotator,label\nu0,a,x\n{row}\n", multi=False)

    assert (error.value.line, error.value.field) == (3, field)


def test_an_empty_label_is_an_error_in_single_label_mode() -> None:
    with pytest.raises(RatingsFileError) as error:
        parse_ratings("item,annotator,label\nu1,a,x\nu1,b,\n", multi=False)

    assert (error.value.line, error.value.field, error.value.value) == (3, "label", "")
    assert "--multi" in str(error.value)


def test_a_second_rating_of_the_same_item_by_the_same_annotator_is_an_error() -> None:
    with pytest.raises(RatingsFileError) as error:
        parse_ratings("item,annotator,label\nu1,alice,x\nu1,bob,x\nu1,alice,y\n", multi=False)

    assert (error.value.line, error.value.field, error.value.value) == (4, "annotator", "alice")
    assert "first on line 2" in str(error.value)


def test_a_single_annotator_is_an_error() -> None:
    with pytest.raises(RatingsFileError) as error:
        parse_ratings("item,annotator,label\nu1,alice,x\nu2,alice,y\n", multi=False)

    assert error.value.value == "alice"
    assert "only one annotator" in str(error.value)


def test_an_undeclared_label_is_an_error_listing_the_declared_ones() -> None:
    with pytest.raises(RatingsFileError) as error:
        parse_ratings("item,annotator,label\nu1,a,x\nu1,b,bogus\n", multi=False, categories=["x", "y"])

    assert (error.value.line, error.value.field, error.value.value) == (3, "label", "bogus")
    assert "declared: x, y" in str(error.value)


def test_declared_categories_must_be_distinct_and_non_empty() -> None:
    with pytest.raises(RatingsFileError, match="declared twice"):
        parse_ratings("item,annotator,label\nu1,a,x\nu1,b,x\n", multi=False, categories=["x", "x"])
    with pytest.raises(RatingsFileError, match="declared category is empty"):
        parse_ratings("item,annotator,label\nu1,a,x\nu1,b,x\n", multi=False, categories=["x", " "])


def test_a_repeated_label_in_multi_mode_is_an_error() -> None:
    with pytest.raises(RatingsFileError) as error:
        parse_ratings("item,annotator,label\nu1,a,x\nu1,a,x\nu1,b,x\n", multi=True)

    assert (error.value.line, error.value.value) == (3, "x")


@pytest.mark.parametrize("rows", ["u1,a,\nu1,a,x", "u1,a,x\nu1,a,"])
def test_an_empty_choice_mixed_with_labels_is_an_error(rows: str) -> None:
    with pytest.raises(RatingsFileError, match="only row of its item and annotator") as error:
        parse_ratings(f"item,annotator,label\n{rows}\nu1,b,x\n", multi=True)

    assert error.value.line == 3


def test_malformed_csv_names_the_line() -> None:
    with pytest.raises(RatingsFileError) as error:
        parse_ratings('item,annotator,label\nu1,a,x\nu1,b,"x"y\n', multi=False)

    assert error.value.line == 3
    assert "text after its closing quote" in str(error.value)


def test_an_unreadable_path_is_a_ratings_file_error(tmp_path: Path) -> None:
    with pytest.raises(RatingsFileError, match="no such file"):
        parse_ratings(tmp_path / "missing.csv", multi=False)
    latin1 = tmp_path / "latin1.csv"
    latin1.write_bytes("item,annotator,label\nu1,a,caf\xe9\n".encode("latin-1"))
    with pytest.raises(RatingsFileError, match="not UTF-8"):
        parse_ratings(latin1, multi=False)


def test_the_error_message_starts_with_line_field_and_value() -> None:
    error = RatingsFileError("not a declared category", line=4, field="label", value="bogus")

    assert str(error) == "line 4, field 'label', value 'bogus': not a declared category"
