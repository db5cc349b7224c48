"""Taxonomy count tables: counting rules, Markdown and LaTeX (no database)."""

from __future__ import annotations

import re

import pytest

from apps.export.counts import (
    INDENT_MARKDOWN,
    NO_SHARE,
    CountAccumulator,
    CountNode,
    DimensionTree,
    counts_latex,
    counts_markdown,
    latex_escape,
)

SYMPTOM = DimensionTree(
    "symptom",
    "Fault symptom",
    False,
    (
        CountNode("build", "Package Build & Import", None),
        CountNode("import-error", "import error", "build"),
        CountNode("training", "Training & Evaluation", None),
        CountNode("failure", "Program Failure", "training"),
        CountNode("oom", "out of memory", "failure"),
        CountNode("hang", "hang", "training"),
        CountNode("old", "retired, unused", None, active=False),
        CountNode("gone", "retired, used", None, active=False),
    ),
)
FIX = DimensionTree(
    "fix",
    "Fix | pattern",
    True,
    (CountNode("config", "fix config", None), CountNode("version", "fix 100% of $deps_{x}", None)),
)
LABELS = {"github": "GitHub", "stackoverflow": "Stack Overflow"}


def filled() -> CountAccumulator:
    counts = CountAccumulator([SYMPTOM, FIX])
    for source, keys in [
        ("github", ["import-error"]),
        ("github", ["oom"]),
        ("github", ["hang"]),
        ("stackoverflow", ["oom"]),
        ("stackoverflow", ["gone"]),
    ]:
        counts.add(source, "symptom", keys)
    counts.add("github", "fix", ["config", "version"])
    counts.add("stackoverflow", "fix", ["config"])
    return counts


def rows(table_index: int = 0) -> dict[str, tuple[int, ...]]:
    table = filled().tables(LABELS)[table_index]
    return {row.key: (*row.counts, row.total) for row in table.rows}


def test_a_category_counts_the_findings_of_its_whole_subtree() -> None:
    counted = rows()
    assert counted["oom"] == (1, 1, 2)
    assert counted["failure"] == (1, 1, 2)
    assert counted["training"] == (2, 1, 3)
    assert counted["build"] == (1, 0, 1)


def test_the_denominators_are_the_findings_with_a_value_per_source() -> None:
    table = filled().tables(LABELS)[0]
    assert table.sources == (("github", "GitHub"), ("stackoverflow", "Stack Overflow"))
    assert table.findings == (3, 2)
    assert table.total_findings == 5


def test_a_finding_counts_once_in_a_category_even_with_several_values_below_it() -> None:
    counts = CountAccumulator([SYMPTOM])
    counts.add("github", "symptom", ["oom", "hang"])
    counted = {row.key: row.total for row in counts.tables()[0].rows}
    assert counted["training"] == 1
    assert counted["oom"] == 1 and counted["hang"] == 1


def test_an_unused_inactive_category_is_hidden_and_a_used_one_shown() -> None:
    counted = rows()
    assert "old" not in counted
    assert counted["gone"] == (0, 1, 1)


def test_a_finding_without_values_counts_nowhere() -> None:
    counts = CountAccumulator([SYMPTOM])
    counts.add("github", "symptom", [])
    table = counts.tables()[0]
    assert table.total_findings == 0
    assert all(row.total == 0 for row in table.rows)


def test_an_unknown_category_or_dimension_is_an_error_naming_it() -> None:
    counts = CountAccumulator([SYMPTOM])
    with pytest.raises(ValueError, match="'nope'"):
        counts.add("github", "symptom", ["nope"])
    with pytest.raises(ValueError, match="unknown dimension 'fix'"):
        counts.add("github", "fix", ["config"])


def test_a_broken_parent_chain_is_refused() -> None:
    loop = DimensionTree("d", "D", False, (CountNode("a", "A", "b"), CountNode("b", "B", "a")))
    with pytest.raises(ValueError, match="broken parent chain"):
        CountAccumulator([loop])


def test_sources_follow_the_given_order_then_the_alphabet() -> None:
    counts = CountAccumulator([SYMPTOM])
    for source in ["zeta", "stackoverflow", "alpha", "github"]:
        counts.add(source, "symptom", ["hang"])
    assert [s for s, _ in counts.tables(LABELS)[0].sources] == ["github", "stackoverflow", "alpha", "zeta"]


def test_markdown_rows_hold_count_and_share_per_source_and_tree_indentation() -> None:
    text = counts_markdown(filled().tables(LABELS), title="Counts")
    assert (
        "| Category | GitHub n | GitHub % | Stack Overflow n | Stack Overflow % | Total n | Total % |" in text
    )
    assert "| Training & Evaluation | 2 | 66.7 | 1 | 50.0 | 3 | 60.0 |" in text
    assert f"| {INDENT_MARKDOWN * 2}out of memory | 1 | 33.3 | 1 | 50.0 | 2 | 40.0 |" in text
    assert "| **All findings** | 3 | 100.0 | 2 | 100.0 | 5 | 100.0 |" in text


def test_markdown_escapes_pipes_in_names() -> None:
    text = counts_markdown(filled().tables(LABELS))
    assert "## Fix \\| pattern (`fix`)" in text
    assert "shares may add up to more than 100 %" in text


def test_markdown_tables_have_the_same_number_of_cells_on_every_row() -> None:
    for line in counts_markdown(filled().tables(LABELS)).splitlines():
        if line.startswith("|"):
            assert len(re.split(r"(?<!\\)\|", line)) == 9, line


def test_latex_escapes_every_special_character() -> None:
    assert latex_escape("Build & Import 100% $x_{1}^2 ~#\\") == (
        r"Build \& Import 100\% \$x\_\{1\}\textasciicircum{}2 \textasciitilde{}\#\textbackslash{}"
    )
    assert latex_escape("a <b> | c\nd") == r"a \textless{}b\textgreater{} \textbar{} c d"


def _latex_body(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if not line.startswith("%"))


def test_latex_uses_booktabs_rules_in_order_with_balanced_environments() -> None:
    text = _latex_body(counts_latex(filled().tables(LABELS)))
    assert text.count(r"\begin{table}") == text.count(r"\end{table}") == 2
    assert text.count(r"\begin{tabular}{l rr rr rr}") == text.count(r"\end{tabular}") == 2
    for table in text.split(r"\end{table}")[:-1]:
        positions = [table.index(rule) for rule in (r"\toprule", r"\midrule", r"\bottomrule")]
        assert positions == sorted(positions)
        assert r"\cmidrule(lr){2-3} \cmidrule(lr){4-5} \cmidrule(lr){6-7}" in table


def test_latex_braces_are_balanced_once_escapes_are_removed() -> None:
    text = _latex_body(counts_latex(filled().tables(LABELS)))
    plain = text.replace(r"\{", "").replace(r"\}", "")
    depth = 0
    for character in plain:
        depth += {"{": 1, "}": -1}.get(character, 0)
        assert depth >= 0
    assert depth == 0


def test_every_latex_row_has_seven_cells_and_ends_the_line() -> None:
    text = _latex_body(counts_latex(filled().tables(LABELS)))
    body_rows = [
        line.strip()
        for line in text.splitlines()
        if line.strip().endswith(r"\\") and not line.strip().startswith("&")
    ]
    assert body_rows
    for row in body_rows:
        cells = re.split(r"(?<!\\)&", row.removesuffix(r"\\"))
        assert len(cells) == 7, row
    assert r"\quad \quad out of memory & 1 & 33.3 & 1 & 50.0 & 2 & 40.0 \\" in text
    assert r"fix 100\% of \$deps\_\{x\} & 1 & 100.0 & 0 & 0.0 & 1 & 50.0 \\" in text


def test_a_source_without_findings_has_no_share() -> None:
    counts = CountAccumulator([SYMPTOM, FIX])
    counts.add("github", "symptom", ["hang"])
    counts.add("stackoverflow", "fix", ["config"])
    table = counts.tables(LABELS)[0]
    assert table.findings == (1, 0)
    assert f"| {INDENT_MARKDOWN}hang | 1 | 100.0 | 0 | {NO_SHARE} | 1 | 100.0 |" in counts_markdown([table])
    assert r"\quad hang & 1 & 100.0 & 0 & -- & 1 & 100.0 \\" in counts_latex([table])
