"""The TOSEM 2023 vocabulary: the five dimensions of the study, the spellings its workbooks use for their
categories (synonyms, misspellings, compound cells) and how a cell's text is resolved to a category of the
study's codebook (:class:`Vocabulary`). Pure: no Django. `tosem_workbook.py` reads the workbooks with it
and re-exports its public names."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

ISSUE_TYPE = "issue_type"
DISTRIBUTED_SPECIFIC = "distributed_specific"
SYMPTOM = "symptom"
FIX_PATTERN = "fix_pattern"
HOWTO_TOPIC = "howto_topic"
DIMENSIONS = (ISSUE_TYPE, DISTRIBUTED_SPECIFIC, SYMPTOM, FIX_PATTERN, HOWTO_TOPIC)

PENDING_LABEL = "pending"
PENDING_SPELLINGS = frozenset({"pending", "pedning", "pening"})


_COMPOUND_SEPARATOR = re.compile(r" & | / ")
_WHITESPACE = re.compile(r"\s+")

# Spelling variants met in the real workbooks, by dimension: normalised variant -> normalised name.
# Each is a misspelling, a change of case or punctuation, an abbreviation, or a pasted header; none
# changes meaning. Targets may be compound (split like a cell) or another synonym.
TOSEM_SPELLING_VARIANTS: Mapping[str, Mapping[str, str]] = {
    ISSUE_TYPE: {
        "how-to topic": "how-to question",  # the header of column C pasted into column B
    },
    DISTRIBUTED_SPECIFIC: {"1": "yes", "0": "no"},
    SYMPTOM: {
        "program failures": "program failure",
        "hang & timeout": "hang and timeout",
        "installation/build failure": "installation & build failure",
        "checkpoint nonfunctioning": "checkpoint unfunctioning",
        "tensosr mismatch": "tensor mismatch",
        "unexpected intermediate results": "unexpected intermediate result",
        "invalid ragument": "invalid argument",
    },
    FIX_PATTERN: {
        "fix behvior logic": "fix behavior logic",
        "fix behaviour logic": "fix behavior logic",
        "fx communication configuration": "fix communication configuration",
        "fix communication coonfiguration": "fix communication configuration",
        "fix netowrk setting": "fix network setting",
        "fix dependency versions": "fix dependency version",
        "install missing dpendency": "install missing dependency",
        "fix device assignemnt": "fix device assignment",
        "fix framework verion": "fix framework version",
        "fix data partition/batch size": "fix batch size/data partition",
        "fix batch size": "fix batch size/data partition",
        "framework version": "fix framework version",
        "fix dependency installatiovn/version": "fix dependency installation & fix dependency version",
        "fix batch size/data partition/learning rate": "fix batch size/data partition & fix learning rate",
    },
    HOWTO_TOPIC: {
        "parallelism": "parallelization",
        "device usgae": "device usage",
        "environmrnt configuration": "environment configuration",
        "communitive operation": "communitive operator",
        "profile": "performance profile",
        "efficiency": "efficiency & accuracy",
        "memory": "memory & utilization",
    },
}

# Leaf names of the reliability rounds that the study retired when it settled the final taxonomy.
# Each maps to the category that every post so labelled in a round's Final sheet received in
# final_categories.xlsx (checked by scripts/build_tosem23_fixtures.py): applying them is the codebook
# merge the study made, as Taxonomist's "merge" remaps labels.
TOSEM_RETIRED_NAMES: Mapping[str, Mapping[str, str]] = {
    SYMPTOM: {
        "unexpected result": "unexpected intermediate result",
        "structure mismatch": "model loading failure",
        "unexpected communication": "others",
        "context error": "others",
        "context issue": "others",
        "invalid argument": "others",
        "argument mismatch": "others",
        "syntext error": "others",
    },
}

#: Name of the fix-pattern category that gathers the patterns named fewer than four times.
OTHER_FIX_PATTERN = "other"

# Fix patterns of final_categories.xlsx named fewer than four times (after spelling variants and
# splitting compounds): they map to the category "other"; the build script keeps their wording in the
# memo and checks that this list is exactly the rare patterns of the final workbook.
TOSEM_RARE_FIX_PATTERNS: frozenset[str] = frozenset(
    {
        "change model structure",
        "change packaging tool",
        "clone third-party libraries",
        "deallocate useless memory",
        "disable checkpoint callback",
        "do not clear sessions",
        "fix cudnn setting",
        "fix data path",
        "fix data shape",
        "fix data storage",
        "fix dataset download",
        "fix dependency library usage",
        "fix evaluate generator",
        "fix evaluation code",
        "fix function wrapping",
        "fix hardware-accelerated gpu scheduling",
        "fix inference api usage",
        "fix initialize method",
        "fix ipython",
        "fix list appendance",
        "fix load weight function",
        "fix logger config",
        "fix metric usage",
        "fix model api usage",
        "fix model structure",
        "fix num_worker",
        "fix output file path",
        "fix package import",
        "fix package name",
        "fix platform configuration",
        "fix seed setting",
        "fix tensor dtype",
        "fix tensor intialization api usage",
        "fix tensor shape",
        "fix virtual environment name",
        "initialize placeholders",
        "initialize variables",
        "kill useless processes on servers",
        "name the model",
        "reinstall framework in a fresh environment",
        "rename metrics",
        "restart servers",
        "run docker in privileged mode",
        "use buffer",
        "use docker",
        "use spawn mode in multiprocessing",
        "use the first layer of the model",
        "use tmux",
    }
)


def tosem_synonyms() -> dict[str, dict[str, str]]:
    """All synonyms for the TOSEM 2023 codebook: spelling variants, retired names, rare fix patterns."""
    merged: dict[str, dict[str, str]] = {dimension: {} for dimension in DIMENSIONS}
    for table in (TOSEM_SPELLING_VARIANTS, TOSEM_RETIRED_NAMES):
        for dimension, aliases in table.items():
            merged[dimension].update(aliases)
    merged[FIX_PATTERN].update(dict.fromkeys(sorted(TOSEM_RARE_FIX_PATTERNS), OTHER_FIX_PATTERN))
    return merged


class TosemLayoutError(ValueError):
    """The workbook is not in the TOSEM layout (missing sheet, unexpected header)."""


class UnresolvedLabel(ValueError):
    """A label text that names no category (raised by :class:`Vocabulary` lookups)."""


def normalise_label(value: object) -> str:
    """The comparable form of a label cell: ``""`` for empty, else Unicode NFKC, case-folded, with
    runs of whitespace (non-breaking spaces included) collapsed to one space and the ends stripped.
    Whole numbers read as floats (``1.0``) become ``"1"``.

    >>> normalise_label("  Hang &\\u00a0Timeout ")
    'hang & timeout'
    """
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(value).casefold()
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    text = unicodedata.normalize("NFKC", str(value))
    return _WHITESPACE.sub(" ", text).strip().casefold()


# --- Vocabulary ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Node:
    key: str
    name: str  # normalised
    parent: str | None
    children: tuple[str, ...]


@dataclass(frozen=True)
class _Dimension:
    key: str
    multiple: bool
    nodes: Mapping[str, _Node]
    roots: tuple[str, ...]
    aliases: Mapping[str, str]

    def canonical(self, text: str) -> str:
        """``text`` (normalised) with synonym chains followed; validated acyclic at construction."""
        seen: set[str] = set()
        while text in self.aliases and text not in seen:
            seen.add(text)
            text = self.aliases[text]
        return text

    def child_named(self, parent: str | None, text: str) -> str | None:
        """Key of the category named ``text`` among the roots (``parent`` None) or ``parent``'s children."""
        siblings = self.roots if parent is None else self.nodes[parent].children
        name = self.canonical(text)
        for key in siblings:
            if self.nodes[key].name == name:
                return key
        return None

    def describe(self, parent: str | None) -> str:
        if parent is None:
            return f"the top level of {self.key}"
        return f"{self.nodes[parent].name!r}"


class Vocabulary:
    """The category names (and synonyms) of a codebook, resolved to category keys.

    Build with :meth:`from_codebook`. Lookups raise :class:`UnresolvedLabel` with a message that
    names the value and where it was looked for.
    """

    def __init__(self, dimensions: Mapping[str, _Dimension], fault_key: str, howto_key: str) -> None:
        self._dimensions = dict(dimensions)
        self.fault_key = fault_key
        self.howto_key = howto_key

    @classmethod
    def from_codebook(
        cls, codebook: Mapping[str, Any], synonyms: Mapping[str, Mapping[str, str]] | None = None
    ) -> Vocabulary:
        """Index ``codebook`` (the docs/design.md §5 JSON structure, already parsed) with ``synonyms``
        (dimension key -> {variant: name or another variant}).

        Raises ``ValueError`` when a TOSEM dimension is missing, when ``symptom`` / ``howto_topic``
        lack the ``applies_when`` that tells fault from how-to, when a category key is
        :data:`PENDING_LABEL`, when two siblings share a name, or when a synonym is itself a category
        name, loops, or does not lead to category names.
        """
        synonyms = synonyms or {}
        raw_dimensions = {d.get("key"): d for d in codebook.get("dimensions", [])}
        missing = [key for key in DIMENSIONS if key not in raw_dimensions]
        if missing:
            raise ValueError(f"codebook lacks the TOSEM dimension(s) {', '.join(missing)}")
        unknown = sorted(set(synonyms) - set(DIMENSIONS))
        if unknown:
            raise ValueError(f"synonyms given for unknown dimension(s) {', '.join(unknown)}")
        dimensions = {key: _index_dimension(raw_dimensions[key], synonyms.get(key, {})) for key in DIMENSIONS}
        fault_key = _applies_when(raw_dimensions[SYMPTOM])
        howto_key = _applies_when(raw_dimensions[HOWTO_TOPIC])
        for key in (fault_key, howto_key):
            if key not in dimensions[ISSUE_TYPE].nodes:
                raise ValueError(f"applies_when names {key!r}, which is no category of {ISSUE_TYPE}")
        if fault_key == howto_key:
            raise ValueError(f"{SYMPTOM} and {HOWTO_TOPIC} apply on the same issue type {fault_key!r}")
        return cls(dimensions, fault_key, howto_key)

    def dimension(self, key: str) -> _Dimension:
        return self._dimensions[key]

    def resolve(self, dimension: str, text: str, parent: str | None = None) -> str:
        """Key of the category named ``text`` (normalised) at the top level of ``dimension`` or
        under ``parent``."""
        dim = self._dimensions[dimension]
        key = dim.child_named(parent, text)
        if key is None:
            raise UnresolvedLabel(f"{text!r} names no category under {dim.describe(parent)}")
        return key

    def resolve_many(self, dimension: str, text: str) -> tuple[str, ...]:
        """Keys named by ``text`` in a flat dimension: one name, or names joined by `` & `` / `` / ``
        (split only when the whole text is not a name). All parts must resolve."""
        dim = self._dimensions[dimension]
        whole = dim.child_named(None, text)
        if whole is not None:
            return (whole,)
        canonical = dim.canonical(text)
        parts = [part.strip() for part in _COMPOUND_SEPARATOR.split(canonical)]
        if not dim.multiple or len(parts) == 1:
            raise UnresolvedLabel(f"{text!r} names no category of {dimension}")
        keys: list[str] = []
        failed: list[str] = []
        for part in parts:
            key = dim.child_named(None, part)
            if key is None:
                failed.append(part)
            elif key not in keys:
                keys.append(key)
        if failed:
            names = ", ".join(repr(part) for part in failed)
            raise UnresolvedLabel(f"{text!r}: {names} names no category of {dimension}")
        return tuple(keys)

    def has_children(self, dimension: str, key: str) -> bool:
        return bool(self._dimensions[dimension].nodes[key].children)

    def has_grandchildren(self, dimension: str, key: str) -> bool:
        nodes = self._dimensions[dimension].nodes
        return any(nodes[child].children for child in nodes[key].children)

    def name_of(self, dimension: str, key: str) -> str:
        return self._dimensions[dimension].nodes[key].name


def _applies_when(raw: Mapping[str, Any]) -> str:
    condition = raw.get("applies_when") or {}
    value = condition.get(ISSUE_TYPE) if isinstance(condition, Mapping) else None
    if not isinstance(value, str):
        raise ValueError(f"dimension {raw.get('key')!r} needs applies_when {{{ISSUE_TYPE!r}: ...}}")
    return value


def _index_dimension(raw: Mapping[str, Any], synonyms: Mapping[str, str]) -> _Dimension:
    key = str(raw["key"])
    nodes: dict[str, _Node] = {}

    def visit(categories: Sequence[Mapping[str, Any]], parent: str | None) -> tuple[str, ...]:
        keys: list[str] = []
        names: set[str] = set()
        for category in categories:
            category_key = str(category["key"])
            name = normalise_label(category["name"])
            if category_key == PENDING_LABEL or name in PENDING_SPELLINGS:
                raise ValueError(f"{key}: category {category_key!r} collides with the pending marker")
            if category_key in nodes:
                raise ValueError(f"{key}: category key {category_key!r} is used twice")
            if name in names:
                raise ValueError(f"{key}: two categories named {name!r} under the same parent")
            names.add(name)
            nodes[category_key] = _Node(category_key, name, parent, ())
            children = visit(category.get("children") or [], category_key)
            nodes[category_key] = _Node(category_key, name, parent, children)
            keys.append(category_key)
        return tuple(keys)

    roots = visit(raw.get("categories") or [], None)
    all_names = {node.name for node in nodes.values()}
    aliases = {normalise_label(variant): normalise_label(target) for variant, target in synonyms.items()}
    dimension = _Dimension(key, bool(raw.get("multiple", False)), nodes, roots, aliases)
    for variant in aliases:
        if variant in all_names:
            raise ValueError(f"{key}: synonym {variant!r} is itself a category name")
        _check_alias(dimension, variant, all_names)
    return dimension


def _check_alias(dimension: _Dimension, variant: str, names: set[str]) -> None:
    seen = {variant}
    text = dimension.aliases[variant]
    while text in dimension.aliases:
        if text in seen:
            raise ValueError(f"{dimension.key}: synonyms loop through {variant!r}")
        seen.add(text)
        text = dimension.aliases[text]
    if text in names:
        return
    parts = [part.strip() for part in _COMPOUND_SEPARATOR.split(text)]
    if dimension.multiple and len(parts) > 1 and all(dimension.canonical(p) in names for p in parts):
        return
    raise ValueError(f"{dimension.key}: synonym {variant!r} leads to {text!r}, which names no category")
