"""Screening rules: the TOSEM 2023 selection, word matching, and which rule turned an item away."""

from __future__ import annotations

import csv
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from apps.corpus.records import CommentRecord, ItemRecord, split_tags
from apps.corpus.screening import (
    PRESETS,
    RULE_ACCEPTED_ONLY,
    RULE_KEYWORDS,
    RULE_LABELS_EXCLUDE,
    RULE_LABELS_INCLUDE,
    RULE_STATE,
    RULE_TAGS,
    TOSEM23_GITHUB_HOROVOD,
    TOSEM23_GITHUB_KERAS,
    TOSEM23_GITHUB_PYTORCH,
    TOSEM23_GITHUB_TENSORFLOW,
    TOSEM23_STACKOVERFLOW,
    ScreeningRules,
    Selector,
    first_matching_label,
    screen,
)

SAMPLES = Path(__file__).parent / "samples"


def question(
    title: str = "",
    body: str = "",
    tags: tuple[str, ...] = (),
    accepted: int | None = 99,
    **metadata: Any,
) -> ItemRecord:
    return ItemRecord(
        url="https://stackoverflow.com/questions/1",
        source="stackoverflow",
        external_id="1",
        title=title,
        body=body,
        body_format="html",
        tags=list(tags),
        metadata={"accepted_answer_id": accepted, **metadata},
    )


def issue(title: str = "", body: str = "", labels: tuple[str, ...] = (), state: str = "closed") -> ItemRecord:
    return ItemRecord(
        url="https://github.com/keras-team/keras/issues/1",
        source="github",
        external_id="keras-team/keras#1",
        title=title,
        body=body,
        body_format="markdown",
        tags=list(labels),
        metadata={"state": state},
    )


# --- TOSEM 2023, Stack Overflow ----------------------------------------------------------------


def test_a_horovod_question_needs_no_keyword() -> None:
    assert TOSEM23_STACKOVERFLOW.screen(question("Install fails", tags=("horovod",))) is None


def test_a_framework_question_with_a_keyword_passes() -> None:
    record = question(
        "Slow training", "<p>I use <b>multiple GPUs</b> with MirroredStrategy</p>", ("tensorflow",)
    )
    assert TOSEM23_STACKOVERFLOW.screen(record) is None


def test_a_framework_question_without_a_keyword_fails_on_keywords() -> None:
    assert (
        TOSEM23_STACKOVERFLOW.screen(question("Shape error", "<p>reshape fails</p>", ("keras",)))
        == RULE_KEYWORDS
    )


def test_a_keyword_without_a_framework_tag_fails_on_tags() -> None:
    assert TOSEM23_STACKOVERFLOW.screen(question("distributed training", tags=("python",))) == RULE_TAGS


def test_a_question_without_an_accepted_answer_fails_first_on_accepted_only() -> None:
    assert TOSEM23_STACKOVERFLOW.screen(question("x", tags=("java",), accepted=None)) == RULE_ACCEPTED_ONLY


def test_an_accepted_answer_among_the_comments_counts_too() -> None:
    record = question("x", tags=("horovod",), accepted=None)
    record.comments.append(CommentRecord("2", "bob", "<p>do this</p>", "html", None, True, True, 3))
    assert TOSEM23_STACKOVERFLOW.screen(record) is None


def test_code_blocks_and_urls_do_not_count_for_the_stack_overflow_rule() -> None:
    in_code = question(
        "Error", "<p>see below</p><pre><code>strategy = distribute.Mirrored()</code></pre>", ("pytorch",)
    )
    in_url = question("Error", "<p>like https://example.org/distributed/guide said</p>", ("pytorch",))
    assert TOSEM23_STACKOVERFLOW.screen(in_code) == RULE_KEYWORDS
    assert TOSEM23_STACKOVERFLOW.screen(in_url) == RULE_KEYWORDS
    searching_code = ScreeningRules.simple(keywords=["distribute"], tags_any=["pytorch"])
    assert searching_code.screen(in_code) is None


def test_every_tosem_stack_overflow_candidate_satisfies_the_tag_part_of_the_rule() -> None:
    with (SAMPLES / "tosem23_so_dl_distributed.csv").open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 755
    held = [
        any(selector.tags_hold(split_tags(row["tags"])) for selector in TOSEM23_STACKOVERFLOW.selectors)
        for row in rows
    ]
    assert all(held)


# --- word matching -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "matches"),
    [
        ("Distributed training hangs", True),
        ("DISTRIBUTED", True),
        ("tf.distribute.MirroredStrategy", False),  # "distribute" is not in this rule
        ("non-distributed run", False),
        ("redistributed", False),
        ("multi-gpus setup", False),
        ("a multi-gpu setup", True),
        ("multi_gpu_model", False),
        ("multi_gpu model", True),
        ("on multiple\n  GPUs", True),
        ("multiple gpuses", False),
        ("(multi-gpu)", True),
    ],
)
def test_keywords_match_whole_words_case_insensitively(text: str, matches: bool) -> None:
    rules = ScreeningRules.simple(keywords=["distributed", "multi-gpu", "multi_gpu", "multiple gpus"])
    record = issue(body=text)
    assert (rules.screen(record) is None) is matches


def test_keywords_are_searched_in_the_title_too() -> None:
    rules = ScreeningRules.simple(keywords=["parallelism"])
    assert rules.screen(issue(title="Model parallelism OOM", body="")) is None


def test_html_entities_and_tags_do_not_hide_a_keyword() -> None:
    rules = ScreeningRules.simple(keywords=["multiple machines"])
    record = question("x", "<p>on multiple&nbsp;<em>machines</em></p>")
    assert rules.screen(record) is None


def test_an_empty_keyword_is_refused() -> None:
    with pytest.raises(ValueError, match="empty keyword"):
        ScreeningRules.simple(keywords=["  "]).screen(issue(body="x"))


# --- labels, states and order ------------------------------------------------------------------


def test_label_patterns_are_exact_names_or_wildcards_case_insensitively() -> None:
    assert first_matching_label(["Type:Feature"], ["type:feature"]) == "Type:Feature"
    assert first_matching_label(["type:docs-bug"], ["*docs*"]) == "type:docs-bug"
    assert first_matching_label(["[bug]"], ["[bug]"]) == "[bug]"
    assert first_matching_label(["b"], ["[bug]"]) is None
    assert first_matching_label(["feature request"], ["feature"]) is None


def test_the_pytorch_preset_needs_the_ddp_label_and_a_closed_issue() -> None:
    assert TOSEM23_GITHUB_PYTORCH.screen(issue(labels=("oncall: distributed", "module: ddp"))) is None
    assert TOSEM23_GITHUB_PYTORCH.screen(issue(labels=("module: ddp",), state="open")) == RULE_STATE
    assert TOSEM23_GITHUB_PYTORCH.screen(issue(labels=("module: cuda",))) == RULE_LABELS_INCLUDE
    assert TOSEM23_GITHUB_PYTORCH.screen(issue(labels=("module: ddp", "Feature"))) == RULE_LABELS_EXCLUDE


def test_the_keras_preset_needs_a_keyword_and_no_excluded_label() -> None:
    assert TOSEM23_GITHUB_KERAS.screen(issue("multi-gpu model fails", labels=("type:support",))) is None
    assert TOSEM23_GITHUB_KERAS.screen(issue("model fails")) == RULE_KEYWORDS
    assert TOSEM23_GITHUB_KERAS.screen(issue("multi-gpu", labels=("stale",))) == RULE_LABELS_EXCLUDE


def test_the_horovod_and_tensorflow_presets() -> None:
    assert TOSEM23_GITHUB_HOROVOD.screen(issue("anything", labels=("question",))) is None
    assert TOSEM23_GITHUB_HOROVOD.screen(issue("anything", labels=("wontfix",))) == RULE_LABELS_EXCLUDE
    assert TOSEM23_GITHUB_TENSORFLOW.screen(issue(labels=("type:others", "comp:dist-strat"))) is None
    assert (
        TOSEM23_GITHUB_TENSORFLOW.screen(issue(labels=("type:others", "stat:awaiting response")))
        == RULE_LABELS_EXCLUDE
    )


def test_required_tag_combinations() -> None:
    rules = ScreeningRules(selectors=(Selector(tags_all=("tensorflow", "gpu")),))
    assert rules.screen(question(tags=("gpu", "TensorFlow"))) is None
    assert rules.screen(question(tags=("tensorflow",))) == RULE_TAGS


def test_empty_rules_let_everything_through() -> None:
    rules = ScreeningRules()
    assert rules.is_empty
    assert screen(question(accepted=None), rules) is None


def test_per_rule_counts_over_a_batch() -> None:
    batch = [
        question("distributed", tags=("keras",)),
        question("reshape", tags=("keras",)),
        question("distributed", tags=("r",)),
        question("x", tags=("horovod",), accepted=None),
        question("x", tags=("horovod",)),
    ]
    counts = Counter(TOSEM23_STACKOVERFLOW.screen(record) for record in batch)
    assert counts == Counter({None: 2, RULE_KEYWORDS: 1, RULE_TAGS: 1, RULE_ACCEPTED_ONLY: 1})


def test_presets_are_listed_by_name() -> None:
    assert PRESETS["tosem23-stackoverflow"] is TOSEM23_STACKOVERFLOW
    assert set(PRESETS) == {
        "tosem23-stackoverflow",
        "tosem23-github-horovod",
        "tosem23-github-keras",
        "tosem23-github-pytorch",
        "tosem23-github-tensorflow",
    }
