"""Codebook files: parsing, refusal with paths, exact round trips, Markdown, and diffs."""

from __future__ import annotations

import json
import string
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from apps.taxonomy.codebook_diff import Change, diff_codebooks
from apps.taxonomy.codebook_markdown import codebook_markdown
from apps.taxonomy.codebook_spec import (
    CategorySpec,
    CodebookError,
    CodebookSpec,
    DimensionSpec,
    codebook_to_data,
    dump_codebook,
    format_of,
    parse_codebook,
    read_codebook,
    validate_codebook,
    walk_categories,
)

# A slice of the TOSEM 2023 distributed-training taxonomy (data/tosem23/README.md).
TOSEM_YAML = """\
name: Distributed training faults (TOSEM 2023)
dimensions:
  - key: issue-type
    name: Issue type
    multiple: true
    categories:
      - key: fault
        name: Fault
        definition: The post reports a failure or an unexpected behaviour.
      - key: how-to
        name: How-to question
  - key: symptom
    name: Symptom
    applies_when: {issue-type: fault}
    description: What the user observed.
    categories:
      - key: package-build-import
        name: Package Build & Import
        children:
          - key: installation-build-failure
            name: installation & build failure
            definition: Installing or building the framework fails.
            include: compiler errors, pip failures
            exclude: errors at import time (use import error)
            examples:
              - https://github.com/horovod/horovod/issues/1009
          - key: import-error
            name: import error
      - key: communication-setup
        name: Communication Setup
        children:
          - {key: setup-failure, name: setup failure}
          - {key: hang-and-timeout, name: hang and timeout}
      - key: training-evaluation
        name: Training & Evaluation
        children:
          - key: program-failure
            name: Program Failure
            children:
              - {key: out-of-memory, name: out of memory}
              - {key: program-failure-other, name: Other}
          - key: unexpected-performance
            name: Unexpected Performance
            children:
              - {key: hang, name: hang}
              - {key: low-efficiency, name: low efficiency}
              - {key: unexpected-performance-other, name: Other}
  - key: fix-pattern
    name: Fix pattern
    multiple: true
    applies_when: {issue-type: fault}
    categories:
      - {key: fix-communication-configuration, name: fix communication configuration}
      - {key: fix-dependency-version, name: fix dependency version}
"""


@pytest.fixture
def tosem() -> CodebookSpec:
    return parse_codebook(TOSEM_YAML, "yaml")


def problems_of(data: Any) -> list[tuple[str, str]]:
    with pytest.raises(CodebookError) as caught:
        parse_codebook(json.dumps(data), "json")
    return list(caught.value.problems)


def tosem_data() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(TOSEM_YAML)
    return loaded


# --- Parsing -------------------------------------------------------------------------------------------


def test_a_yaml_codebook_becomes_nested_frozen_specs(tosem: CodebookSpec) -> None:
    assert tosem.name == "Distributed training faults (TOSEM 2023)"
    assert [d.key for d in tosem.dimensions] == ["issue-type", "symptom", "fix-pattern"]
    symptom = tosem.dimensions[1]
    assert symptom.multiple is False
    assert symptom.applies_when == ("issue-type", "fault")
    assert symptom.description == "What the user observed."
    training = symptom.categories[2]
    assert training.name == "Training & Evaluation"
    assert [c.key for c in training.children] == ["program-failure", "unexpected-performance"]
    build = symptom.categories[0].children[0]
    assert build.include == "compiler errors, pip failures"
    assert build.examples == ("https://github.com/horovod/horovod/issues/1009",)
    with pytest.raises(AttributeError):
        build.name = "changed"  # type: ignore[misc]


def test_json_and_yaml_of_the_same_codebook_give_the_same_spec(tosem: CodebookSpec) -> None:
    assert parse_codebook(json.dumps(tosem_data()), "json") == tosem


def test_optional_fields_may_be_absent_or_null() -> None:
    spec = parse_codebook(
        json.dumps(
            {
                "name": "C",
                "dimensions": [
                    {
                        "key": "d",
                        "name": "D",
                        "multiple": None,
                        "applies_when": None,
                        "categories": [{"key": "a", "name": "A", "definition": None, "children": None}],
                    },
                    {"key": "e", "name": "E"},
                ],
            }
        ),
        "json",
    )
    assert spec.dimensions[0] == DimensionSpec("d", "D", categories=(CategorySpec("a", "A"),))
    assert spec.dimensions[1].categories == ()


def test_surrounding_whitespace_and_block_scalar_newlines_are_not_content() -> None:
    text = """\
name: "  C  "
dimensions:
  - key: d
    name: D
    categories:
      - key: a
        name: A
        definition: |
          Spans a line.
"""
    category = parse_codebook(text, "yaml").dimensions[0].categories[0]
    assert category.definition == "Spans a line."
    assert parse_codebook(text, "yaml").name == "C"


def test_read_codebook_picks_the_format_from_the_extension(tmp_path: Path) -> None:
    (tmp_path / "book.yml").write_text(TOSEM_YAML, encoding="utf-8")
    (tmp_path / "book.json").write_text(json.dumps(tosem_data()), encoding="utf-8")
    assert read_codebook(tmp_path / "book.yml") == read_codebook(tmp_path / "book.json")


def test_an_unknown_extension_or_missing_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(CodebookError, match=r"expected a \.json, \.yaml or \.yml file"):
        format_of("codebook.txt")
    with pytest.raises(CodebookError, match="no such file"):
        read_codebook(tmp_path / "absent.json")
    (tmp_path / "latin.json").write_bytes('{"name": "caf\xe9"}'.encode("latin-1"))
    with pytest.raises(CodebookError, match="not UTF-8"):
        read_codebook(tmp_path / "latin.json")


# --- Refusals with paths -------------------------------------------------------------------------------


def test_invalid_json_names_line_and_column() -> None:
    with pytest.raises(CodebookError) as caught:
        parse_codebook('{\n  "name": "C",\n  "dimensions": [,]\n}', "json")
    assert caught.value.path == "line 3, column 18"
    assert "invalid JSON" in caught.value.message


def test_invalid_yaml_names_the_line() -> None:
    with pytest.raises(CodebookError) as caught:
        parse_codebook("name: C\ndimensions: [\n  - key: d\n", "yaml")
    assert caught.value.path.startswith("line ")
    assert "invalid YAML" in caught.value.message


def test_a_field_given_twice_in_yaml_is_refused_with_its_line() -> None:
    text = "name: C\ndimensions:\n  - key: d\n    name: D\n    name: Other\n"
    with pytest.raises(CodebookError) as caught:
        parse_codebook(text, "yaml")
    assert (caught.value.path, caught.value.message) == ("line 5", "duplicate field 'name'")


def test_a_field_given_twice_in_json_is_refused_with_its_path() -> None:
    text = '{"name": "C", "dimensions": [{"key": "d", "name": "D", "categories": [], "key": "e"}]}'
    with pytest.raises(CodebookError) as caught:
        parse_codebook(text, "json")
    assert caught.value.problems == (("dimensions[e]", "duplicate field 'key'"),)


def test_yaml_aliases_are_refused() -> None:
    text = "name: C\ndimensions:\n  - &dim {key: d, name: D}\n  - *dim\n"
    with pytest.raises(CodebookError) as caught:
        parse_codebook(text, "yaml")
    assert caught.value.problems == (
        ("line 3", "YAML aliases are not allowed in a codebook (the anchor is here)"),
    )


def test_an_alias_bomb_is_refused_without_expanding_it() -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 12)]
    with pytest.raises(CodebookError, match="YAML aliases are not allowed"):
        parse_codebook("\n".join(lines) + "\n", "yaml")


def test_categories_nested_too_deeply_are_refused() -> None:
    leaf: dict[str, Any] = {"key": "c21", "name": "C21"}
    for level in range(20, 0, -1):
        leaf = {"key": f"c{level}", "name": f"C{level}", "children": [leaf]}
    data: dict[str, Any] = {"name": "C", "dimensions": [{"key": "d", "name": "D", "categories": [leaf]}]}
    [(path, message)] = problems_of(data)
    assert path.endswith(".children[c20].children[c21]")
    assert message == "categories nest more than 20 levels deep"
    data["dimensions"][0]["categories"][0] = leaf["children"][0]  # 20 levels: accepted
    parse_codebook(json.dumps(data), "json")


def test_absurdly_deep_json_is_refused_cleanly() -> None:
    with pytest.raises(CodebookError, match="nested too deeply"):
        parse_codebook("[" * 100_000 + "]" * 100_000, "json")


def test_a_codebook_that_is_not_a_mapping_is_refused() -> None:
    assert problems_of(["a", "list"]) == [("", "expected a codebook (a mapping), got a list")]


def test_missing_name_and_dimensions_are_both_reported() -> None:
    assert problems_of({}) == [
        ("", "missing required field 'name'"),
        ("", "missing required field 'dimensions'"),
    ]


def test_a_missing_category_key_is_reported_at_its_position() -> None:
    data = tosem_data()
    del data["dimensions"][1]["categories"][2]["children"][0]["children"][1]["key"]
    assert problems_of(data) == [
        (
            "dimensions[symptom].categories[training-evaluation].children[program-failure].children[1]",
            "missing required field 'key'",
        )
    ]


def test_a_missing_dimension_name_is_reported() -> None:
    data = tosem_data()
    del data["dimensions"][2]["name"]
    assert problems_of(data) == [("dimensions[fix-pattern]", "missing required field 'name'")]


def test_a_number_where_a_name_belongs_suggests_quoting() -> None:
    data = tosem_data()
    data["dimensions"][0]["categories"][0]["name"] = 2020
    assert problems_of(data) == [
        (
            "dimensions[issue-type].categories[fault].name",
            "expected a string, got a number (2020) (quote it in YAML)",
        )
    ]


def test_yaml_booleans_where_strings_belong_are_refused() -> None:
    text = TOSEM_YAML.replace("name: How-to question", "name: yes")
    with pytest.raises(CodebookError) as caught:
        parse_codebook(text, "yaml")
    assert caught.value.path == "dimensions[issue-type].categories[how-to].name"
    assert "a boolean (True)" in caught.value.message


def test_multiple_must_be_a_boolean() -> None:
    data = tosem_data()
    data["dimensions"][0]["multiple"] = "true"
    assert problems_of(data) == [
        ("dimensions[issue-type].multiple", "expected true or false, got the string 'true'")
    ]


def test_examples_must_be_a_list_of_non_empty_strings() -> None:
    data = tosem_data()
    category = data["dimensions"][0]["categories"][0]
    category["examples"] = ["ok", 3, "  "]
    assert problems_of(data) == [
        ("dimensions[issue-type].categories[fault].examples[1]", "expected a string, got a number (3)"),
        ("dimensions[issue-type].categories[fault].examples[2]", "empty example"),
    ]
    category["examples"] = "just one"
    assert problems_of(data) == [
        ("dimensions[issue-type].categories[fault].examples", "expected a list, got the string 'just one'")
    ]


def test_children_that_are_not_mappings_are_refused() -> None:
    data = tosem_data()
    data["dimensions"][0]["categories"].append("stray")
    assert problems_of(data) == [
        ("dimensions[issue-type].categories[2]", "expected a category (a mapping), got the string 'stray'")
    ]


def test_an_unknown_field_is_refused_with_the_field_it_probably_meant() -> None:
    data = tosem_data()
    data["dimensions"][0]["categories"][0]["defintion"] = "typo"
    data["dimensions"][0]["colour"] = "blue"
    assert problems_of(data) == [
        (
            "dimensions[issue-type]",
            "unknown field 'colour'; allowed: "
            + ", ".join(["key", "name", "multiple", "applies_when", "description", "categories"]),
        ),
        (
            "dimensions[issue-type].categories[fault]",
            "unknown field 'defintion' (did you mean 'definition'?)",
        ),
    ]


def test_a_duplicate_dimension_key_is_refused() -> None:
    data = tosem_data()
    data["dimensions"][2]["key"] = "symptom"
    data["dimensions"][2]["applies_when"] = None
    assert ("dimensions[2]", "duplicate dimension key 'symptom' (also dimension 1)") in problems_of(data)


def test_a_category_key_repeated_anywhere_in_its_dimension_is_refused() -> None:
    data = tosem_data()
    data["dimensions"][1]["categories"][2]["children"][1]["children"][0]["key"] = "setup-failure"
    assert problems_of(data) == [
        (
            "dimensions[symptom].categories[training-evaluation].children[unexpected-performance].children[0]",
            "duplicate category key 'setup-failure' in this dimension "
            "(first at dimensions[symptom].categories[communication-setup].children[setup-failure])",
        )
    ]


def test_the_same_category_key_in_two_dimensions_is_allowed(tosem: CodebookSpec) -> None:
    other = replace(tosem.dimensions[2], categories=(CategorySpec("hang", "hang"),))
    validate_codebook(replace(tosem, dimensions=(*tosem.dimensions[:2], other)))


@pytest.mark.parametrize(
    ("key", "problem"),
    [
        ("Hang", "category key 'Hang' must start with a lower-case letter or digit"),
        ("hang timeout", "category key 'hang timeout' must start"),
        ("-hang", "category key '-hang' must start"),
        ("x" * 101, "is longer than 100 characters"),
        ("", "category key is empty"),
    ],
)
def test_keys_must_be_lower_case_slugs(key: str, problem: str) -> None:
    data = tosem_data()
    data["dimensions"][0]["categories"][1]["key"] = key
    [(path, message)] = problems_of(data)
    assert path == f"dimensions[issue-type].categories[{key or 1}]"
    assert problem in message


def test_keys_may_use_digits_hyphens_and_underscores() -> None:
    data = tosem_data()
    data["dimensions"][0]["categories"][1]["key"] = "2nd_kind-b"
    parse_codebook(json.dumps(data), "json")


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("   ", "category name is empty"),
        ("Training > Program", "contains '>', the separator of category paths"),
        ("two\nlines", "spans several lines"),
        ("n" * 201, "is longer than 200 characters"),
    ],
)
def test_names_must_be_one_line_without_the_path_separator(name: str, problem: str) -> None:
    data = tosem_data()
    data["dimensions"][0]["categories"][1]["name"] = name
    [(path, message)] = problems_of(data)
    assert path == "dimensions[issue-type].categories[how-to]"
    assert problem in message


def test_siblings_with_the_same_name_are_refused_but_cousins_may_share_one() -> None:
    data = tosem_data()
    data["dimensions"][0]["categories"][1]["name"] = "  fault "
    assert problems_of(data) == [
        (
            "dimensions[issue-type].categories[how-to]",
            "category 'how-to' has the same name as its sibling 'fault' ('fault'), "
            "so a path of names could not tell them apart",
        )
    ]
    # 'Other' appears under both Program Failure and Unexpected Performance in the fixture.
    parse_codebook(TOSEM_YAML, "yaml")


def test_applies_when_must_name_an_existing_dimension() -> None:
    data = tosem_data()
    data["dimensions"][1]["applies_when"] = {"issue-typ": "fault"}
    assert problems_of(data) == [
        ("dimensions[symptom].applies_when", "unknown dimension 'issue-typ' (did you mean 'issue-type'?)")
    ]


def test_applies_when_must_name_a_category_of_that_dimension() -> None:
    data = tosem_data()
    data["dimensions"][1]["applies_when"] = {"issue-type": "faults"}
    assert problems_of(data) == [
        (
            "dimensions[symptom].applies_when",
            "dimension 'issue-type' has no category 'faults' (did you mean 'fault'?)",
        )
    ]


def test_applies_when_may_name_a_nested_category() -> None:
    data = tosem_data()
    data["dimensions"][2]["applies_when"] = {"symptom": "out-of-memory"}
    assert parse_codebook(json.dumps(data), "json").dimensions[2].applies_when == ("symptom", "out-of-memory")


def test_a_dimension_cannot_apply_when_it_has_a_value_itself() -> None:
    data = tosem_data()
    data["dimensions"][1]["applies_when"] = {"symptom": "hang"}
    assert problems_of(data) == [
        ("dimensions[symptom].applies_when", "dimension 'symptom' cannot depend on itself")
    ]


def test_a_cycle_of_applies_when_is_refused() -> None:
    data = tosem_data()
    data["dimensions"][0]["applies_when"] = {"fix-pattern": "fix-dependency-version"}
    data["dimensions"][2]["applies_when"] = {"symptom": "hang"}
    [(path, message)] = problems_of(data)
    assert path == "dimensions[issue-type].applies_when"
    assert message.endswith("issue-type → fix-pattern → symptom → issue-type")


@pytest.mark.parametrize("condition", [{"a": "b", "c": "d"}, {}, ["issue-type", "fault"], {"issue-type": 1}])
def test_applies_when_must_be_one_pair(condition: Any) -> None:
    data = tosem_data()
    data["dimensions"][1]["applies_when"] = condition
    [(path, message)] = problems_of(data)
    assert path == "dimensions[symptom].applies_when"
    assert message.startswith("expected one DIMENSION_KEY: CATEGORY_KEY pair")


def test_every_problem_is_listed_in_one_refusal() -> None:
    data = tosem_data()
    data["dimensions"][0]["categories"][0]["key"] = "Fault"
    data["dimensions"][2]["categories"][1]["name"] = ""
    with pytest.raises(CodebookError) as caught:
        parse_codebook(json.dumps(data), "json")
    assert [p for p, _ in caught.value.problems] == [
        "dimensions[issue-type].categories[Fault]",
        "dimensions[fix-pattern].categories[fix-dependency-version]",
        "dimensions[symptom].applies_when",
        "dimensions[fix-pattern].applies_when",
    ]
    assert caught.value.path == "dimensions[issue-type].categories[Fault]"
    assert str(caught.value).startswith("4 problems:\ndimensions[issue-type].categories[Fault]: category key")


def test_an_empty_codebook_name_is_refused() -> None:
    assert problems_of({"name": " ", "dimensions": []}) == [("name", "the codebook name is empty")]


# --- Dumping: exact round trips ------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_dumping_and_parsing_gives_back_the_same_spec(tosem: CodebookSpec, fmt: Any) -> None:
    text = dump_codebook(tosem, fmt)
    assert parse_codebook(text, fmt) == tosem
    assert dump_codebook(parse_codebook(text, fmt), fmt) == text


def test_the_dump_leaves_out_empty_optional_fields(tosem: CodebookSpec) -> None:
    dumped = json.loads(dump_codebook(tosem, "json"))
    fault = dumped["dimensions"][0]["categories"][0]
    assert fault == {
        "key": "fault",
        "name": "Fault",
        "definition": "The post reports a failure or an unexpected behaviour.",
    }
    assert dumped["dimensions"][1]["applies_when"] == {"issue-type": "fault"}
    assert dumped["dimensions"][0]["multiple"] is True


def test_codebook_data_is_what_the_json_file_holds(tosem: CodebookSpec) -> None:
    assert codebook_to_data(tosem) == json.loads(dump_codebook(tosem, "json"))


def test_the_json_dump_keeps_non_ascii_text_readable() -> None:
    spec = CodebookSpec(
        "Fehlerarten", (DimensionSpec("d", "Ursache", categories=(CategorySpec("a", "Gerät"),)),)
    )
    assert '"Gerät"' in dump_codebook(spec, "json")
    assert "Gerät" in dump_codebook(spec, "yaml")


def test_an_unknown_dump_format_is_refused(tosem: CodebookSpec) -> None:
    with pytest.raises(ValueError, match="unknown format 'xml'"):
        dump_codebook(tosem, "xml")  # type: ignore[arg-type]


_NAME_CHARACTERS = string.ascii_letters + string.digits + " &-'()/.,:#é中"
_TEXTS = st.text(st.characters(exclude_categories=["Cs"]), max_size=30).map(str.strip)
_NAMES = st.text(_NAME_CHARACTERS, min_size=1, max_size=20).map(lambda s: " ".join(s.split())).filter(
    bool
) | st.sampled_from(["yes", "null", "1.5", "~", "- item", "key: value", "'quoted'", "on"])


@st.composite
def category_trees(draw: st.DrawFn, keys: list[str], max_nodes: int = 8) -> tuple[CategorySpec, ...]:
    """A random tree over some of `keys` (each at most once), sibling names distinct."""
    chosen = draw(st.permutations(keys))[: draw(st.integers(0, min(max_nodes, len(keys))))]
    parents = [draw(st.integers(-1, i - 1)) for i in range(len(chosen))]
    leaves = {
        key: CategorySpec(
            key=key,
            name=draw(_NAMES),
            definition=draw(_TEXTS),
            include=draw(_TEXTS),
            exclude=draw(_TEXTS),
            examples=tuple(draw(st.lists(_TEXTS.filter(bool), max_size=2))),
        )
        for key in chosen
    }

    def build(parent: int) -> tuple[CategorySpec, ...]:
        nodes = []
        used: set[str] = set()
        for index, key in enumerate(chosen):
            if parents[index] == parent:
                name = leaves[key].name
                if name.casefold() in used:
                    name = f"{name} {key}"
                used.add(name.casefold())
                nodes.append(replace(leaves[key], name=name, children=build(index)))
        return tuple(nodes)

    return build(-1)


@st.composite
def codebooks(draw: st.DrawFn) -> CodebookSpec:
    dimension_keys = draw(st.permutations(["d0", "d1", "d2", "d3"]))[: draw(st.integers(0, 4))]
    dimensions = []
    for key in dimension_keys:
        dimensions.append(
            DimensionSpec(
                key=key,
                name=draw(_NAMES),
                multiple=draw(st.booleans()),
                description=draw(_TEXTS),
                categories=draw(category_trees([f"c{i}" for i in range(10)])),
            )
        )
    for index, dimension in enumerate(dimensions):
        others = [d for d in dimensions if d.key != dimension.key and d.categories]
        conditional: bool = draw(st.booleans())
        if others and conditional:
            target = draw(st.sampled_from(others))
            category = draw(st.sampled_from([e.category.key for e in walk_categories(target.categories)]))
            dimensions[index] = replace(dimension, applies_when=(target.key, category))
    spec = CodebookSpec(name=draw(_NAMES), dimensions=tuple(dimensions))
    try:
        validate_codebook(spec)
    except CodebookError:
        assume(False)  # only an applies_when cycle can be invalid here
    return spec


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(codebooks(), st.sampled_from(["json", "yaml"]))
def test_any_valid_codebook_survives_a_round_trip(spec: CodebookSpec, fmt: Any) -> None:
    assert parse_codebook(dump_codebook(spec, fmt), fmt) == spec


# --- Markdown ------------------------------------------------------------------------------------------


def test_markdown_shows_definitions_criteria_and_examples(tosem: CodebookSpec) -> None:
    text = codebook_markdown(tosem)
    assert text.startswith("# Distributed training faults (TOSEM 2023)\n")
    assert "## Symptom (`symptom`)" in text
    assert "Applies only when *Issue type* is *Fault* (`issue-type` = `fault`)." in text
    assert "### Package Build & Import (`package-build-import`)" in text
    assert "#### Package Build & Import > installation & build failure (`installation-build-failure`)" in text
    assert "**Definition.** Installing or building the framework fails." in text
    assert "**Include.** compiler errors, pip failures" in text
    assert "**Exclude.** errors at import time (use import error)" in text
    assert "- https://github.com/horovod/horovod/issues/1009" in text
    assert "Several categories may be chosen." in text
    assert "**Count:**" not in text


def test_markdown_counts_add_up_the_subtree_of_a_parent(tosem: CodebookSpec) -> None:
    counts = {
        ("symptom", "out-of-memory"): 21,
        ("symptom", "program-failure-other"): 4,
        ("symptom", "program-failure"): 2,
        ("symptom", "hang"): 44,
        ("symptom", "setup-failure"): 85,
    }
    text = codebook_markdown(tosem, counts)
    assert "**Count:** 27 with its subcategories (2 on the category itself)" in text
    assert "**Count:** 71 with its subcategories\n" in text  # Training & Evaluation = 27 + 44
    assert "**Count:** 21\n" in text
    assert "    - out of memory — 21" in text
    assert "Total: 156" in text


def test_markdown_lists_counts_of_categories_it_does_not_know(tosem: CodebookSpec) -> None:
    text = codebook_markdown(tosem, {("symptom", "retired-thing"): 3})
    assert text.endswith(
        "## Counts for categories not in this codebook\n\n- `symptom` / `retired-thing`: 3\n"
    )


def test_markdown_refuses_a_negative_count(tosem: CodebookSpec) -> None:
    with pytest.raises(ValueError, match="negative count -1 for symptom/hang"):
        codebook_markdown(tosem, {("symptom", "hang"): -1})


def test_markdown_escapes_names_but_not_definitions() -> None:
    spec = CodebookSpec(
        "A *study*",
        (
            DimensionSpec(
                "d", "D", categories=(CategorySpec("a", "multi_gpu [x]", definition="Use *this*."),)
            ),
        ),
    )
    text = codebook_markdown(spec)
    assert "# A \\*study\\*" in text
    assert "multi\\_gpu \\[x\\]" in text
    assert "**Definition.** Use *this*." in text


def test_a_dimension_without_categories_says_so() -> None:
    text = codebook_markdown(CodebookSpec("C", (DimensionSpec("memo", "Memo"),)))
    assert "No categories yet." in text


# --- Diff ----------------------------------------------------------------------------------------------


def category(spec: CodebookSpec, dimension: str, key: str) -> CategorySpec:
    for d in spec.dimensions:
        if d.key == dimension:
            for entry in walk_categories(d.categories):
                if entry.category.key == key:
                    return entry.category
    raise KeyError(key)


def edited(text: str) -> CodebookSpec:
    return parse_codebook(text, "yaml")


def test_a_codebook_does_not_differ_from_itself(tosem: CodebookSpec) -> None:
    assert diff_codebooks(tosem, tosem) == []
    assert diff_codebooks(tosem, parse_codebook(dump_codebook(tosem, "json"), "json")) == []


def test_a_new_key_is_an_add_with_every_field(tosem: CodebookSpec) -> None:
    new = edited(
        TOSEM_YAML.replace(
            "          - {key: hang-and-timeout, name: hang and timeout}\n",
            "          - {key: hang-and-timeout, name: hang and timeout}\n"
            "          - {key: unexpected-protocol, name: unexpected protocol, examples: [x]}\n",
        )
    )
    assert diff_codebooks(tosem, new) == [
        Change(
            "add",
            "symptom",
            "unexpected-protocol",
            {},
            {
                "name": "unexpected protocol",
                "parent": "communication-setup",
                "position": 2,
                "definition": "",
                "include": "",
                "exclude": "",
                "examples": ["x"],
            },
        )
    ]


def test_a_new_name_is_a_rename(tosem: CodebookSpec) -> None:
    new = edited(TOSEM_YAML.replace("name: hang and timeout", "name: hang & timeout"))
    assert diff_codebooks(tosem, new) == [
        Change(
            "rename", "symptom", "hang-and-timeout", {"name": "hang and timeout"}, {"name": "hang & timeout"}
        )
    ]


def test_changed_criteria_are_one_edit_with_only_what_changed(tosem: CodebookSpec) -> None:
    new = edited(
        TOSEM_YAML.replace("include: compiler errors, pip failures", "include: compiler errors").replace(
            "https://github.com/horovod/horovod/issues/1009", "https://github.com/horovod/horovod/issues/2"
        )
    )
    assert diff_codebooks(tosem, new) == [
        Change(
            "edit",
            "symptom",
            "installation-build-failure",
            {
                "include": "compiler errors, pip failures",
                "examples": ["https://github.com/horovod/horovod/issues/1009"],
            },
            {"include": "compiler errors", "examples": ["https://github.com/horovod/horovod/issues/2"]},
        )
    ]


def test_a_new_parent_is_a_move(tosem: CodebookSpec) -> None:
    data = tosem_data()
    symptom = data["dimensions"][1]["categories"]
    hang = symptom[2]["children"][1]["children"].pop(0)
    symptom[1]["children"].insert(0, hang)
    changes = diff_codebooks(tosem, parse_codebook(json.dumps(data), "json"))
    assert changes == [
        Change(
            "move",
            "symptom",
            "hang",
            {"parent": "unexpected-performance", "position": 0},
            {"parent": "communication-setup", "position": 0},
        )
    ]


def test_swapping_two_siblings_is_one_reorder_not_two(tosem: CodebookSpec) -> None:
    data = tosem_data()
    children = data["dimensions"][1]["categories"][1]["children"]
    children.reverse()
    changes = diff_codebooks(tosem, parse_codebook(json.dumps(data), "json"))
    assert len(changes) == 1
    assert changes[0].kind == "reorder"
    assert changes[0].before["parent"] == changes[0].after["parent"] == "communication-setup"
    assert {changes[0].before["position"], changes[0].after["position"]} == {0, 1}


def test_adding_a_sibling_in_front_is_not_a_reorder_of_the_others(tosem: CodebookSpec) -> None:
    data = tosem_data()
    data["dimensions"][0]["categories"].insert(0, {"key": "question", "name": "Question"})
    assert [c.kind for c in diff_codebooks(tosem, parse_codebook(json.dumps(data), "json"))] == ["add"]


def test_a_key_gone_is_a_retire_children_before_their_parent(tosem: CodebookSpec) -> None:
    data = tosem_data()
    del data["dimensions"][1]["categories"][2]["children"][0]  # Program Failure and its two leaves
    changes = diff_codebooks(tosem, parse_codebook(json.dumps(data), "json"))
    assert [(c.kind, c.category) for c in changes] == [
        ("retire", "program-failure-other"),
        ("retire", "out-of-memory"),
        ("retire", "program-failure"),
    ]
    retired = changes[-1]
    assert retired.after == {}
    assert retired.before["name"] == "Program Failure"
    assert retired.before["parent"] == "training-evaluation"


def test_a_changed_key_is_a_retire_and_an_add(tosem: CodebookSpec) -> None:
    new = edited(TOSEM_YAML.replace("key: how-to", "key: howto"))
    assert [(c.kind, c.category) for c in diff_codebooks(tosem, new)] == [
        ("add", "howto"),
        ("retire", "how-to"),
    ]


def test_adds_come_parent_first_in_depth_first_order(tosem: CodebookSpec) -> None:
    data = tosem_data()
    data["dimensions"][2]["categories"].append(
        {
            "key": "fix-code",
            "name": "fix code",
            "children": [{"key": "fix-api-usage", "name": "fix API usage"}],
        }
    )
    new = parse_codebook(json.dumps(data), "json")
    changes = diff_codebooks(tosem, new)
    assert [(c.kind, c.category, c.after["parent"]) for c in changes] == [
        ("add", "fix-code", None),
        ("add", "fix-api-usage", "fix-code"),
    ]


def test_dimension_changes_are_add_edit_and_retire(tosem: CodebookSpec) -> None:
    data = tosem_data()
    data["dimensions"][0]["name"] = "Kind of issue"
    data["dimensions"][0]["multiple"] = False
    data["dimensions"][2]["applies_when"] = None
    del data["dimensions"][1]
    data["dimensions"].append({"key": "distributed", "name": "Distributed-specific", "categories": []})
    changes = diff_codebooks(tosem, parse_codebook(json.dumps(data), "json"))
    assert changes == [
        Change(
            "edit_dimension",
            "issue-type",
            None,
            {"name": "Issue type", "multiple": True},
            {"name": "Kind of issue", "multiple": False},
        ),
        Change(
            "edit_dimension",
            "fix-pattern",
            None,
            {"applies_when": {"issue-type": "fault"}},
            {"applies_when": None},
        ),
        Change(
            "add_dimension",
            "distributed",
            None,
            {},
            {
                "name": "Distributed-specific",
                "multiple": False,
                "applies_when": None,
                "description": "",
                "position": 2,
            },
        ),
        Change(
            "retire_dimension",
            "symptom",
            None,
            {
                "name": "Symptom",
                "multiple": False,
                "applies_when": {"issue-type": "fault"},
                "description": "What the user observed.",
                "position": 1,
            },
            {},
        ),
    ]


def test_moving_a_dimension_is_an_edit_of_its_position(tosem: CodebookSpec) -> None:
    moved = replace(tosem, dimensions=(tosem.dimensions[2], tosem.dimensions[0], tosem.dimensions[1]))
    changes = diff_codebooks(tosem, moved)
    assert changes == [Change("edit_dimension", "fix-pattern", None, {"position": 2}, {"position": 0})]


def test_a_new_dimension_comes_after_the_new_dimension_it_depends_on(tosem: CodebookSpec) -> None:
    data = tosem_data()
    data["dimensions"] += [
        {"key": "root-cause", "name": "Root cause", "applies_when": {"stage": "runtime"}},
        {"key": "stage", "name": "Stage", "categories": [{"key": "runtime", "name": "Runtime"}]},
    ]
    changes = diff_codebooks(tosem, parse_codebook(json.dumps(data), "json"))
    assert [(c.kind, c.dimension, c.category) for c in changes] == [
        ("add_dimension", "stage", None),
        ("add", "stage", "runtime"),
        ("add_dimension", "root-cause", None),
    ]


def test_a_change_describes_itself_in_one_line(tosem: CodebookSpec) -> None:
    new = edited(TOSEM_YAML.replace("name: hang and timeout", "name: hang & timeout"))
    [change] = diff_codebooks(tosem, new)
    assert change.describe() == "rename symptom/hang-and-timeout: name 'hang and timeout' → 'hang & timeout'"


def apply_changes(old: CodebookSpec, changes: list[Change]) -> CodebookSpec:
    """A minimal applier, written independently of the diff, that rebuilds a spec from changes."""
    dims: dict[str, dict[str, Any]] = {}
    for position, d in enumerate(old.dimensions):
        dims[d.key] = {
            "name": d.name,
            "multiple": d.multiple,
            "applies_when": None if d.applies_when is None else dict([d.applies_when]),
            "description": d.description,
            "position": None,
            "old": position,
            "categories": {
                e.category.key: {
                    "name": e.category.name,
                    "parent": e.parent,
                    "position": None,
                    "old": index,
                    "definition": e.category.definition,
                    "include": e.category.include,
                    "exclude": e.category.exclude,
                    "examples": list(e.category.examples),
                }
                for index, e in enumerate(walk_categories(d.categories))
            },
        }
    for c in changes:
        if c.kind == "add_dimension":
            dims[c.dimension] = {**c.after, "old": None, "categories": {}}
        elif c.kind == "edit_dimension":
            dims[c.dimension].update(c.after)
        elif c.kind == "retire_dimension":
            del dims[c.dimension]
        elif c.kind == "add":
            dims[c.dimension]["categories"][c.category] = {**c.after, "old": None}
        elif c.kind == "retire":
            del dims[c.dimension]["categories"][c.category]
        else:
            dims[c.dimension]["categories"][c.category].update(c.after)

    def ordered(entries: dict[str, dict[str, Any]]) -> list[str]:
        # Unpositioned entries keep their old relative order; positioned ones go where they say.
        keys = sorted(
            (k for k, v in entries.items() if v["position"] is None), key=lambda k: entries[k]["old"]
        )
        for k in sorted(
            (k for k, v in entries.items() if v["position"] is not None), key=lambda k: entries[k]["position"]
        ):
            keys.insert(entries[k]["position"], k)
        return keys

    def build(categories: dict[str, dict[str, Any]], parent: str | None) -> tuple[CategorySpec, ...]:
        level = {k: v for k, v in categories.items() if v["parent"] == parent}
        return tuple(
            CategorySpec(
                key=k,
                name=level[k]["name"],
                definition=level[k]["definition"],
                include=level[k]["include"],
                exclude=level[k]["exclude"],
                examples=tuple(level[k]["examples"]),
                children=build(categories, k),
            )
            for k in ordered(level)
        )

    return CodebookSpec(
        name=old.name,
        dimensions=tuple(
            DimensionSpec(
                key=k,
                name=dims[k]["name"],
                multiple=dims[k]["multiple"],
                applies_when=None
                if dims[k]["applies_when"] is None
                else next(iter(dims[k]["applies_when"].items())),
                description=dims[k]["description"],
                categories=build(dims[k]["categories"], None),
            )
            for k in ordered(dims)
        ),
    )


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(codebooks(), codebooks())
def test_applying_the_diff_to_the_old_codebook_gives_the_new_one(
    old: CodebookSpec, new: CodebookSpec
) -> None:
    new = replace(new, name=old.name)  # the codebook's own name is not part of the diff
    assert apply_changes(old, diff_codebooks(old, new)) == new


@st.composite
def shuffled_siblings(draw: st.DrawFn, spec: CodebookSpec) -> CodebookSpec:
    """The same codebook with dimensions and every list of siblings in a random order."""

    def shuffle(categories: tuple[CategorySpec, ...]) -> tuple[CategorySpec, ...]:
        return tuple(replace(c, children=shuffle(c.children)) for c in draw(st.permutations(categories)))

    dimensions = draw(st.permutations(spec.dimensions))
    return replace(spec, dimensions=tuple(replace(d, categories=shuffle(d.categories)) for d in dimensions))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(codebooks().flatmap(lambda spec: st.tuples(st.just(spec), shuffled_siblings(spec))))
def test_a_diff_of_reordered_siblings_holds_only_reorders_and_rebuilds_the_order(
    pair: tuple[CodebookSpec, CodebookSpec],
) -> None:
    old, new = pair
    changes = diff_codebooks(old, new)
    assert {c.kind for c in changes} <= {"reorder", "edit_dimension"}
    assert all(set(c.after) == {"position"} for c in changes if c.kind == "edit_dimension")
    assert apply_changes(old, changes) == new


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(codebooks())
def test_no_codebook_differs_from_itself(spec: CodebookSpec) -> None:
    assert diff_codebooks(spec, spec) == []


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(codebooks(), codebooks())
def test_moves_in_diff_order_never_put_a_category_under_its_own_descendant(
    old: CodebookSpec, new: CodebookSpec
) -> None:
    parents: dict[tuple[str, str | None], str | None] = {
        (d.key, e.category.key): e.parent for d in old.dimensions for e in walk_categories(d.categories)
    }
    for change in diff_codebooks(old, new):
        if change.kind in ("add", "move"):
            ancestor = change.after["parent"]
            while ancestor is not None:
                assert ancestor != change.category
                ancestor = parents[(change.dimension, ancestor)]
            parents[(change.dimension, change.category)] = change.after["parent"]
