"""Pygments' regular-expression lexers, each state's rules tried by one combined expression.

Pure module (no Django). Pygments' ``RegexLexer`` tries a state's rules one Python call at a time until
one matches: Python's lexer makes about 35 such calls per token, and highlighting the code of an item
body was more than half of its rendering (docs/decisions/0012-combined-lexer-states.md). Here each
state's patterns are joined into one alternation, in the same order, each followed by an empty group of
its own: ``re`` tries the alternatives in order at the same position, as the rules were tried, so the
first rule that matches wins as before, and the empty group that closed last says which one it was.
The token stream is the same, token for token (``tests/corpus/test_lexing.py`` compares it with
Pygments' own for every lexer).

A state whose patterns cannot be joined without changing their meaning (a back-reference by number or
by name, a named group, a conditional, an inline flag other than at the start) keeps Pygments' rule by
rule search; a lexer that overrides ``get_tokens_unprocessed`` is used as it is.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from pygments.lexer import Lexer, RegexLexer
from pygments.token import Error, Whitespace, _TokenType

# A rule as `RegexLexer.process_tokendef` leaves it: (compiled pattern's `match`, action, new state).
Rule = tuple[Callable[[str, int], "re.Match[str] | None"], Any, Any]

# Constructs whose meaning depends on the group numbering or the whole pattern's flags.
_NOT_JOINABLE = re.compile(r"\\[1-9]|\(\?P[<=]|\(\?\(|\(\?[aiLmsux-]+\)")
_LEADING_FLAGS = re.compile(r"\(\?([imsx]+)\)")


class _Plan:
    """A state's rules joined: `match` at a position, and which rule each marker group stands for."""

    __slots__ = ("match", "rule_of_group")

    def __init__(self, match: Callable[[str, int], re.Match[str] | None], rule_of_group: list[int]) -> None:
        self.match = match
        self.rule_of_group = rule_of_group


def _scoped(pattern: str) -> str:
    """A pattern's leading global flags (``(?i)foo``) as flags of its own group (``(?i:foo)``), which
    is what they meant for that pattern alone."""
    found = _LEADING_FLAGS.match(pattern)
    if found is None:
        return pattern
    rest = pattern[found.end() :]
    end = "\n)" if "x" in found.group(1) else ")"  # a verbose pattern may end in a comment
    return f"(?{found.group(1)}:{rest}{end}"


def join_rules(rules: Sequence[Rule], flags: int) -> _Plan | None:
    """One expression trying `rules` in order, or None when a pattern cannot be joined unchanged."""
    end = "\n" if flags & re.VERBOSE else ""
    parts = []
    for number, (match, _action, _state) in enumerate(rules):
        pattern = getattr(match, "__self__", None)
        if not isinstance(pattern, re.Pattern) or not isinstance(pattern.pattern, str):
            return None
        source = _scoped(pattern.pattern)
        if _NOT_JOINABLE.search(source):
            return None
        parts.append(f"(?:{source}{end})(?P<_r{number}>)")
    try:
        joined = re.compile("|".join(parts), flags)
    except (re.error, RecursionError, OverflowError):
        return None
    rule_of_group = [-1] * (joined.groups + 1)
    for number in range(len(rules)):
        rule_of_group[joined.groupindex[f"_r{number}"]] = number
    return _Plan(joined.match, rule_of_group)


# Plans by the token definitions they were made from (a class's, or an instance's for the few lexers
# that build their own): id -> (the definitions, kept alive so the id stays theirs; plan per state).
_PLANS: dict[int, tuple[dict[str, list[Rule]], dict[str, _Plan | None]]] = {}


def _plans(tokendefs: dict[str, list[Rule]], flags: int) -> Callable[[str], _Plan | None]:
    held = _PLANS.get(id(tokendefs))
    if held is None or held[0] is not tokendefs:
        held = _PLANS[id(tokendefs)] = (tokendefs, {})
    made = held[1]

    def plan(state: str) -> _Plan | None:
        if state not in made:
            made[state] = join_rules(tokendefs[state], flags)
        return made[state]

    return plan


def _get_tokens_unprocessed(
    self: RegexLexer, text: str, stack: Sequence[str] = ("root",)
) -> Iterator[tuple[int, Any, str]]:
    """`RegexLexer.get_tokens_unprocessed`, with a state's rules tried by its plan when it has one."""
    tokendefs = self._tokens
    plan_of = _plans(tokendefs, self.flags)
    pos = 0
    statestack = list(stack)
    statetokens = tokendefs[statestack[-1]]
    plan = plan_of(statestack[-1])
    while True:
        found: re.Match[str] | None = None
        joined = plan is not None
        if plan is not None:
            found = plan.match(text, pos)
            if found is not None:
                number = plan.rule_of_group[found.lastindex or 0]
                if number >= 0:
                    rule = statetokens[number]
                else:  # never seen: the group that closed last is not a marker; search rule by rule
                    joined, found = False, None
        if not joined:
            for rule in statetokens:
                found = rule[0](text, pos)
                if found is not None:
                    break
        if found is None:
            # As Pygments: at the end of a line start again from "root", else one character of Error.
            if pos >= len(text):
                return
            if text[pos] == "\n":
                statestack = ["root"]
                statetokens = tokendefs["root"]
                plan = plan_of("root")
                yield pos, Whitespace, "\n"
            else:
                yield pos, Error, text[pos]
            pos += 1
            continue
        rexmatch, action, new_state = rule
        if type(action) is _TokenType:
            yield pos, action, found.group()
        elif action is not None:  # a callback reads the rule's own groups
            yield from action(self, rexmatch(text, pos) if joined else found)
        pos = found.end()
        if new_state is not None:
            _transition(statestack, new_state)
            statetokens = tokendefs[statestack[-1]]
            plan = plan_of(statestack[-1])


def _transition(statestack: list[str], new_state: Any) -> None:
    """Pygments' state change, in place: a tuple of pushes and pops, a negative count, or '#push'."""
    if isinstance(new_state, tuple):
        for state in new_state:
            if state == "#pop":
                if len(statestack) > 1:
                    statestack.pop()
            elif state == "#push":
                statestack.append(statestack[-1])
            else:
                statestack.append(state)
    elif isinstance(new_state, int):
        # pop, but keep at least one state on the stack
        if abs(new_state) >= len(statestack):
            del statestack[1:]
        else:
            del statestack[new_state:]
    elif new_state == "#push":
        statestack.append(statestack[-1])
    else:
        raise AssertionError(f"wrong state def: {new_state!r}")


_FAST_CLASSES: dict[type, type] = {}


def _fast_class(cls: type) -> type:
    """A subclass of `cls` searching with joined states, one per lexer class."""
    if cls not in _FAST_CLASSES:
        methods = {"get_tokens_unprocessed": _get_tokens_unprocessed, "__module__": __name__}
        _FAST_CLASSES[cls] = type(cls.__name__, (cls,), methods)
    return _FAST_CLASSES[cls]


def fast_lexer(lexer: Lexer) -> Lexer:
    """`lexer` with its states' rules joined (a lexer of a subclass, the same options), or `lexer` itself
    when its class does not use `RegexLexer`'s search as it is."""
    search = getattr(type(lexer), "get_tokens_unprocessed", None)
    if not isinstance(lexer, RegexLexer) or search is not RegexLexer.get_tokens_unprocessed:
        return lexer
    cls = type(lexer)
    return _fast_class(cls)(**lexer.options)
