"""The package's texts for people: the agreement report in Markdown and the README. No Django.

Both are functions of plain data, so that the same study always gives the same bytes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from apps.agreement.tables import ALL_ROUNDS_LABEL, round_label, rounds_table
from apps.core.tables import to_markdown


def _cell(text: str) -> str:
    return " ".join(text.replace("|", "\\|").split())


def agreement_markdown(data: Mapping[str, Any], dimension_names: Mapping[str, str]) -> str:
    """The agreement report (`build.agreement_data`) as Markdown: per dimension, one table row per round
    and one for all rounds together (`agreement.tables.rounds_table`, the table the dashboard downloads),
    n being the items compared; undefined values as "—" with their reasons listed under the table."""
    lines = [
        "# Inter-annotator agreement",
        "",
        f"Computed on codebook version {data['codebook_version']}, at full depth of the category tree, "
        "from submitted annotations only (definitions: docs/design.md §6, docs/agreement.md). "
        "n is the number of items compared (rated by two or more annotators); alpha intervals are 95% "
        f"bootstrap intervals ({data.get('bootstrap', '?')} replicates, seed {data.get('seed', '?')}), "
        "as on the dashboard. `agreement.json` holds every figure, per category and per annotator pair too.",
        "",
    ]
    periods: list[tuple[str, Mapping[str, Any]]] = []
    for r in data["rounds"]:
        label = round_label(r["round"], r["name"])
        if "discussed" in r:  # a revealed round: its blind figures, then those after discussion
            periods += [(f"{label}, blind", r["dimensions"]), (f"{label}, after discussion", r["discussed"])]
        else:
            periods.append((label, r["dimensions"]))
    periods.append((ALL_ROUNDS_LABEL, data["all_rounds"]))
    if not data["n_ratings"]:
        lines += ["The study has no submitted annotations: there is no agreement to report.", ""]
        return "\n".join(lines)
    for key, name in dimension_names.items():
        reports = [(label, per[key]) for label, per in periods if key in per]
        table = rounds_table(f"{_cell(name)} (`{key}`)", reports)
        lines.append(to_markdown(replace(table, notes=()), heading=True))
        if table.notes:
            lines += ["Undefined values:", "", *(f"- {note}" for note in table.notes), ""]
    return "\n".join(lines + _discussion_lines(data))


def _share(value: Any) -> str:
    return "—" if value is None else f"{100 * value:.0f} %"


def _discussion_lines(data: Mapping[str, Any]) -> list[str]:
    """The revealed rounds' disagreements: resolved by discussion, by the adjudicator, still open, and the
    count of each cause given."""
    rows = [
        (round_label(r["round"], r["name"]), r["discussion"]) for r in data["rounds"] if "discussion" in r
    ]
    if not rows:
        return []
    lines = [
        "## Disagreements after discussion",
        "",
        "| round | resolved by discussion | by the adjudicator | still open | causes |",
        "|---|---:|---:|---:|---|",
    ]
    for label, d in rows:
        causes = ", ".join(f"{key} {n}" for key, n in d["causes"].items()) or "none given"
        lines.append(
            f"| {_cell(label)} | {d['resolved_by_discussion']} ({_share(d['share_discussion'])}) | "
            f"{d['adjudicated']} ({_share(d['share_adjudicator'])}) | {d['unresolved']} | {causes} |"
        )
    return [*lines, ""]


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
| `discussion.json` | phases, blind labels frozen at the reveal, revisions, threads, disagreement causes |
| `agreement.json` | inter-annotator agreement per round and dimension (docs/design.md §6 coefficients) |
| `agreement.md` | the same, as tables |
| `taxonomy_counts.md` | the taxonomy: count and share of findings per category and source |
| `taxonomy_counts.tex` | the same as LaTeX tables (needs `\\usepackage{{booktabs}}`) |
| `study.json` | the study's settings and members (usernames and roles) |
| `paper/methods.md`, `.tex`, `references.bib` | the methods section, each paragraph naming its source |
| `paper/figures/` | agreement, saturation, distribution, cross-tab heatmaps (SVG and PDF, 3.5 in) |
| `paper/tables/` | cross-tabulations of consecutive dimensions (CSV, JSON, Markdown, LaTeX booktabs) |

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
