"""The row and line writers give the bytes the DataFrame and dict paths gave (no database).

The CSV files were written with pandas' ``to_csv`` and the JSON lines with ``json.dumps`` of
`item_object`; both are kept here as the reference the faster writers must equal, byte for byte.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import zipfile
import zlib
from pathlib import Path

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from apps.export.json_text import ItemJson
from apps.export.package.build import ZIP_LEVEL, write_zip
from apps.export.tables import (
    ANNOTATION_COLUMNS,
    PENDING_VALUE,
    AnnotationRecord,
    DecisionRecord,
    DimensionCells,
    ExportItem,
    FindingRecord,
    Value,
    annotation_rows,
    annotations_frame,
    csv_writer,
    dataset_columns,
    dataset_frame,
    dataset_rows,
    item_object,
    json_line,
    write_csv,
)

ROOT = Path(__file__).resolve().parents[2]
DIMENSIONS = ["type", "symptom", "fix"]
# Texts a CSV or JSON writer can get wrong: separators, quotes, line breaks, formula starts, non-ASCII,
# control characters, empty text.
TRICKY = [
    "",
    "plain",
    'say "hi"',
    "a,b",
    "line\nbreak",
    "cr\rhere",
    "=1+1",
    "-2",
    "'=q",
    "Ünïcødé ✓",
    "\x00\x1f",
]
texts = st.one_of(st.sampled_from(TRICKY), st.text(max_size=12))
values = st.builds(Value, texts, texts, st.one_of(st.just(""), texts))
value_lists = st.lists(st.one_of(values, st.just(PENDING_VALUE)), max_size=3).map(tuple)
findings = st.builds(
    FindingRecord,
    st.integers(1, 3),
    st.dictionaries(st.sampled_from(DIMENSIONS), value_lists, max_size=3),
)
decisions = st.builds(
    DecisionRecord,
    st.one_of(st.none(), st.integers(1, 5)),
    texts,
    texts,
    texts,
    texts,
    st.integers(0, 9),
    st.lists(findings, max_size=3).map(tuple),
)
annotation_records = st.builds(
    AnnotationRecord,
    texts,
    st.one_of(st.none(), st.integers(1, 5)),
    st.sampled_from(["submitted", "open"]),
    texts,
    texts,
    st.lists(findings, max_size=2).map(tuple),
)
items = st.builds(
    ExportItem,
    texts,
    texts,
    texts,
    st.one_of(st.none(), decisions),
    st.lists(annotation_records, max_size=3).map(tuple),
)


def written(rows: list[tuple[object, ...]], header: list[str]) -> str:
    out = io.StringIO()
    writer = csv_writer(out)
    writer.writerow(header)
    writer.writerows(rows)
    return out.getvalue()


@settings(max_examples=150, deadline=None)
@given(st.lists(items, max_size=4), st.booleans())
def test_the_dataset_csv_equals_what_pandas_wrote(chunk: list[ExportItem], raw: bool) -> None:
    before = io.StringIO()
    write_csv(dataset_frame(chunk, DIMENSIONS, raw=raw), before, header=True)
    rows = list(dataset_rows(chunk, DIMENSIONS, raw=raw, escape=True))
    assert written(rows, dataset_columns(DIMENSIONS, raw=raw)) == before.getvalue()


@settings(max_examples=150, deadline=None)
@given(st.lists(items, max_size=4))
def test_the_raw_labels_csv_equals_what_pandas_wrote(chunk: list[ExportItem]) -> None:
    before = io.StringIO()
    write_csv(annotations_frame(chunk, DIMENSIONS), before, header=True)
    rows = list(annotation_rows(chunk, DIMENSIONS, escape=True))
    assert written(rows, list(ANNOTATION_COLUMNS)) == before.getvalue()


@settings(max_examples=150, deadline=None)
@given(items, st.booleans())
def test_a_json_line_equals_the_dumped_item_object(item: ExportItem, raw: bool) -> None:
    assert ItemJson(raw=raw).line(item) == json_line(item_object(item, raw=raw))


def test_cached_json_and_cells_stay_right_for_findings_seen_before_and_after_a_reset() -> None:
    shared = {"type": (Value("fault", "Fault"),), "fix": (Value("code", "Code"), Value("config", "Config"))}
    other = {"type": (Value("howto", "How-to"),)}
    item = ExportItem(
        "https://x/1",
        "t",
        "github",
        DecisionRecord(1, "unanimous", "", "", "", 0, (FindingRecord(1, shared), FindingRecord(2, other))),
    )
    lines = ItemJson(max_cached=1)
    cells = DimensionCells(DIMENSIONS, escape=True, max_cached=1)
    for _ in range(3):
        assert lines.line(item) == json_line(item_object(item))
        assert list(dataset_rows([item], DIMENSIONS, escape=True, cells=cells)) == list(
            dataset_rows([item], DIMENSIONS, escape=True)
        )


def test_a_cells_cache_made_for_other_columns_is_refused() -> None:
    cells = DimensionCells(["type"], escape=True)
    try:
        list(dataset_rows([], DIMENSIONS, escape=True, cells=cells))
    except ValueError as error:
        assert "other dimensions" in str(error)
    else:
        raise AssertionError("expected a ValueError")


def test_zip_entries_are_deflated_at_the_package_level(tmp_path: Path) -> None:
    text = b"".join(b"item %d hangs in allreduce on rank %d\n" % (n, n % 7) for n in range(20_000))
    (tmp_path / "items.jsonl").write_bytes(text)
    write_zip(tmp_path, ["items.jsonl"], tmp_path / "package.zip")
    compressor = zlib.compressobj(ZIP_LEVEL, zlib.DEFLATED, -15)
    expected = compressor.compress(text) + compressor.flush()
    with zipfile.ZipFile(tmp_path / "package.zip") as archive:
        info = archive.getinfo("items.jsonl")
        assert info.compress_type == zipfile.ZIP_DEFLATED
        assert info.compress_size == len(expected)
        assert archive.read("items.jsonl") == text


def test_missing_numbers_are_empty_cells_and_numbers_plain_as_pandas_wrote_them() -> None:
    assert written([("a", None, 1)], ["x", "y", "z"]) == pd.DataFrame(
        {"x": ["a"], "y": pd.array([None], dtype="Int64"), "z": pd.array([1], dtype="Int64")}
    ).to_csv(index=False, lineterminator="\n", na_rep="")


def test_the_csv_and_json_exports_import_neither_pandas_nor_openpyxl() -> None:
    # A fresh worker process would pay about a second for them (docs/performance.md).
    code = (
        "import sys, django; django.setup()\n"
        "import apps.export.services, apps.export.tasks, apps.export.package.build\n"
        "print(sorted({'pandas', 'openpyxl'} & set(sys.modules)))\n"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings"}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT, check=True
    )
    assert done.stdout.strip() == "[]"
