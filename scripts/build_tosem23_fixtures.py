"""Regenerate fixtures/tosem23/ (the demo study's real data) from the TOSEM 2023 replication data.

Usage (from the repository root)::

    .venv/bin/python scripts/build_tosem23_fixtures.py \
        [--source ../shared/data/tosem23] [--output fixtures/tosem23]

Writes ``codebook.json``, ``items.csv`` (the posts of reliability rounds 1 and 2), ``labels_round{1,2}.csv``
(both annotators), ``decisions_round{1,2}.csv`` (the rounds' Final sheets), ``final_items.csv`` and
``final_decisions.csv`` (all 1,131 rows of the final taxonomy) and ``import_issues.csv`` (every value
of the five rounds and the final workbook that was repaired or left out, by file, sheet, row and
column). The output is deterministic: rerunning gives byte-identical files. The rules are in
docs/tosem23-import.md. The script refuses to write anything when a check on the data fails (the
published counts, the evidence for retired names, the list of rare fix patterns).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import re
import sys
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from apps.annotation import tosem_workbook as tw  # noqa: E402

DEFAULT_SOURCE = REPO_ROOT.parent / "shared" / "data" / "tosem23"
DEFAULT_OUTPUT = REPO_ROOT / "fixtures" / "tosem23"
ROUNDS = (1, 2, 3, 4, 5)
DEMO_ROUNDS = (1, 2)

# A tree is a list of (name, children) where children are more trees or leaf names.
Tree = Sequence[tuple[str, Sequence[Any]]]

# The final taxonomy of fault symptoms (final_categories.xlsx, sheet "faults"), each level in the order
# of the paper's counts, "others" last. Leaf names as the data writes them.
SYMPTOM_TREE: Tree = [
    ("Package Build & Import", ["installation & build failure", "import error"]),
    ("Communication Setup", ["setup failure", "hang and timeout", "unexpected protocol"]),
    (
        "Data and Model Preparation",
        [
            "model loading failure",
            "data loading failure",
            "communication error",
            "hang and timeout",
            "device error",
            "iteration failure",
            "attribute not found",
            "data partition error",
            "download error",
            "low efficiency",
            "compile model error (other)",
            "logging error",
            "path error",
            "scope / context issue",
        ],
    ),
    (
        "Training & Evaluation",
        [
            (
                "Program Failure",
                [
                    "communication error",
                    "device error",
                    "graph execution error",
                    "tensor mismatch",
                    "out of memory",
                    "checkpoint unfunctioning",
                    "segmentation fault",
                    "attribute not found",
                    "memory issue",
                    "path error",
                    "not implemented error",
                    "others",
                ],
            ),
            (
                "Unexpected Performance",
                [
                    "hang",
                    "low efficiency",
                    "unexpected parallelization",
                    "unexpected intermediate result",
                    "non-convergence",
                    "unexpected device",
                    "unexpected parallelization & device",
                    "others",
                ],
            ),
        ],
    ),
]

# The how-to topics of the final taxonomy (sheet "how-to questions"), by count.
HOWTO_TREE: Tree = [
    (
        "Communication",
        ["algorithm", "aggregation", "configuration", "backend", "communitive operator", "synchronization"],
    ),
    ("Parallelization", ["data parallelism", "model parallelism", "other parallelisms"]),
    (
        "Device Usage",
        ["configuration", "support", "memory & utilization", "monitoring", "device information"],
    ),
    ("Performance", ["efficiency & accuracy", "performance profile"]),
    ("API Usage", []),
    ("Function Support", ["keras multi gpu", "elastic", "elastic and fault tolerance", "horovod docker tf1"]),
    ("Model", []),
    ("Evaluation", []),
    ("Horovod Build", []),
    ("Framework Source Code", []),
    ("Environment Configuration", []),
]

# Fix patterns named at least RECURRING_THRESHOLD times in the final taxonomy, by count (checked).
RECURRING_THRESHOLD = 4
RECURRING_FIX_PATTERNS = (
    "fix dependency version",
    "fix communication configuration",
    "fix distributed API usage",
    "fix framework version",
    "fix device assignment",
    "fix network setting",
    "fix model construction",
    "fix batch size/data partition",
    "fix behavior logic",
    "fix consistency between devices",
    "save single-device model/weights only",
    "fix dependency path",
    "fix memory/core setting",
    "fix build/install configuration",
    "install missing dependency",
    "change hardware",
    "fix dependency installation",
    "fix scope assignment",
    "fix command line",
    "fix data type",
    "fix dataset API usage",
    "fix learning rate",
    "fix dataset",
    "fix framework installation",
    "fix loss function",
    "fix optimizer",
    "fix tensor API usage",
)

# Symptom counts of the 637 fault rows published with the study (README of the replication data).
PUBLISHED_STAGE_COUNTS = {
    "Package Build & Import": 82,
    "Communication Setup": 133,
    "Data and Model Preparation": 57,
    "Training & Evaluation": 365,
}
PUBLISHED_INNER_COUNTS = {"Program Failure": 215, "Unexpected Performance": 150}
PUBLISHED_FAULT_ROWS = 637
PUBLISHED_HOWTO_ROWS = 494
PUBLISHED_POSTS = 1070

GITHUB_FRAMEWORKS = {
    "horovod/horovod": "horovod",
    "keras-team/keras": "keras",
    "pytorch/pytorch": "pytorch",
    "tensorflow/tensorflow": "tensorflow",
}

ITEM_COLUMNS = ("url", "title", "body", "source", "created_at", "tags", "framework", "platform")
LABEL_COLUMNS = ("item", "annotator", "dimension", "label", "finding", "round", "memo")
ISSUE_COLUMNS = ("file", "sheet", "row", "column", "item", "value", "kind", "message")
OTHER_MEMO_PREFIX = "fix pattern as written: "


class DataCheckError(RuntimeError):
    """The replication data does not match what the fixtures promise; nothing is written."""


# --- Codebook --------------------------------------------------------------------------------------


def slug(name: str) -> str:
    """``"Training & Evaluation"`` -> ``"training-evaluation"``."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def _category(key: str, name: str, definition: str = "", children: Sequence[Any] = ()) -> dict[str, Any]:
    category: dict[str, Any] = {"key": key, "name": name}
    if definition:
        category["definition"] = definition
    if children:
        category["children"] = list(children)
    return category


def tree_categories(tree: Tree) -> list[dict[str, Any]]:
    """Categories of a tree; a name met under several parents gets its parent's key as a prefix."""
    counts: Counter[str] = Counter()

    def count(nodes: Sequence[Any]) -> None:
        for node in nodes:
            name, children = (node, ()) if isinstance(node, str) else node
            counts[tw.normalise_label(name)] += 1
            count(children)

    count(tree)

    def build(nodes: Sequence[Any], parent: str | None) -> list[dict[str, Any]]:
        built = []
        for node in nodes:
            name, children = (node, ()) if isinstance(node, str) else node
            key = slug(name)
            if counts[tw.normalise_label(name)] > 1:
                assert parent is not None, f"top-level name {name!r} is repeated"
                key = f"{parent}-{key}"
            built.append(_category(key, name, children=build(children, key)))
        return built

    return build(tree, None)


def build_codebook() -> dict[str, Any]:
    """The codebook of docs/design.md §5 for the TOSEM 2023 study."""
    fault = {"issue_type": "fault"}
    fix_categories = [_category(slug(name), name) for name in RECURRING_FIX_PATTERNS]
    fix_categories.append(
        _category(
            "other",
            tw.OTHER_FIX_PATTERN,
            f"A fix pattern named fewer than {RECURRING_THRESHOLD} times in the final taxonomy; "
            "its wording is kept in the memo.",
        )
    )
    return {
        "name": "TOSEM 2023 distributed training issues",
        "dimensions": [
            {
                "key": tw.ISSUE_TYPE,
                "name": "Issue type",
                "multiple": False,
                "description": "One finding is one fault or one how-to question; a post can hold several.",
                "categories": [
                    _category("fault", "fault", "The post reports a fault met in distributed training."),
                    _category(
                        "howto",
                        "how-to question",
                        "The post asks how to do something in distributed training.",
                    ),
                ],
            },
            {
                "key": tw.DISTRIBUTED_SPECIFIC,
                "name": "Distributed-specific",
                "multiple": False,
                "applies_when": fault,
                "categories": [
                    _category(
                        "yes", "yes", "The fault is specific to distributed training (1 in the study)."
                    ),
                    _category(
                        "no", "no", "The fault is not specific to distributed training (0 in the study)."
                    ),
                ],
            },
            {
                "key": tw.SYMPTOM,
                "name": "Fault symptom",
                "multiple": False,
                "applies_when": fault,
                "description": "Stage > inner category (Training & Evaluation only) > leaf symptom.",
                "categories": tree_categories(SYMPTOM_TREE),
            },
            {
                "key": tw.FIX_PATTERN,
                "name": "Fix pattern",
                "multiple": True,
                "applies_when": fault,
                "description": "How the fault was fixed; the study joined two patterns with ' & '.",
                "categories": fix_categories,
            },
            {
                "key": tw.HOWTO_TOPIC,
                "name": "How-to topic",
                "multiple": False,
                "applies_when": {"issue_type": "howto"},
                "description": "Topic > sub-topic of a how-to question.",
                "categories": tree_categories(HOWTO_TREE),
            },
        ],
    }


def category_paths(codebook: Mapping[str, Any], dimension: str) -> dict[str, tuple[str, ...]]:
    """Category key -> path of names from the top, for one dimension."""
    paths: dict[str, tuple[str, ...]] = {}

    def visit(nodes: Iterable[Mapping[str, Any]], above: tuple[str, ...]) -> None:
        for node in nodes:
            path = (*above, str(node["name"]))
            paths[str(node["key"])] = path
            visit(node.get("children", []), path)

    for raw in codebook["dimensions"]:
        if raw["key"] == dimension:
            visit(raw["categories"], ())
    return paths


# --- Checks ----------------------------------------------------------------------------------------


def _spelling(dimension: str, text: str) -> str:
    variants = tw.TOSEM_SPELLING_VARIANTS.get(dimension, {})
    seen: set[str] = set()
    while text in variants and text not in seen:
        seen.add(text)
        text = variants[text]
    return text


def check_fix_patterns(final: tw.WorkbookResult) -> None:
    """The recurring patterns of the codebook and the rare ones of the module are exactly those of the
    final workbook, counted after spelling variants and splitting compounds."""
    cells = {(row.item, row.finding): row.raw for row in final.rows if row.dimension == tw.FIX_PATTERN}
    cells.update(
        {(issue.item, issue.row): issue.value for issue in final.errors if issue.column == "G"}
    )  # an unresolved cell still counts
    counts: Counter[str] = Counter()
    for raw in cells.values():
        for part in re.split(r" & | / ", _spelling(tw.FIX_PATTERN, tw.normalise_label(raw))):
            counts[_spelling(tw.FIX_PATTERN, part.strip())] += 1
    recurring = {name for name, n in counts.items() if n >= RECURRING_THRESHOLD}
    expected = {tw.normalise_label(name) for name in RECURRING_FIX_PATTERNS}
    if recurring != expected:
        raise DataCheckError(f"recurring fix patterns differ: {sorted(recurring ^ expected)}")
    rare = set(counts) - recurring
    if rare != tw.TOSEM_RARE_FIX_PATTERNS:
        raise DataCheckError(f"rare fix patterns differ: {sorted(rare ^ tw.TOSEM_RARE_FIX_PATTERNS)}")


def check_retired_names(rounds: Mapping[int, tw.WorkbookResult], final: tw.WorkbookResult) -> None:
    """Every post a round labelled with a retired symptom name ends, in the final taxonomy, in the
    category the name is mapped to."""
    final_names: dict[str, set[str]] = defaultdict(set)
    for row in final.rows:
        if row.dimension == tw.SYMPTOM:
            final_names[row.item].add(tw.normalise_label(row.raw))
    retired = tw.TOSEM_RETIRED_NAMES[tw.SYMPTOM]
    final_spelled = {item: {_spelling(tw.SYMPTOM, n) for n in names} for item, names in final_names.items()}
    for number, result in rounds.items():
        for row in result.rows:
            if row.dimension != tw.SYMPTOM:
                continue
            name = _spelling(tw.SYMPTOM, tw.normalise_label(row.raw))
            if name in retired and retired[name] not in final_spelled.get(row.item, set()):
                raise DataCheckError(
                    f"round {number}: {row.item} labelled {name!r}, but its final symptoms are "
                    f"{sorted(final_spelled.get(row.item, set()))}, not {retired[name]!r}"
                )


def check_final(final: tw.WorkbookResult, codebook: Mapping[str, Any]) -> None:
    """The final taxonomy reads without loss and reproduces the published counts."""
    if final.errors:
        raise DataCheckError("final workbook: " + "; ".join(str(e) for e in final.errors))
    faults = final.sheet(tw.FINAL_FAULT_SHEET)
    howtos = final.sheet(tw.FINAL_HOWTO_SHEET)
    if (faults.findings, howtos.findings) != (PUBLISHED_FAULT_ROWS, PUBLISHED_HOWTO_ROWS):
        raise DataCheckError(f"final workbook has {faults.findings} faults and {howtos.findings} how-tos")
    if len(final.sources) != PUBLISHED_POSTS:
        raise DataCheckError(f"final workbook has {len(final.sources)} posts, not {PUBLISHED_POSTS}")
    paths = category_paths(codebook, tw.SYMPTOM)
    symptoms = [row.label for row in final.rows if row.dimension == tw.SYMPTOM]
    stages = Counter(paths[label][0] for label in symptoms)
    inners = Counter(paths[label][1] for label in symptoms if len(paths[label]) == 3)
    if dict(stages) != PUBLISHED_STAGE_COUNTS or dict(inners) != PUBLISHED_INNER_COUNTS:
        raise DataCheckError(f"symptom counts {dict(stages)} {dict(inners)} differ from the published ones")


# --- Items -----------------------------------------------------------------------------------------


def read_so_tags(source: Path) -> dict[str, str]:
    """Question URL -> ';'-joined tags, from the candidates list of the replication data."""
    with (source / "candidates" / "so_dl_distributed.csv").open(encoding="utf-8", newline="") as handle:
        return {
            row["question"].strip(): ";".join(re.findall(r"<([^>]+)>", row["tags"]))
            for row in csv.DictReader(handle)
        }


def item_record(url: str, study_sources: Mapping[str, str], so_tags: Mapping[str, str]) -> dict[str, str]:
    """One items.csv row; never any text (the replication data holds none)."""
    github = re.fullmatch(r"https://github\.com/([^/]+/[^/]+)/issues/\d+", url)
    study_source = study_sources.get(url, "")
    if github:
        framework = GITHUB_FRAMEWORKS.get(github.group(1))
        if framework is None:
            raise DataCheckError(f"{url}: no framework known for repository {github.group(1)}")
        if study_source and study_source != f"GitHub-{framework}":
            raise DataCheckError(f"{url}: the final workbook says {study_source!r}")
        return {"url": url, "source": "github", "framework": framework, "platform": "GitHub", "tags": ""}
    if re.fullmatch(r"https://stackoverflow\.com/questions/\d+", url):
        if url not in so_tags:
            raise DataCheckError(f"{url}: not among the Stack Overflow candidates")
        # The study judged a question's framework by hand (not from its tags): take it from the final
        # workbook's Type column ("SO-tensorflow & SO-keras" -> "tensorflow & keras").
        frameworks = [
            part.strip().removeprefix("SO-") for part in re.split(r" & |; ", study_source) if part.strip()
        ]
        return {
            "url": url,
            "source": "stackoverflow",
            "framework": " & ".join(dict.fromkeys(frameworks)),
            "platform": "Stack Overflow",
            "tags": so_tags[url],
        }
    raise DataCheckError(f"{url}: neither a GitHub issue nor a Stack Overflow question")


def items_table(
    urls: Iterable[str], study_sources: Mapping[str, str], so_tags: Mapping[str, str]
) -> list[dict[str, str]]:
    records = [item_record(url, study_sources, so_tags) for url in sorted(set(urls))]
    return [{column: record.get(column, "") for column in ITEM_COLUMNS} for record in records]


# --- Labels ----------------------------------------------------------------------------------------


def label_table(rows: Iterable[tw.LabelRow]) -> list[dict[str, str]]:
    """Rows of a labels CSV, sorted (item, annotator, finding, codebook dimension order, label)."""
    order = {dimension: position for position, dimension in enumerate(tw.DIMENSIONS)}
    records = []
    for row in sorted(rows, key=lambda r: (r.item, r.annotator, r.finding, order[r.dimension], r.label)):
        memo = row.memo
        if row.dimension == tw.FIX_PATTERN and row.label == "other":
            memo = OTHER_MEMO_PREFIX + row.raw
        records.append(
            {
                "item": row.item,
                "annotator": row.annotator,
                "dimension": row.dimension,
                "label": row.label,
                "finding": str(row.finding),
                "round": "" if row.round is None else str(row.round),
                "memo": memo,
            }
        )
    return records


def issue_table(named: Sequence[tuple[str, tw.WorkbookResult]]) -> list[dict[str, str]]:
    records = []
    for file_name, result in named:
        for kind, issues in (("error", result.errors), ("note", result.notes)):
            for issue in issues:
                records.append(
                    {
                        "file": file_name,
                        "sheet": issue.sheet,
                        "row": str(issue.row),
                        "column": issue.column,
                        "item": issue.item,
                        "value": issue.value,
                        "kind": kind,
                        "message": issue.message,
                    }
                )
    sheet_order = {
        name: i for i, name in enumerate((*tw.RELIABILITY_SHEETS, tw.FINAL_HOWTO_SHEET, tw.FINAL_FAULT_SHEET))
    }
    return sorted(
        records, key=lambda r: (r["file"], sheet_order[r["sheet"]], int(r["row"]), r["column"], r["kind"])
    )


def csv_text(columns: Sequence[str], records: Iterable[Mapping[str, str]]) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(columns), lineterminator="\n")
    writer.writeheader()
    writer.writerows(records)
    return buffer.getvalue()


# --- Main ------------------------------------------------------------------------------------------


def read_workbooks(
    labelling: Path, final_path: Path, codebook: Mapping[str, Any]
) -> tuple[dict[int, tw.WorkbookResult], tw.WorkbookResult]:
    """The five reliability rounds (``labelling/reliability_analysis_roundN.xlsx``) and the final
    workbook, read with the codebook and all TOSEM synonyms."""
    vocabulary = tw.Vocabulary.from_codebook(codebook, tw.tosem_synonyms())
    rounds = {
        number: tw.read_reliability_workbook(
            labelling / f"reliability_analysis_round{number}.xlsx", number, vocabulary
        )
        for number in ROUNDS
    }
    return rounds, tw.read_final_workbook(final_path, vocabulary)


def label_files(rounds: Mapping[int, tw.WorkbookResult], final: tw.WorkbookResult) -> dict[str, str]:
    """The labels, decisions and issues files (name -> text): everything read from the workbooks."""
    files = {"final_decisions.csv": csv_text(LABEL_COLUMNS, label_table(final.rows))}
    for number in DEMO_ROUNDS:
        result = rounds[number]
        annotators = [row for sheet in result.sheets if sheet.annotator for row in sheet.rows]
        decisions = result.sheet("Final").rows
        files[f"labels_round{number}.csv"] = csv_text(LABEL_COLUMNS, label_table(annotators))
        files[f"decisions_round{number}.csv"] = csv_text(LABEL_COLUMNS, label_table(decisions))
    named = [(f"reliability_analysis_round{n}.xlsx", rounds[n]) for n in sorted(rounds)]
    named.append(("final_categories.xlsx", final))
    files["import_issues.csv"] = csv_text(ISSUE_COLUMNS, issue_table(named))
    return files


def build(source: Path) -> tuple[dict[str, str], dict[str, Any]]:
    """All fixture files (name -> text) and a summary, or DataCheckError."""
    codebook = build_codebook()
    rounds, final = read_workbooks(
        source / "results" / "labelling", source / "results" / "final" / "final_categories.xlsx", codebook
    )
    check_final(final, codebook)
    check_fix_patterns(final)
    check_retired_names(rounds, final)

    so_tags = read_so_tags(source)
    demo_urls = {url for number in DEMO_ROUNDS for sheet in rounds[number].sheets for url in sheet.items}
    files = {
        "codebook.json": json.dumps(codebook, indent=2, ensure_ascii=False) + "\n",
        "items.csv": csv_text(ITEM_COLUMNS, items_table(demo_urls, final.sources, so_tags)),
        "final_items.csv": csv_text(ITEM_COLUMNS, items_table(final.sources, final.sources, so_tags)),
        **label_files(rounds, final),
    }
    summary = {
        "rounds": {
            number: {
                sheet.sheet: {
                    "findings": sheet.findings,
                    "label_rows": len(sheet.rows),
                    "errors": len(sheet.errors),
                    "notes": len(sheet.notes),
                }
                for sheet in rounds[number].sheets
            }
            for number in ROUNDS
        },
        "final": {"findings": len({(r.item, r.finding) for r in final.rows}), "label_rows": len(final.rows)},
        "demo_items": len(demo_urls),
        "final_items": len(final.sources),
    }
    return files, summary


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE, help="the tosem23 data folder")
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT, help="where to write the fixtures")
    args = parser.parse_args(argv)
    try:
        files, summary = build(args.source)
    except (DataCheckError, tw.TosemLayoutError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    args.output.mkdir(parents=True, exist_ok=True)
    for name, text in sorted(files.items()):
        (args.output / name).write_text(text, encoding="utf-8", newline="")
    print(json.dumps(summary, indent=2), file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
