"""Pygments' regular-expression lexers, each state trying only the rules that can match at the next character.

Pure module (no Django). Pygments' ``RegexLexer`` tries a state's rules one Python call at a time until
one matches: Python's lexer makes about 35 such calls per token, and highlighting the code of an item
body was more than half of its rendering (docs/decisions/0012-lexer-rules-by-first-character.md).

A rule can only match where the text goes on with a character its pattern can start with, unless it can
match the empty string. So for each ASCII character met in a state, the state keeps the list of its rules
that can start with that character, in their order, and tries only those, as Pygments tries them all:
the rules left out cannot match there, so the first rule that matches is the same, with the same match,
and the token stream is the same, token for token (``tests/corpus/test_lexing.py`` compares it with
Pygments' own for every lexer). Python's lexer tries about 3 rules per token instead of 35.

The characters a pattern can start with are read from ``re``'s own parse of it, over-approximated: an
anchor or lookaround is passed over, a negated class stands for any character, and a construct the
reading does not know (or a pattern that can match the empty string) makes the rule one that is always
tried. At a character beyond ASCII, every rule is tried. A lexer class that overrides
``get_tokens_unprocessed`` is used as it is.
"""

from __future__ import annotations

import re
import re._constants as sre  # type: ignore[import-not-found]  # the parse tree's operation codes
import re._parser as sre_parse  # type: ignore[import-not-found]
import threading
from collections.abc import Callable, Iterator, Sequence
from functools import cache, lru_cache
from typing import Any

from pygments.lexer import Lexer, RegexLexer
from pygments.token import Error, Whitespace, _TokenType

# A rule as `RegexLexer.process_tokendef` leaves it: (compiled pattern's `match`, action, new state).
Rule = tuple[Callable[[str, int], "re.Match[str] | None"], Any, Any]

# --- the characters a pattern can start with ------------------------------------------------------------

_ASCII = frozenset(chr(code) for code in range(128))
_CATEGORIES = {
    sre.CATEGORY_DIGIT: r"\d",
    sre.CATEGORY_NOT_DIGIT: r"\D",
    sre.CATEGORY_SPACE: r"\s",
    sre.CATEGORY_NOT_SPACE: r"\S",
    sre.CATEGORY_WORD: r"\w",
    sre.CATEGORY_NOT_WORD: r"\W",
}
_REPEATS = (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT)
_ZERO_WIDTH = (sre.AT, sre.ASSERT, sre.ASSERT_NOT)


class _Unknown(Exception):
    """A construct the reading of first characters does not know: the rule is always tried."""


@cache
def _ascii_matching(source: str, ignore_case: bool) -> frozenset[str]:
    """The ASCII characters one character's expression matches, as ``re`` itself decides (case folding
    included: under IGNORECASE the Kelvin sign matches ``k``)."""
    expression = re.compile(source, re.IGNORECASE if ignore_case else 0)
    return frozenset(char for char in _ASCII if expression.fullmatch(char))


def _one_character(op: Any, av: Any, ignore_case: bool) -> frozenset[str]:
    if op is sre.LITERAL:
        if not ignore_case:
            return frozenset(chr(av)) & _ASCII
        return _ascii_matching(re.escape(chr(av)), ignore_case)
    if op is sre.RANGE:
        if not ignore_case:
            return frozenset(chr(code) for code in range(av[0], min(av[1], 127) + 1))
        return _ascii_matching(f"[{re.escape(chr(av[0]))}-{re.escape(chr(av[1]))}]", ignore_case)
    if op is sre.CATEGORY and av in _CATEGORIES:
        return _ascii_matching(_CATEGORIES[av], ignore_case)
    raise _Unknown(op)


def _first(items: Any, flags: int) -> tuple[frozenset[str], bool]:
    """The ASCII characters a match of the sequence `items` can start with, and whether it can be empty."""
    found: frozenset[str] = frozenset()
    ignore_case = bool(flags & re.IGNORECASE)
    for op, av in items:
        if op is sre.LITERAL:
            return found | _one_character(op, av, ignore_case), False
        if op is sre.IN:
            if av and av[0][0] is sre.NEGATE:
                return _ASCII, False
            for item_op, item_av in av:
                found |= _one_character(item_op, item_av, ignore_case)
            return found, False
        if op is sre.NOT_LITERAL or op is sre.ANY:
            return _ASCII, False
        if op in _ZERO_WIDTH:
            continue  # the next item consumes the first character
        if op is sre.SUBPATTERN:
            _group, add, remove, inner = av
            chars, empty = _first(inner, (flags | add) & ~remove)
        elif op is sre.ATOMIC_GROUP:
            chars, empty = _first(av, flags)
        elif op is sre.BRANCH:
            chars, empty = frozenset(), False
            for alternative in av[1]:
                more, can_be_empty = _first(alternative, flags)
                chars, empty = chars | more, empty or can_be_empty
        elif op in _REPEATS:
            least, _most, inner = av
            chars, empty = _first(inner, flags)
            empty = empty or least == 0
        else:
            raise _Unknown(op)
        found |= chars
        if not empty:
            return found, False
    return found, True


def first_characters(match: Callable[[str, int], Any]) -> frozenset[str] | None:
    """The ASCII characters a rule's pattern can start a match with, or None when it may start with any
    character (it can match the empty string, or its reading met a construct it does not know)."""
    pattern = getattr(match, "__self__", None)
    if not isinstance(pattern, re.Pattern) or not isinstance(pattern.pattern, str):
        return None
    return _pattern_first_characters(pattern.pattern, pattern.flags)


@lru_cache(maxsize=8192)  # by source: a lexer that builds its states again (Inform 7's) reads them once
def _pattern_first_characters(source: str, flags: int) -> frozenset[str] | None:
    try:
        parsed = sre_parse.parse(source, flags)
        chars, empty = _first(parsed, parsed.state.flags)
    except Exception:  # re's private parser: whatever it raises, the rule is always tried
        return None
    return None if empty else chars


# --- each state's rules by the next character -----------------------------------------------------------


class _State:
    """A state's rules, and (filled as characters are met) the ones that can match before each."""

    __slots__ = ("by_char", "firsts", "rules")

    def __init__(self, rules: Sequence[Rule]) -> None:
        self.rules = rules
        self.by_char: dict[str, Sequence[Rule]] = {}
        self.firsts: list[frozenset[str] | None] | None = None

    def for_char(self, char: str) -> Sequence[Rule]:
        """The rules that can match where the text goes on with `char` (every rule beyond ASCII)."""
        if char not in _ASCII:
            return self.rules
        if self.firsts is None:
            self.firsts = [first_characters(rule[0]) for rule in self.rules]
        chosen = [
            rule
            for rule, first in zip(self.rules, self.firsts, strict=True)
            if first is None or char in first
        ]
        self.by_char[char] = chosen
        return chosen


# The states by the token definitions they were made from (a class's, or those a lexer builds for itself:
# Inform 7's builds new ones for each embedded passage): id -> (the definitions, kept alive so that the id
# stays theirs while they are here; the states by name). The oldest are let go beyond `_KEPT`.
_STATES: dict[int, tuple[dict[str, list[Rule]], dict[str, _State]]] = {}
_KEPT = 64
_STATES_LOCK = threading.Lock()  # a page's threads may render at once; only a miss takes it


def _states(tokendefs: dict[str, list[Rule]]) -> dict[str, _State]:
    """The states made so far from `tokendefs`, by name (each made when first entered: see `_state`)."""
    held = _STATES.get(id(tokendefs))
    if held is not None and held[0] is tokendefs:
        return held[1]
    states: dict[str, _State] = {}
    with _STATES_LOCK:
        while len(_STATES) >= _KEPT:
            del _STATES[next(iter(_STATES))]
        _STATES[id(tokendefs)] = (tokendefs, states)
    return states


def _state(states: dict[str, _State], tokendefs: dict[str, list[Rule]], name: str) -> _State:
    """State `name`, made from the definitions when first entered (not all at once: a lexer may still be
    filling them in another thread, as Pygments' own search would then find too)."""
    state = states.get(name)
    if state is None:
        state = states[name] = _State(tokendefs[name])
    return state


def _get_tokens_unprocessed(
    self: RegexLexer, text: str, stack: Sequence[str] = ("root",)
) -> Iterator[tuple[int, Any, str]]:
    """`RegexLexer.get_tokens_unprocessed`, trying at each position the rules that can match there."""
    tokendefs = self._tokens
    states = _states(tokendefs)
    pos = 0
    statestack = list(stack)
    state = _state(states, tokendefs, statestack[-1])
    while True:
        char = text[pos : pos + 1]
        rules = state.by_char.get(char)
        if rules is None:
            rules = state.for_char(char)
        for rexmatch, action, new_state in rules:
            found = rexmatch(text, pos)
            if found is None:
                continue
            if type(action) is _TokenType:
                yield pos, action, found.group()
            elif action is not None:
                yield from action(self, found)
            pos = found.end()
            if new_state is not None:
                _transition(statestack, new_state)
                state = _state(states, tokendefs, statestack[-1])
            break
        else:
            # As Pygments: at the end of a line start again from "root", else one character of Error.
            if not char:
                return
            if char == "\n":
                statestack = ["root"]
                state = _state(states, tokendefs, "root")
                yield pos, Whitespace, "\n"
            else:
                yield pos, Error, char
            pos += 1


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
    """A subclass of `cls` with the search above, one per lexer class."""
    if cls not in _FAST_CLASSES:
        methods = {"get_tokens_unprocessed": _get_tokens_unprocessed, "__module__": __name__}
        _FAST_CLASSES[cls] = type(cls.__name__, (cls,), methods)
    return _FAST_CLASSES[cls]


def fast_lexer(lexer: Lexer) -> Lexer:
    """`lexer` trying only the rules that can match at each character (a lexer of a subclass, the same
    options), or `lexer` itself when its class does not use `RegexLexer`'s search as it is."""
    search = getattr(type(lexer), "get_tokens_unprocessed", None)
    if not isinstance(lexer, RegexLexer) or search is not RegexLexer.get_tokens_unprocessed:
        return lexer
    cls = type(lexer)
    return _fast_class(cls)(**lexer.options)
