"""A model's labels made elsewhere, as a CSV file (``import_model_labels``). No Django.

Format: a header naming ``item, dimension, label`` and optionally ``finding``, ``sample`` and ``round``
(any order, case-insensitive; any other column is refused). One row per chosen label:

* ``item``: the item's URL; ``dimension``: a dimension key; ``label``: a category key or path of names
  (resolved by the importer, which refuses *pending*: a model has no such value);
* ``finding``: a whole number ≥ 1, default 1; ``sample``: which of the model's k samples, a whole number
  ≥ 0, default 0; ``round``: a round number, or empty: the label applies to the item wherever it is.

Rows with the same (item, round, sample) form one answer; rows of one dimension in it a multi-choice
value. Every problem is reported with its row (as a spreadsheet numbers it), field and value.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from apps.annotation.label_file import LabelFileError, LabelProblem, open_csv
from apps.core.files import CsvFormatError

REQUIRED = ("item", "dimension", "label")
OPTIONAL = ("finding", "sample", "round")
MAX_FINDING = 32767
MAX_SAMPLE = 999

__all__ = ["LabelFileError", "ModelAnswerRows", "parse_model_labels"]


@dataclass
class ModelAnswerRows:
    """The labels of one answer: ``labels`` maps (finding, dimension) to label texts in file order, each
    with its row."""

    item: str
    round: int | None
    sample: int
    labels: dict[tuple[int, str], list[tuple[str, int]]] = field(default_factory=dict)

    @property
    def key(self) -> tuple[str, int | None, int]:
        return (self.item, self.round, self.sample)

    @property
    def first_row(self) -> int:
        return min(row for texts in self.labels.values() for _, row in texts)


def _whole(text: str, row: int, name: str, minimum: int, maximum: int, problems: list[LabelProblem]) -> int:
    try:
        value = int(text.strip(), 10)
    except ValueError:
        value = minimum - 1
    if not minimum <= value <= maximum:
        problems.append(LabelProblem(row, name, text, f"must be a whole number from {minimum} to {maximum}"))
    return value


def parse_model_labels(text: str) -> list[ModelAnswerRows]:
    """Read the CSV (module docstring) into answers in order of first appearance, or raise LabelFileError
    listing every problem."""
    records, header = open_csv(text)
    columns = _columns(header)
    problems: list[LabelProblem] = []
    answers: dict[tuple[str, int | None, int], ModelAnswerRows] = {}
    row = 1
    try:
        for row, (_, cells) in enumerate(records, start=2):
            if not any(cell.strip() for cell in cells):
                continue
            if len(cells) != len(header):
                problems.append(
                    LabelProblem(row, "row", "", f"has {len(cells)} fields, the header {len(header)}")
                )
                continue
            value = {name: cells[k].strip() for name, k in columns.items()}
            before = len(problems)
            for name in REQUIRED:
                if not value[name]:
                    problems.append(LabelProblem(row, name, "", "is empty"))
            finding = _whole(value.get("finding") or "1", row, "finding", 1, MAX_FINDING, problems)
            sample = _whole(value.get("sample") or "0", row, "sample", 0, MAX_SAMPLE, problems)
            round_text = value.get("round", "")
            round_number = _whole(round_text, row, "round", 1, 2**31 - 1, problems) if round_text else None
            if len(problems) > before:
                continue
            key = (value["item"], round_number, sample)
            answer = answers.setdefault(key, ModelAnswerRows(*key))
            texts = answer.labels.setdefault((finding, value["dimension"]), [])
            if all(existing != value["label"] for existing, _ in texts):
                texts.append((value["label"], row))
    except CsvFormatError as exc:
        problems.append(LabelProblem(row + 1, "row", "", f"not readable as CSV: {exc}"))
    if not answers and not problems:
        problems.append(LabelProblem(0, "rows", "", "the file has a header but no labels"))
    if problems:
        raise LabelFileError(problems)
    return list(answers.values())


def _columns(header: Sequence[str]) -> dict[str, int]:
    names = [cell.strip().casefold() for cell in header]
    problems = [
        LabelProblem(1, "header", name, f"unknown column (expected {', '.join((*REQUIRED, *OPTIONAL))})")
        for name in names
        if name not in REQUIRED and name not in OPTIONAL
    ]
    problems += [
        LabelProblem(1, "header", name, "column appears more than once")
        for name in sorted(set(names))
        if names.count(name) > 1
    ]
    missing = [c for c in REQUIRED if c not in names]
    if missing:
        problems.append(
            LabelProblem(
                1,
                "header",
                ",".join(header),
                f"missing column(s) {', '.join(missing)}: the header must name "
                "item, dimension, label[, finding][, sample][, round]",
            )
        )
    if problems:
        raise LabelFileError(problems)
    return {name: names.index(name) for name in (*REQUIRED, *OPTIONAL) if name in names}
