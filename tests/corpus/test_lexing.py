"""Lexers trying only the rules that can match at the next character: the same tokens as Pygments' own,
for every lexer, and a fraction of the calls."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexer import RegexLexer, bygroups
from pygments.lexers import CppLexer, get_all_lexers, get_lexer_by_name
from pygments.token import Comment, Keyword, Name, String, Text
from pygments.util import ClassNotFound

from apps.corpus import lexing, rendering
from apps.corpus.lexing import fast_lexer, first_characters

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
def test_fast_lexer_gives_pygments_tokens_for_the_languages_items_hold(language: str) -> None:
    lexer = get_lexer_by_name(language)
    text = SNIPPETS[language] + STRESS
    assert _tokens(fast_lexer(lexer), text) == _tokens(lexer, text)


def _every_lexer() -> Iterator[tuple[str, RegexLexer]]:
    for _name, aliases, _files, _mimes in get_all_lexers():
        if not aliases:
            continue
        try:
            lexer = get_lexer_by_name(aliases[0])
        except ClassNotFound:
            continue
        yield aliases[0], lexer


def test_fast_lexers_give_pygments_tokens_for_every_lexer() -> None:
    """Every lexer Pygments ships, on every snippet and the stress text: leaving rules out must never
    change a token (the reading of patterns is generic, so a lexer no item uses today is checked too)."""
    text = SNIPPETS["python"] + SNIPPETS["javascript"] + SNIPPETS["bash"] + STRESS
    fast_ones = 0
    for alias, lexer in _every_lexer():
        fast = fast_lexer(lexer)
        if fast is lexer:
            continue
        fast_ones += 1
        assert _tokens(fast, text) == _tokens(lexer, text), alias
    assert fast_ones > 300  # most of Pygments' lexers take the fast search


def test_no_rule_of_any_lexer_matches_at_a_character_it_is_said_not_to_start_with() -> None:
    """The guarantee itself, rule by rule: wherever a pattern of any lexer matches in the text, the match
    is not empty and starts with one of the characters read from the pattern (or the reading said any)."""
    text = "".join(SNIPPETS.values()) + STRESS + "".join(chr(code) for code in range(128))
    checked = 0
    for alias, lexer in _every_lexer():
        if not isinstance(lexer, RegexLexer):
            continue
        for rules in lexer._tokens.values():
            for match, _action, _state in rules:
                first = first_characters(match)
                if first is None:
                    continue
                checked += 1
                search = match.__self__.search
                found = search(text)
                while found is not None:
                    start = found.start()
                    if text[start] < "\x80":
                        assert found.end() > start and text[start] in first, (alias, match.__self__.pattern)
                    found = search(text, start + 1)
    assert checked > 10_000


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        (r"import\b", "i"),
        (r"\b(?:if|in|is)\b", "i"),
        (r"a?b", "ab"),
        (r"x{0,2}(?:y|z+)", "xyz"),
        (r"(?:ab|)c", "ac"),
        (r"(?<=\.)[0-9]", "0123456789"),
        (r"(?!=)[<=]", "<="),
        (r"(?i)k", "Kk"),
        ("(?i)\u212a", "Kk"),  # the Kelvin sign, under IGNORECASE, matches ASCII k and K
        ("\u00e9t\u00e9", ""),  # starts with a letter beyond ASCII: no ASCII character
        (r"(?i:sel)ect", "Ss"),
    ],
)
def test_first_characters_are_read_from_the_pattern(pattern: str, expected: str) -> None:
    first = first_characters(re.compile(pattern).match)
    assert first is not None and "".join(sorted(first)) == expected


@pytest.mark.parametrize("pattern", [r"\s*", r"(?:a|b?)", r"$", r"(?=x)", r"(a)?(?(1)b|c)"])
def test_a_pattern_that_can_match_empty_or_is_not_understood_may_start_anywhere(pattern: str) -> None:
    assert first_characters(re.compile(pattern).match) is None


def test_a_negated_class_may_start_with_any_ascii_character() -> None:
    first = first_characters(re.compile(r"[^\n]+").match)
    assert first is not None and len(first) == 128


def test_python_highlighting_is_byte_for_byte_pygments() -> None:
    code = SNIPPETS["python"]
    standard = highlight(code, get_lexer_by_name("python"), HtmlFormatter(nowrap=True))
    lexer = rendering._lexer("python")
    assert lexer is not None
    assert highlight(code, lexer, rendering._formatter()) == standard
    assert rendering._highlight(code, lexer) == rendering._highlight(code, get_lexer_by_name("python"))
    assert type(lexer).get_tokens_unprocessed is lexing._get_tokens_unprocessed


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


def test_fast_search_makes_a_fraction_of_the_pattern_calls() -> None:
    """The point: a few `match` calls per token, where Pygments tries rule after rule."""
    lexer = get_lexer_by_name("python")
    text = SNIPPETS["python"] * 3
    tokens = len(_tokens(lexer, text))
    fast = _match_calls(fast_lexer(lexer), text)
    assert _match_calls(lexer, text) > 10 * tokens
    assert fast < 4 * tokens


class _Tricky(RegexLexer):
    """Rules whose first characters take reading: an inline flag, a back-reference, a rule that can match
    the empty string, a verbose pattern, a state change."""

    name = "tricky"
    flags = re.MULTILINE
    tokens = {
        "root": [
            (r"(?i)select\b", Keyword),
            (r"([\"'])(.*?)(\1)", bygroups(String, String, String)),
            (r"\w+", Name),
            (r"\s+", Text),
            (r"#", Comment, "comment"),
        ],
        "comment": [
            (r"(?x) [^\n]+  # a verbose pattern ending in a comment", Comment),
            (r"\n?", Text, "#pop"),
        ],
    }


def test_tricky_rules_give_the_same_tokens() -> None:
    lexer = _Tricky()
    text = "SELECT 'a' \"b\" x # c (d)\nselect y # e\u00e9\n#"
    assert _tokens(fast_lexer(lexer), text) == _tokens(lexer, text)
    assert (Keyword, "SELECT") in _tokens(fast_lexer(lexer), text)
    firsts = [first_characters(rule[0]) for rule in lexer._tokens["root"]]
    assert firsts[0] == frozenset("Ss") and firsts[1] == frozenset("\"'")
    assert first_characters(lexer._tokens["comment"][1][0]) is None  # `\n?` can match the empty string


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


def test_states_built_again_by_a_lexer_are_kept_within_a_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    """Inform 7's lexer builds its states again for each embedded passage: the tables made for them must
    not pile up in a long-lived process, and their patterns are read once, not once per table."""
    monkeypatch.setattr(lexing, "_STATES", {})
    lexer = get_lexer_by_name("inform7")
    text = 'Include (- [ Foo; print "x"; ]; -).\n"Title" by Me\n\nThe Room is a room. [note]\n' * 3
    fast = fast_lexer(lexer)
    assert _tokens(fast, text) == _tokens(lexer, text)
    read = lexing._pattern_first_characters.cache_info().misses
    for _ in range(40):
        assert _tokens(fast, text) == _tokens(lexer, text)
    assert len(lexing._STATES) == lexing._KEPT  # built again and again, kept within the bound
    assert lexing._pattern_first_characters.cache_info().misses == read  # and not read again


def test_threads_lexing_at_once_while_tables_are_let_go_get_pygments_tokens(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A page's threads may render at once: four languages in four threads, with room for two tables, so
    that calls keep letting tables go while others use them."""
    monkeypatch.setattr(lexing, "_STATES", {})
    monkeypatch.setattr(lexing, "_KEPT", 2)
    languages = ["python", "javascript", "bash", "yaml"]
    lexers = {language: get_lexer_by_name(language) for language in languages}
    fast = {language: fast_lexer(lexer) for language, lexer in lexers.items()}
    expected = {language: _tokens(lexer, SNIPPETS[language]) for language, lexer in lexers.items()}

    def lex_often(first: int) -> bool:
        order = languages[first:] + languages[:first]
        return all(
            _tokens(fast[language], SNIPPETS[language]) == expected[language]
            for _ in range(25)
            for language in order
        )

    switching = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # threads switch as often as they can: a race shows if there is one
    try:
        with ThreadPoolExecutor(4) as pool:
            assert all(pool.map(lex_often, range(4)))
    finally:
        sys.setswitchinterval(switching)
    assert len(lexing._STATES) <= 2


def test_a_state_its_definitions_gain_after_a_first_call_is_found_by_the_next(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A lexer may still be filling its definitions in another thread when a call first meets them (Pygments
    fills them state by state): what a call made of them must not keep a state out for good."""
    monkeypatch.setattr(lexing, "_STATES", {})
    lexer = fast_lexer(_Tricky())
    tokendefs = lexer._tokens
    comment = tokendefs.pop("comment")
    try:
        with pytest.raises(KeyError):
            list(lexer.get_tokens("x # c\n"))
    finally:
        tokendefs["comment"] = comment
    assert _tokens(lexer, "x # c\n") == _tokens(_Tricky(), "x # c\n")
