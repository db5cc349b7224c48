"""Screening rules: which mined items enter a study, and which rule turned each other one away.

Pure module (no Django). A :class:`ScreeningRules` is checked against an :class:`ItemRecord` in a
fixed order, and :meth:`ScreeningRules.screen` returns the name of the first rule the item fails
(``None`` when it passes), so an import can report per-rule counts:

1. ``state``: ``metadata["state"]`` must be one of ``states`` (GitHub ``open``/``closed``), if given;
2. ``accepted_only``: the question has an accepted answer (``metadata["accepted_answer_id"]`` or an
   answer with ``is_accepted``);
3. ``labels_exclude``: no tag/label matches an excluded pattern;
4. ``labels_include``: some tag/label matches an included pattern, if any are given;
5. ``tags`` / ``keywords``: the item satisfies at least one :class:`Selector`, if any are given. A
   selector asks for any of ``tags_any``, all of ``tags_all`` and any of ``keywords``; an empty part
   asks nothing. When no selector is satisfied the result is ``keywords`` if some selector's tag
   conditions held (only the keyword was missing), else ``tags``.

Matching: tags and labels compare case-insensitively; a pattern with ``*`` or ``?`` is a wildcard
pattern (``*docs*``), any other is an exact name (so ``[bug]`` or ``module: ddp`` mean themselves).
Keywords and phrases match case-insensitively in the title and body as whole words, where a word is
letters, digits, ``_`` and ``-`` (so ``multi-gpu`` does not match inside ``multi-gpus`` and
``distributed`` does not match inside ``non-distributed``), and the spaces of a phrase match any
run of whitespace. This is the tokenisation of the TOSEM 2023 mining script (``extract_post.py``),
which split text on whitespace after removing punctuation other than ``-`` and ``_``. HTML bodies
are searched as text (tags removed, entities decoded); ``search_code=False`` leaves out code blocks
(``<pre>`` and fenced Markdown code) and ``search_urls=False`` leaves out ``http(s)://`` URLs, as
that script did for Stack Overflow.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property

from apps.corpus.records import ItemRecord

RULE_STATE = "state"
RULE_ACCEPTED_ONLY = "accepted_only"
RULE_LABELS_EXCLUDE = "labels_exclude"
RULE_LABELS_INCLUDE = "labels_include"
RULE_TAGS = "tags"
RULE_KEYWORDS = "keywords"
RULES_IN_ORDER = (
    RULE_STATE,
    RULE_ACCEPTED_ONLY,
    RULE_LABELS_EXCLUDE,
    RULE_LABELS_INCLUDE,
    RULE_TAGS,
    RULE_KEYWORDS,
)

_WORD_BEFORE = r"(?<![\w-])"
_WORD_AFTER = r"(?![\w-])"
_HTML_PRE = re.compile(r"<pre\b.*?</pre\s*>", re.IGNORECASE | re.DOTALL)
_HTML_TAG = re.compile(r"<[^>]*>")
_MARKDOWN_FENCE = re.compile(
    r"^ {0,3}(`{3,}|~{3,})[^\n]*\n.*?(?:^ {0,3}\1[`~]*[ \t]*$|\Z)", re.MULTILINE | re.DOTALL
)
_URL = re.compile(r"https?://\S+", re.IGNORECASE)


def keyword_pattern(keywords: Iterable[str]) -> re.Pattern[str] | None:
    """One regex matching any keyword or phrase as whole words (see the module docstring)."""
    parts = []
    for keyword in keywords:
        words = keyword.split()
        if not words:
            raise ValueError(f"empty keyword {keyword!r}")
        parts.append(r"\s+".join(re.escape(word) for word in words))
    if not parts:
        return None
    # Longest first so that the reported match is the most specific phrase.
    parts.sort(key=len, reverse=True)
    return re.compile(_WORD_BEFORE + "(?:" + "|".join(parts) + ")" + _WORD_AFTER, re.IGNORECASE)


def _pattern_matcher(pattern: str) -> re.Pattern[str]:
    text = pattern.strip().casefold()
    if "*" in text or "?" in text:
        regex = re.escape(text).replace(r"\*", ".*").replace(r"\?", ".")
    else:
        regex = re.escape(text)
    return re.compile(regex + r"\Z", re.DOTALL)


def first_matching_label(labels: Iterable[str], patterns: Sequence[str]) -> str | None:
    """The first of ``labels`` that matches one of ``patterns`` (case-insensitive; ``*``/``?``
    wildcards), else ``None``."""
    matchers = [_pattern_matcher(pattern) for pattern in patterns]
    for label in labels:
        folded = label.strip().casefold()
        if any(matcher.match(folded) for matcher in matchers):
            return label
    return None


def searchable_text(record: ItemRecord, search_code: bool = True, search_urls: bool = True) -> str:
    """Title and body as plain text, the way keyword rules see them."""
    body = record.body
    if record.body_format == "html":
        if not search_code:
            body = _HTML_PRE.sub(" ", body)
        body = html.unescape(_HTML_TAG.sub(" ", body))
    elif not search_code and record.body_format == "markdown":
        body = _MARKDOWN_FENCE.sub(" ", body)
    text = f"{html.unescape(record.title)}\n{body}"
    if not search_urls:
        text = _URL.sub(" ", text)
    return text


@dataclass(frozen=True)
class Selector:
    """One way for an item to qualify: any of ``tags_any``, all of ``tags_all``, any of ``keywords``."""

    tags_any: tuple[str, ...] = ()
    tags_all: tuple[str, ...] = ()
    keywords: tuple[str, ...] = ()

    @cached_property
    def _keyword_regex(self) -> re.Pattern[str] | None:
        return keyword_pattern(self.keywords)

    def tags_hold(self, tags: Sequence[str]) -> bool:
        if self.tags_any and first_matching_label(tags, self.tags_any) is None:
            return False
        return all(first_matching_label(tags, (required,)) is not None for required in self.tags_all)

    def keywords_hold(self, text: str) -> bool:
        regex = self._keyword_regex
        return regex is None or regex.search(text) is not None


@dataclass(frozen=True)
class ScreeningRules:
    """A screening rule set; see the module docstring for the order and meaning of the rules."""

    name: str = "custom"
    selectors: tuple[Selector, ...] = ()
    labels_include: tuple[str, ...] = ()
    labels_exclude: tuple[str, ...] = ()
    states: tuple[str, ...] = ()
    accepted_only: bool = False
    search_code: bool = True
    search_urls: bool = True
    description: str = field(default="", compare=False)

    @classmethod
    def simple(
        cls,
        *,
        keywords: Sequence[str] = (),
        tags_any: Sequence[str] = (),
        tags_all: Sequence[str] = (),
        labels_include: Sequence[str] = (),
        labels_exclude: Sequence[str] = (),
        states: Sequence[str] = (),
        accepted_only: bool = False,
        name: str = "custom",
    ) -> ScreeningRules:
        """Rules with at most one selector, as command-line options (``--keyword``, ``--tag``) give."""
        selectors: tuple[Selector, ...] = ()
        if keywords or tags_any or tags_all:
            selectors = (Selector(tuple(tags_any), tuple(tags_all), tuple(keywords)),)
        return cls(
            name=name,
            selectors=selectors,
            labels_include=tuple(labels_include),
            labels_exclude=tuple(labels_exclude),
            states=tuple(states),
            accepted_only=accepted_only,
        )

    @property
    def is_empty(self) -> bool:
        """True when the rules let every item through."""
        return not (
            self.selectors or self.labels_include or self.labels_exclude or self.states or self.accepted_only
        )

    def screen(self, record: ItemRecord) -> str | None:
        """The name of the first rule ``record`` fails (one of :data:`RULES_IN_ORDER`), or ``None``."""
        if self.states:
            state = str(record.metadata.get("state") or "").casefold()
            if state not in {allowed.casefold() for allowed in self.states}:
                return RULE_STATE
        if self.accepted_only and not record.has_accepted_answer:
            return RULE_ACCEPTED_ONLY
        if self.labels_exclude and first_matching_label(record.tags, self.labels_exclude) is not None:
            return RULE_LABELS_EXCLUDE
        if self.labels_include and first_matching_label(record.tags, self.labels_include) is None:
            return RULE_LABELS_INCLUDE
        if not self.selectors:
            return None
        text: str | None = None
        tags_held_somewhere = False
        for selector in self.selectors:
            if not selector.tags_hold(record.tags):
                continue
            tags_held_somewhere = True
            if not selector.keywords:
                return None
            if text is None:
                text = searchable_text(record, self.search_code, self.search_urls)
            if selector.keywords_hold(text):
                return None
        return RULE_KEYWORDS if tags_held_somewhere else RULE_TAGS

    def accepts(self, record: ItemRecord) -> bool:
        return self.screen(record) is None


def screen(record: ItemRecord, rules: ScreeningRules) -> str | None:
    """``rules.screen(record)``: the name of the rule that filtered ``record`` out, or ``None``."""
    return rules.screen(record)


# --- TOSEM 2023 (Liu et al., "Rise of Distributed Deep Learning Training in the Big Model Era",
# ACM TOSEM 32(6), 2023, doi:10.1145/3597204). Taken from the replication package's mining scripts
# (gudiandian/TOSEM23-DistributedTraining, "Data collection code/", commit 57a305af):
# SO/extract_post.py and GitHub/script.sh. GitHub's Search API matched keywords in its own way
# (in:title,body); here they are matched as whole words, which approximates it.

TOSEM23_KEYWORDS: tuple[str, ...] = (
    "distributed",
    "distribute",
    "parallel",
    "paralleled",
    "parallelism",
    "multi-server",
    "multi-gpu",
    "data-parallel",
    "model-parallel",
    "dataparallel",
    "multi-machine",
    "multi_gpu",
    "multi-gpus",
    "workers",
    "multiple gpus",
    "multiple machines",
    "multiple gpu",
    "multiple machine",
    "multiple servers",
    "multiple server",
)

TOSEM23_STACKOVERFLOW = ScreeningRules(
    name="tosem23-stackoverflow",
    selectors=(
        Selector(tags_any=("horovod",)),
        Selector(tags_any=("tensorflow", "pytorch", "keras"), keywords=TOSEM23_KEYWORDS),
    ),
    accepted_only=True,
    search_code=False,
    search_urls=False,
    description="Stack Overflow: tag horovod, or tag tensorflow/pytorch/keras and a keyword in title or "
    "prose of the body (code blocks and URLs left out); accepted answer only.",
)

TOSEM23_GITHUB_HOROVOD = ScreeningRules(
    name="tosem23-github-horovod",
    states=("closed",),
    # The script's query excluded these labels (its "awaiting response" term was malformed).
    labels_exclude=("bug", "enhancement", "wontfix", "awaiting response", "update docs"),
    description="horovod/horovod: closed issues without the labels bug, enhancement, wontfix, "
    "awaiting response, update docs.",
)

TOSEM23_GITHUB_KERAS = ScreeningRules(
    name="tosem23-github-keras",
    states=("closed",),
    selectors=(Selector(keywords=TOSEM23_KEYWORDS),),
    labels_exclude=("stale", "type:feature", "type:docs", "type:bug/performance"),
    description="keras-team/keras: closed issues with a keyword in title or body, without the labels "
    "stale, type:feature, type:docs, type:bug/performance.",
)

TOSEM23_GITHUB_PYTORCH = ScreeningRules(
    name="tosem23-github-pytorch",
    states=("closed",),
    labels_include=("module: ddp",),
    labels_exclude=("enhancement", "feature", "function request"),
    description="pytorch/pytorch: closed issues labelled 'module: ddp', without the labels enhancement, "
    "feature, function request.",
)

TOSEM23_GITHUB_TENSORFLOW = ScreeningRules(
    name="tosem23-github-tensorflow",
    states=("closed",),
    labels_include=("type:others",),
    labels_exclude=(
        "type:feature",
        "type:bug",
        "type:docs-bug",
        "type:docs-feature",
        "stalled",
        "stat:awaiting response",
    ),
    description="tensorflow/tensorflow: closed issues labelled type:others, without the labels "
    "type:feature, type:bug, type:docs-bug, type:docs-feature, stalled, stat:awaiting response.",
)

PRESETS: dict[str, ScreeningRules] = {
    rules.name: rules
    for rules in (
        TOSEM23_STACKOVERFLOW,
        TOSEM23_GITHUB_HOROVOD,
        TOSEM23_GITHUB_KERAS,
        TOSEM23_GITHUB_PYTORCH,
        TOSEM23_GITHUB_TENSORFLOW,
    )
}
