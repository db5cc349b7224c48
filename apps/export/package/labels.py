"""Reading a package's labels: annotations.csv (annotators) and dataset.json (current decisions), checked
against the package's codebook and items."""

from __future__ import annotations

import csv
import json
import zipfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from apps.adjudication.models import Provenance

from .. import tables
from .codebook_check import PackageCodebook, check_value
from .reading import Problems, expect, read_time, text_lines, username_field

Label = tuple[str, int | None, int | None]
"""(dimension key, category id in the package's codebook index or None for pending, original or None)."""
Findings = tuple[tuple[int, tuple[Label, ...]], ...]
"""(finding number, its labels) by finding number."""


@dataclass(slots=True)
class PlannedAnnotation:
    url: str
    annotator: str
    round: int
    status: str
    memo: str
    submitted_at: datetime | None
    row: int
    findings: Findings = ()


def _frozen(findings: dict[int, list[Label]]) -> Findings:
    return tuple((number, tuple(findings[number])) for number in sorted(findings))


def read_annotations(
    archive: zipfile.ZipFile,
    book: PackageCodebook,
    urls: Mapping[str, int],
    rounds: set[int],
    problems: Problems,
    users: set[str],
) -> list[PlannedAnnotation]:
    """The annotations of annotations.csv (one per item, round and annotator), each row checked.

    A package holds hundreds of thousands of rows, and the annotations are kept until they are written:
    repeated texts (item URLs, usernames, dimension keys) and values are stored once, not once a row."""
    name = "annotations.csv"
    reader = csv.reader(text_lines(archive, name))
    header = next(reader, None)
    if header is None or tuple(header) != tables.ANNOTATION_COLUMNS:
        problems.add(f"{name} row 1", f"the header must be {','.join(tables.ANNOTATION_COLUMNS)}")
        return []
    dimension_keys = {d.key for d in book.index.all_dimensions}
    groups: dict[tuple[str, int, str], PlannedAnnotation] = {}
    texts: dict[str, str] = {}
    annotators: dict[str, str] = {}
    labels: dict[Label, Label] = {}
    last_time: tuple[str, datetime | None] = ("", None)
    # The findings of the annotation being read grow in `findings`; the others are kept frozen (tuples
    # take half the memory of dicts of lists). An annotation's rows usually follow each other.
    active: PlannedAnnotation | None = None
    findings: dict[int, list[Label]] = {}
    try:
        for row_number, cells in enumerate(reader, start=2):
            where = f"{name} row {row_number}"
            if len(cells) != len(header):
                problems.add(where, f"{len(cells)} cells but the header has {len(header)}")
                continue
            # Only a cell starting with a quote can carry the CSV formula guard (tables.escape_cell).
            row = dict(
                zip(header, (tables.unescape_cell(c) if c[:1] == "'" else c for c in cells), strict=True)
            )
            if row["item"] not in urls:
                problems.add(f"{where}, item", f"{row['item']!r} is not an item of items.jsonl"[:300])
                continue
            annotator = annotators.get(row["annotator"], "")
            if not annotator:
                annotator = username_field(
                    row["annotator"], f"{where}, annotator", problems, users, required=True
                )
                if annotator:
                    annotators[annotator] = annotator
            try:
                round_number = int(row["round"])
            except ValueError:
                problems.add(f"{where}, round", f"expected a round number, got {row['round']!r}")
                continue
            if round_number not in rounds:
                problems.add(f"{where}, round", f"round {round_number} is not in sampling.json")
                continue
            status = row["status"]
            if status not in ("submitted", "open"):
                problems.add(f"{where}, status", f"expected submitted or open, got {status!r}")
                continue
            submitted_at: datetime | None
            if last_time[1] is not None and row["submitted_at"] == last_time[0]:  # the same annotation
                submitted_at = last_time[1]
            else:
                submitted_at = read_time(
                    row["submitted_at"], f"{where}, submitted_at", problems, required=status == "submitted"
                )
                last_time = (row["submitted_at"], submitted_at)
            if not annotator:
                continue
            url = texts.setdefault(row["item"], row["item"])
            key = (url, round_number, annotator)
            group = groups.get(key)
            if group is None:
                group = groups[key] = PlannedAnnotation(
                    url, annotator, round_number, status, row["memo"], submitted_at, row_number
                )
            elif (group.status, group.memo, group.submitted_at) != (status, row["memo"], submitted_at):
                problems.add(
                    where, f"status, memo or submitted_at differ from row {group.row} of the same annotation"
                )
                continue
            if group is not active:
                if active is not None:
                    active.findings = _frozen(findings)
                active, findings = group, {number: list(values) for number, values in group.findings}
            if not row["finding"]:
                if row["dimension"] or row["label"] or any(findings):
                    problems.add(
                        where,
                        "a row without a finding number must have no label and be the annotation's only row",
                    )
                continue
            if status == "open":
                problems.add(where, "an open assignment has no labels")
                continue
            try:
                number = int(row["finding"])
                if number < 1:
                    raise ValueError
            except ValueError:
                problems.add(f"{where}, finding", f"expected a whole number ≥ 1, got {row['finding']!r}")
                continue
            values = findings.setdefault(number, [])
            if not row["dimension"]:
                continue
            dimension = texts.setdefault(row["dimension"], row["dimension"])
            if dimension not in dimension_keys:
                problems.add(f"{where}, dimension", f"no dimension {dimension!r} in codebook.json")
                continue
            if row["label"] == tables.PENDING:
                category, original = None, None
            else:
                category = check_value(
                    book, dimension, row["label"], row["path"] or None, f"{where}, label", problems
                )
                original = (
                    check_value(book, dimension, row["original"], None, f"{where}, original", problems)
                    if row["original"]
                    else None
                )
                if category is None:
                    continue
            if any(d == dimension and c == category for d, c, _ in values):
                problems.add(where, "the same label twice in one finding")
                continue
            if any(d == dimension and (c is None) != (category is None) for d, c, _ in values):
                problems.add(
                    where, f"dimension {dimension!r} of finding {number} is both pending and a category"
                )
                continue
            value = (dimension, category, original)
            values.append(labels.setdefault(value, value))
    except csv.Error as exc:
        problems.add(name, f"not readable as CSV: {exc}")
    if active is not None:
        active.findings = _frozen(findings)
    return list(groups.values())


@dataclass(slots=True)
class PlannedDecision:
    url: str
    round: int | None
    provenance: str
    decided_by: str
    decided_at: datetime
    rationale: str
    codebook_version: int
    findings: list[list[tuple[str, int, int | None]]]


def dataset_objects(archive: zipfile.ZipFile, problems: Problems) -> Iterator[tuple[int, Any]]:
    """The objects of dataset.json with their line numbers (one per line, as `build` writes them; any
    other valid JSON array is read whole)."""
    try:
        for number, line in enumerate(text_lines(archive, "dataset.json"), start=1):
            text = line.strip().rstrip(",")
            if text in ("[", "]", "[]", ""):
                continue
            yield number, json.loads(text)
    except ValueError:
        try:
            data = json.loads(archive.read("dataset.json").decode("utf-8"))
        except ValueError as exc:
            problems.add("dataset.json", f"not valid JSON ({exc})")
            return
        if not isinstance(data, list):
            problems.add("dataset.json", "expected a JSON array of items")
            return
        yield from ((0, obj) for obj in data)


def read_decisions(
    archive: zipfile.ZipFile,
    book: PackageCodebook,
    urls: Mapping[str, int],
    rounds: set[int],
    problems: Problems,
    users: set[str],
) -> list[PlannedDecision]:
    decisions: list[PlannedDecision] = []
    seen: dict[str, int] = {}
    dimension_keys = {d.key for d in book.index.all_dimensions}
    texts: dict[str, str] = {}  # repeated texts (keys, usernames, provenances) held once
    labels_seen: dict[tuple[str, int, int | None], tuple[str, int, int | None]] = {}
    for number, obj in dataset_objects(archive, problems):
        where = f"dataset.json line {number}" if number else "dataset.json"
        if not expect(obj, dict, where, problems):
            continue
        before = len(problems.items)
        url = obj.get("url")
        if url not in urls:
            problems.add(f"{where}.url", f"{url!r} is not an item of items.jsonl"[:300])
            continue
        if url in seen:
            problems.add(f"{where}.url", f"the item is also on line {seen[url]}")
            continue
        seen[url] = number
        if obj.get("provenance") not in Provenance.values:
            problems.add(
                f"{where}.provenance",
                f"expected one of {', '.join(Provenance.values)}, got {obj.get('provenance')!r}",
            )
        round_number = obj.get("round")
        if round_number is not None and round_number not in rounds:
            problems.add(f"{where}.round", f"round {round_number!r} is not in sampling.json")
        decided_by = username_field(obj.get("decided_by"), f"{where}.decided_by", problems, users)
        decided_at = read_time(obj.get("decided_at"), f"{where}.decided_at", problems)
        version = obj.get("codebook_version")
        if not isinstance(version, int) or isinstance(version, bool) or version < 0:
            problems.add(f"{where}.codebook_version", f"expected a whole number ≥ 0, got {version!r}")
        findings: list[list[tuple[str, int, int | None]]] = []
        raw_findings = obj.get("findings")
        if not isinstance(raw_findings, list):
            problems.add(f"{where}.findings", "expected a list")
            raw_findings = []
        for position, finding in enumerate(raw_findings, start=1):
            at = f"{where}.findings[{position - 1}]"
            if not expect(finding, dict, at, problems):
                continue
            if finding.get("finding") != position:
                problems.add(f"{at}.finding", f"expected {position} (findings are numbered 1, 2, ...)")
            labels = finding.get("labels")
            if not isinstance(labels, dict):
                problems.add(f"{at}.labels", "expected an object")
                continue
            values: list[tuple[str, int, int | None]] = []
            for dimension, chosen in labels.items():
                if dimension not in dimension_keys:
                    problems.add(f"{at}.labels", f"no dimension {dimension!r} in codebook.json")
                    continue
                if not isinstance(chosen, list) or not all(isinstance(v, dict) for v in chosen):
                    problems.add(
                        f"{at}.labels.{dimension}",
                        "expected a list of {key, path} (a decision is never pending)",
                    )
                    continue
                keys: set[str] = set()
                for value in chosen:
                    key = value.get("key")
                    if not isinstance(key, str) or key in keys:
                        problems.add(f"{at}.labels.{dimension}", f"missing or repeated key {key!r}")
                        continue
                    keys.add(key)
                    category = check_value(
                        book, dimension, key, value.get("path"), f"{at}.labels.{dimension}", problems
                    )
                    original = None
                    if value.get("original"):
                        original = check_value(
                            book,
                            dimension,
                            str(value["original"]),
                            None,
                            f"{at}.labels.{dimension}",
                            problems,
                        )
                    if category is not None:
                        label = (texts.setdefault(dimension, dimension), category, original)
                        values.append(labels_seen.setdefault(label, label))
            findings.append(values)
        if len(problems.items) > before or decided_at is None:
            continue
        decisions.append(
            PlannedDecision(
                url=url,
                round=round_number,
                provenance=texts.setdefault(obj["provenance"], obj["provenance"]),
                decided_by=texts.setdefault(decided_by, decided_by),
                decided_at=decided_at,
                rationale=obj.get("rationale") or "",
                codebook_version=version,
                findings=findings,
            )
        )
    return decisions
