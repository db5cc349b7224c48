"""The package's texts for people: the agreement report in Markdown and the README. No Django.

Both are functions of plain data, so that the same study always gives the same bytes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

# Greek letters are the coefficients' usual names.
METRICS: tuple[tuple[str, str], ...] = (
    ("percent_agreement", "% agreement"),
    ("cohen_kappa", "Cohen κ"),
    ("fleiss_kappa", "Fleiss κ"),
    ("krippendorff_alpha", "Krippendorff α"),  # noqa: RUF001
    ("gwet_ac1", "Gwet AC1"),
)
SET_METRICS: tuple[tuple[str, str], ...] = (
    ("krippendorff_alpha_masi", "α (MASI)"),  # noqa: RUF001
    ("krippendorff_alpha_jaccard", "α (Jaccard)"),  # noqa: RUF001
)


def _number(value: object) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def _cell(text: str) -> str:
    return " ".join(text.replace("|", "\\|").split())


def agreement_markdown(data: Mapping[str, Any], dimension_names: Mapping[str, str]) -> str:
    """The agreement report (`build.agreement_data`) as Markdown: per dimension, one table row per round
    and one for all rounds together, the docs/design.md §6 coefficients; undefined values as "—" with their
    reasons listed under the table."""
    lines = [
        "# Inter-annotator agreement",
        "",
        f"Computed on codebook version {data['codebook_version']}, at full depth of the category tree, "
        "from submitted annotations only (definitions: docs/design.md §6, docs/agreement.md). "
        "`agreement.json` holds every figure, per category and per annotator pair too.",
        "",
    ]
    periods: list[tuple[str, Mapping[str, Any]]] = []
    for r in data["rounds"]:
        label = f"{r['round']} ({_cell(r['name'])})" if r["name"] else str(r["round"])
        if "discussed" in r:  # a revealed round: its blind figures, then those after discussion
            periods += [(f"{label}, blind", r["dimensions"]), (f"{label}, after discussion", r["discussed"])]
        else:
            periods.append((label, r["dimensions"]))
    periods.append(("all rounds", data["all_rounds"]))
    if not data["n_ratings"]:
        lines += ["The study has no submitted annotations: there is no agreement to report.", ""]
        return "\n".join(lines)
    for key, name in dimension_names.items():
        reports = [(label, per[key]) for label, per in periods if key in per]
        multi = any("krippendorff_alpha_masi" in report for _, report in reports)
        metrics = METRICS + (SET_METRICS if multi else ())
        lines += [f"## {_cell(name)} (`{key}`)", ""]
        header = ["Round", "items", "annotators", "ratings", *(label for _, label in metrics)]
        lines.append("| " + " | ".join(header) + " |")
        lines.append("|:---|" + "---:|" * (len(header) - 1))
        reasons: list[str] = []
        for label, report in reports:
            if "error" in report:
                lines.append(f"| {label} | " + " | ".join(["—"] * (len(header) - 1)) + " |")
                reasons.append(f"- {label}: {report['error']}")
                continue
            cells = [label, *(_number(report[k]) for k in ("n_items", "n_annotators", "n_ratings"))]
            cells += [_number(report.get(metric)) for metric, _ in metrics]
            lines.append("| " + " | ".join(cells) + " |")
            undefined = report.get("undefined", {})
            for metric, metric_label in metrics:
                if metric in undefined:
                    reasons.append(f"- {label}, {metric_label}: {undefined[metric]}")
        lines.append("")
        if reasons:
            lines += ["Undefined values:", "", *reasons, ""]
    return "\n".join(lines)


def readme_text(
    *,
    study_name: str,
    codebook_version: int,
    counts: Mapping[str, int],
    dimensions: Sequence[tuple[str, str]],
) -> str:
    """The package's README.md: what each file holds and how to use it."""
    dimension_lines = "\n".join(f"  - `{key}`: {name}" for key, name in dimensions) or "  (none)"
    return f"""# Replication package: {study_name}

Exported from Taxonomist. Codebook version {codebook_version}; {counts["items"]} items, of which
{counts["decided_items"]} have a current decision ({counts["findings"]} findings);
{counts["annotations"]} submitted annotations.

## Files

| file | what it holds |
|---|---|
| `README.md` | this description |
| `manifest.json` | the package format, when it was made, the SHA-256 and size of every other file |
| `dataset.csv` | the consolidated dataset: one row per (item, finding) of the current decisions |
| `dataset.json` | the same dataset, one JSON object per item (category keys and paths) |
| `annotations.csv` | every annotator's labels (raw), one row per label |
| `items.jsonl` | every item of the study (URL, source, title, body, tags, metadata, comments), one per line |
| `codebook.json` | the codebook: version, every category (retired, merged too), change history |
| `sampling.json` | the labelling rounds: how each was drawn (method, seed, size) and its items |
| `discussion.json` | each round's phase, its blind labels frozen at the reveal, revisions and threads |
| `agreement.json` | inter-annotator agreement per round and dimension (docs/design.md §6 coefficients) |
| `agreement.md` | the same, as tables |
| `taxonomy_counts.md` | the taxonomy: count and share of findings per category and source |
| `taxonomy_counts.tex` | the same as LaTeX tables (needs `\\usepackage{{booktabs}}`) |
| `study.json` | the study's settings and members (usernames and roles) |

## dataset.csv

Columns: `url`, `title`, `source`, `round` (the round the decision was made in, empty if none),
`finding` (1, 2, ... within the item), then one column per dimension, holding the decided category as
its path of names joined with ` > ` (several categories joined with `; `), then `provenance`
(`unanimous`, `majority`, `adjudicated` or `imported`), `decided_by` (username) and `rationale`.
Only items with a current decision are in the dataset. The dimensions:

{dimension_lines}

A cell starting with `=`, `+`, `-`, `@`, a tab or a carriage return is prefixed with a single quote
so that spreadsheets show it as text (CSV formula injection). UTF-8, no byte-order mark, `\\n` line ends.

## annotations.csv

A labels file (docs/design.md §5: `item,annotator,dimension,label,finding,round,memo`) with the category key
in `label` (`pending` for an undecided dimension), plus `path` (the label's path of names), `original`
(the key the annotator chose, when a codebook merge moved the label since), `status` (`submitted`, or
`open` for an assignment not yet done, which has no labels) and `submitted_at`.

## Importing the package

`python manage.py import_study NEW_SLUG package.zip` makes a new study from this package, with its
items, codebook (versions and history), rounds, annotations and decisions. Exporting that study again
gives the same dataset files. `codebook.json["codebook"]` alone is a codebook file that
`python manage.py load_codebook` reads.

## Counting rules

A category counts the findings labelled with it or with any category below it; a finding counts once
per category. A share is the count divided by the findings of the same source that have a value in the
dimension.
"""
