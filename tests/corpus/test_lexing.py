"""Joined lexer states: the same tokens as Pygments' own lexers, for every lexer, and fewer calls."""

from __future__ import annotations

import re
import sys

import pytest
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexer import RegexLexer, bygroups
from pygments.lexers import CppLexer, get_all_lexers, get_lexer_by_name
from pygments.token import Comment, Keyword, Name, String, Text
from pygments.util import ClassNotFound

from apps.corpus import lexing, rendering
from apps.corpus.lexing import fast_lexer, join_rules

# Code as item bodies hold it, a few lines per language the tags of a question name, plus the text
# every lexer must survive: unterminated strings and comments, stray brackets, tabs, non-ASCII.
SNIPPETS = {
    "python": "import torch\n@dataclass\nclass A(B):\n    x: int = 0x1F  # note\n    def f(self, *a, **k):\n"
    '        return f"{self.x!r:>10}" + r\'\\d+\' + b"\\x00"\n',
    "pytb": 'Traceback (most recent call last):\n  File "train.py", line 12, in <module>\n    main()\n'
    "RuntimeError: NCCL error in: ../torch/lib/c10d/ProcessGroupNCCL.cpp:825\n",
    "java": "public class A<T> extends B {\n  @Override public int f(String s) { return s.length(); }\n"
    "  /* c */\n}\n",
    "javascript": "const f = async (a, ...b) => { return `x${a}` + /re[gex]+/gi.test(b) }; // end\n",
    "typescript": "interface P<T> { readonly x?: T }\nexport type U = P<number> | null;\n",
    "go": "package main\nfunc main() {\n  ch := make(chan int, 3)\n"
    "  go func() { ch <- 1 }(); fmt.Println(`raw`)\n}\n",
    "rust": "fn main() -> Result<(), Box<dyn Error>> {\n  let v: Vec<u8> = vec![1, 2];\n"
    '  println!("{:?}", v); Ok(())\n}\n',
    "bash": 'export CUDA_VISIBLE_DEVICES=0,1\nfor i in $(seq 1 4); do echo "rank $i" >> log.txt; done\n',
    "console": "$ pip install torch==2.1\nCollecting torch\n$ python -c 'import torch'\n",
    "yaml": "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n    - name: trainer # comment\n"
    '      args: ["--nproc", 8]\n',
    "json": '{"a": [1, 2.5e3, true, null], "b": {"c": "d\\u00e9"}}\n',
    "sql": "SELECT a.id, count(*) FROM t a LEFT JOIN u ON u.a = a.id WHERE x LIKE '%y' GROUP BY 1; -- c\n",
    "diff": "--- a/x.py\n+++ b/x.py\n@@ -1,2 +1,2 @@\n-old\n+new\n context\n",
    "r": "df <- read.csv('x.csv')\nsummary(lm(y ~ x, data = df)) # fit\n",
    "julia": "function f(x::Int)::Float64\n    return x / 2 # half\nend\n",
    "kotlin": 'fun main() { val xs = listOf(1, 2).map { it * 2 }; println("$xs") }\n',
    "ruby": 'def f(a, *b) = a.map { |x| x ** 2 } # sq\nputs "#{f([1])}"\n',
    "php": '<?php $a = ["k" => 1]; echo htmlspecialchars($a["k"]); ?>\n',
    "lua": "local t = {1, 2}\nfor i, v in ipairs(t) do print(i, v) end -- c\n",
    "matlab": "A = [1 2; 3 4];\nB = A' * inv(A); % c\n",
    "csharp": 'public async Task<int> F(string s) { var x = $"{s}"; return await G(x); }\n',
}
STRESS = (
    'x = \'unterminated\n/* open comment\n"""triple\n{[(<>)]}\n\t\ttab\u00e9\u4e2d\u6587 \\\n'
    '#!/bin/sh\n<!-- c -->\n<div a="1">t</div>\n0x1F 1e-3 .5 1_000\n@decorator $var %p ^& ~`\n'
)


def _tokens(lexer, text: str) -> list[tuple[object, str]]:  # type: ignore[no-untyped-def]
    return list(lexer.get_tokens(text))


@pytest.mark.parametrize("language", sorted(SNIPPETS))
def test_joined_lexer_gives_pygments_tokens_for_the_languages_items_hold(language: str) -> None:
    lexer = get_lexer_by_name(language)
    text = SNIPPETS[language] + STRESS
    assert _tokens(fast_lexer(lexer), text) == _tokens(lexer, text)


def test_joined_lexers_give_pygments_tokens_for_every_lexer() -> None:
    """Every lexer Pygments ships, on every snippet and the stress text: the joined states must never
    change a token (the joining is generic, so a lexer no item uses today is checked too)."""
    text = SNIPPETS["python"] + SNIPPETS["javascript"] + SNIPPETS["bash"] + STRESS
    joined = 0
    for _name, aliases, _files, _mimes in get_all_lexers():
        if not aliases:
            continue
        try:
            lexer = get_lexer_by_name(aliases[0])
        except ClassNotFound:
            continue
        fast = fast_lexer(lexer)
        if fast is lexer:
            continue
        joined += 1
        assert _tokens(fast, text) == _tokens(lexer, text), aliases[0]
    assert joined > 300  # most of Pygments' lexers take the joined search


def test_python_highlighting_is_byte_for_byte_pygments() -> None:
    code = SNIPPETS["python"]
    standard = highlight(code, get_lexer_by_name("python"), HtmlFormatter(nowrap=True))
    assert highlight(code, rendering._lexer("python"), rendering._formatter()) == standard
    assert type(rendering._lexer("python")).get_tokens_unprocessed is lexing._get_tokens_unprocessed


def _match_calls(lexer, text: str) -> int:  # type: ignore[no-untyped-def]
    """How many times lexing `text` calls a compiled pattern's `match` (a C call the profiler sees)."""
    calls = 0

    def profile(frame: object, event: str, arg: object) -> None:
        nonlocal calls
        if event == "c_call" and getattr(arg, "__name__", "") == "match":
            calls += 1

    sys.setprofile(profile)
    try:
        list(lexer.get_tokens(text))
    finally:
        sys.setprofile(None)
    return calls


def test_joined_search_makes_a_fraction_of_the_pattern_calls() -> None:
    """The point of joining: about one `match` per token, where Pygments tries rule after rule."""
    lexer = get_lexer_by_name("python")
    text = SNIPPETS["python"] * 3
    tokens = len(_tokens(lexer, text))
    fast = _match_calls(fast_lexer(lexer), text)
    assert _match_calls(lexer, text) > 10 * tokens
    assert fast < 2 * tokens


class _Tricky(RegexLexer):
    """Rules that cannot be joined as they are, beside rules that can (in one state and another)."""

    name = "tricky"
    flags = re.MULTILINE
    tokens = {
        "root": [
            (r"(?i)select\b", Keyword),  # leading inline flag: joined as (?i:...)
            (r"([\"'])(.*?)(\1)", bygroups(String, String, String)),  # back-reference: this state stays
            (r"\w+", Name),
            (r"\s+", Text),
            (r"#", Comment, "comment"),
        ],
        "comment": [
            (r"(?x) [^\n]+  # a verbose pattern ending in a comment", Comment),
            (r"\n", Text, "#pop"),
        ],
    }


def test_states_that_cannot_be_joined_keep_rule_by_rule_search_and_the_same_tokens() -> None:
    lexer = _Tricky()
    text = "SELECT 'a' \"b\" x # c (d)\nselect y\n"
    assert join_rules(lexer._tokens["root"], lexer.flags) is None
    assert join_rules(lexer._tokens["comment"], lexer.flags) is not None
    assert _tokens(fast_lexer(lexer), text) == _tokens(lexer, text)
    assert (Keyword, "SELECT") in _tokens(fast_lexer(lexer), text)


def test_a_lexer_with_its_own_search_is_used_as_it_is() -> None:
    lexer = CppLexer()
    assert fast_lexer(lexer) is lexer


def test_markdown_without_angle_brackets_renders_as_with_the_first_pass() -> None:
    """The first nh3 pass is skipped for Markdown without `<`: the HTML must be the same as with it."""
    bodies = [
        "# Title\n\nSome *em* and **strong** and `code` and ~~gone~~ &amp; &lt;script&gt; \"q\" 'a'.\n",
        "| a | b |\n|:--|--:|\n| 1 | 2 |\n\n- [x] done\n- item\n\n1. one\n2. two\n",
        "See https://github.com/a/b/issues/1 and www.example.com and a@b.org.\n\n> quoted\n",
        '```python\nif a & b: print("x")  # &lt;\n```\n\n    indented code\n\n***\n',
        '![img](https://x.org/a.png "t") [rel](../issues/2) [js](javascript:alert(1))\n',
        '```\nTraceback (most recent call last):\n  File "a.py", line 1\n```\n' + SNIPPETS["python"],
    ]
    for body in bodies:
        assert "<" not in body
        markup = rendering._markdown_html(body)
        with_pass = rendering._finish(markup, "https://github.com/a/b/issues/1", "python")
        assert (
            rendering.render_markdown(
                body, base_url="https://github.com/a/b/issues/1", default_language="python"
            )
            == with_pass
        )


def test_a_joined_match_naming_no_rule_falls_back_to_rule_by_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    """Defensive: should the group that closed last ever not be a rule's marker, the position is searched
    rule by rule, as Pygments does, rather than taking a wrong rule."""
    joined = join_rules

    def no_rule_named(rules, flags):  # type: ignore[no-untyped-def]
        plan = joined(rules, flags)
        return None if plan is None else lexing._Plan(plan.match, [-1] * len(plan.rule_of_group))

    monkeypatch.setattr(lexing, "_PLANS", {})
    monkeypatch.setattr(lexing, "join_rules", no_rule_named)
    lexer = get_lexer_by_name("python")
    text = SNIPPETS["python"] + STRESS
    assert _tokens(fast_lexer(lexer), text) == _tokens(lexer, text)
