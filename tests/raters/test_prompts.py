"""Prompts from the codebook, the answer's JSON Schema and the check of an answer. No database."""

from __future__ import annotations

import json

import pytest

from apps.raters.prompts import (
    CheckedAnswer,
    ItemText,
    Refusal,
    answer_schema,
    build_prompt,
    check_answer,
    item_text,
    prompt_hash,
)
from apps.taxonomy.codebook_spec import CategorySpec, CodebookSpec, DimensionSpec

CODEBOOK = CodebookSpec(
    name="DDP faults",
    dimensions=(
        DimensionSpec(
            key="kind",
            name="Kind",
            categories=(
                CategorySpec(
                    "fault",
                    "Fault",
                    definition="Something broke.",
                    include="crashes",
                    exclude="questions",
                    children=(CategorySpec("hang", "Hang", examples=("NCCL timeout",)),),
                ),
                CategorySpec("question", "Question"),
            ),
        ),
        DimensionSpec(
            key="cause",
            name="Cause",
            multiple=True,
            applies_when=("kind", "fault"),
            categories=(CategorySpec("config", "Config"), CategorySpec("code", "Code")),
        ),
    ),
)


def test_the_prompt_holds_the_codebook_the_item_and_the_schema() -> None:
    prompt = build_prompt(CODEBOOK, ItemText("Training hangs", "NCCL waits forever", ("Same here",)))
    text = prompt.text
    for expected in (
        "DDP faults",
        "`fault`: Fault. Something broke.",
        "Include: crashes",
        "Exclude: questions",
        "Example: NCCL timeout",
        "Applies when `kind` is `fault`",
        "Choose several categories",
        "Title: Training hangs",
        "NCCL waits forever",
        "Comment 1: Same here",
        '"findings"',
    ):
        assert expected in text  # fmt: skip
    assert prompt.messages[0]["role"] == "system"


def test_the_schema_lists_category_keys_and_requires_only_dimensions_that_always_apply() -> None:
    schema = answer_schema(CODEBOOK)
    finding = schema["properties"]["findings"]["items"]
    assert finding["properties"]["kind"]["enum"] == ["fault", "hang", "question"]
    assert finding["properties"]["cause"]["type"] == "array"
    assert finding["required"] == ["kind"] and finding["additionalProperties"] is False


def test_the_item_is_cut_to_the_length_budget_and_says_so() -> None:
    text = item_text(ItemText("T", "x" * 500, ("c" * 50,) * 10), budget=300)
    assert len(text) < 420 and "body cut to fit" in text
    text = item_text(ItemText("T", "short", ("c" * 50,) * 10), budget=200)
    assert "Comment 1:" in text and "more comment(s) left out" in text


def test_the_hash_changes_with_the_prompt_the_model_and_the_parameters() -> None:
    one = build_prompt(CODEBOOK, ItemText("A", "b"))
    base = prompt_hash(one, model="m", params={"temperature": 0})
    assert base == prompt_hash(
        build_prompt(CODEBOOK, ItemText("A", "b")), model="m", params={"temperature": 0}
    )
    assert base != prompt_hash(
        build_prompt(CODEBOOK, ItemText("A", "c")), model="m", params={"temperature": 0}
    )
    assert base != prompt_hash(one, model="m2", params={"temperature": 0})
    assert base != prompt_hash(one, model="m", params={"temperature": 0.7})
    assert base != prompt_hash(
        build_prompt(CODEBOOK, ItemText("A", "b"), "Only $item and $schema"),
        model="m",
        params={"temperature": 0},
    )


def test_a_template_naming_an_unknown_placeholder_is_refused() -> None:
    with pytest.raises(KeyError):
        build_prompt(CODEBOOK, ItemText("A", "b"), "Hello $nobody")


def test_valid_answers_give_labels_and_fenced_json_is_accepted() -> None:
    reply = (
        "```json\n"
        + json.dumps({"findings": [{"kind": "hang", "cause": ["config", "code"]}, {"kind": "question"}]})
        + "\n```"
    )
    assert check_answer(CODEBOOK, reply) == CheckedAnswer(
        ((1, "kind", "hang"), (1, "cause", "config"), (1, "cause", "code"), (2, "kind", "question"))
    )


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ("not json", "malformed JSON"),
        ("[]", 'non-empty "findings"'),
        ('{"findings": [{"kind": "bug"}]}', "unknown category 'bug'"),
        ('{"findings": [{"colour": "red", "kind": "fault"}]}', "unknown dimension 'colour'"),
        ('{"findings": [{"kind": "question", "cause": ["code"]}]}', "'cause' does not apply"),
        ('{"findings": [{"kind": "fault"}]}', "missing dimension 'cause'"),
        ('{"findings": [{"cause": ["code"]}]}', "'cause' does not apply"),
        ('{"findings": [{"kind": ["fault", "question"]}]}', "single-choice, got 2"),
        ('{"findings": [{"kind": 3}]}', "expected category keys"),
        ('{"findings": [{"kind": "question"}], "confidence": 0.9}', "unexpected key(s) confidence"),
    ],
)
def test_invalid_answers_are_refused_with_their_reason(reply: str, reason: str) -> None:
    checked = check_answer(CODEBOOK, reply)
    assert isinstance(checked, Refusal) and reason in checked.reason
