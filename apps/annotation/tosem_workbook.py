"""Read the TOSEM 2023 labelling workbooks into plain label rows. Pure: no Django.

The replication package of Liu et al., "Rise of Distributed Deep Learning Training in the Big Model
Era: From a Software Engineering Perspective", ACM TOSEM 32(6), 2023 (doi:10.1145/3597204) holds two
workbook layouts, both read here:

- ``reliability_analysis_roundN.xlsx``: sheets ``label1`` and ``label2`` (one annotator each) and
  ``Final`` (the settled labels), with the columns ``Link, Issue Type, How-to topic, How-to
  sub-topic, Distributed-specified, Stage, Type, Leaf Category, Fix Pattern[, Memo]`` (``Final``
  headers end in " Final"; the memo column is optional). Read by :func:`read_reliability_workbook`.
- ``final_categories.xlsx``: sheet ``how-to questions`` (``Type, Link, how-to topic, sub-topic``) and
  sheet ``faults`` (``Type, Link, distributed-specific, stage, inner-category, leaf category, fix
  pattern``), where ``Type`` is the study's source (``GitHub-horovod``, ``SO-tensorflow & SO-keras``).
  Read by :func:`read_final_workbook`.

Output rows have the shape of the labels CSV of docs/design.md §5 (``item, annotator, dimension, label,
finding, round, memo``). The codebook must have the five dimensions named by the constants below;
which ``issue_type`` category means "fault" and which "how-to question" is read from the
``applies_when`` of ``symptom`` and ``howto_topic``.

Contract of the reading (docs/tosem23-import.md gives the full rules with examples):

- One sheet row is one *finding*. A post's findings are its rows, numbered 1, 2, ... in sheet order;
  a row without a link belongs to the post above it only when column A is merged over it (the study's
  way of writing a post with several faults). Rows without any label are skipped (a note is kept if
  they carry a link).
- Every label text goes through :func:`normalise_label`, then through the synonyms given to
  :meth:`Vocabulary.from_codebook` (chains allowed), and is looked up by name: flat dimensions among
  all categories, tree dimensions level by level under the parent named in the same row. A
  multi-choice dimension's text that is not one name is split on `` & `` and `` / ``.
- ``PENDING`` (and its misspellings ``PEDNING``, ``PENING``) gives the label :data:`PENDING_LABEL`,
  which an importer maps to the *pending* flag. A tree dimension whose lower level is PENDING is
  pending as a whole: the partial path is not kept (the database stores pending without a category).
- A tree dimension with an empty lower level is labelled with the deepest category given (``Function
  Support`` without a sub-topic is the category ``function-support``).
- Two shapes are repaired, each with a note naming the row: values shifted one column to the left (a
  stage without inner categories, its leaf in the inner-category column, the fix pattern in the leaf
  column and an empty fix-pattern column, as in round 4's ``label2``), and an inner-category cell
  that repeats the leaf of such a stage. A missing issue type is taken from the columns filled when
  only fault columns, or only how-to columns, hold values (also noted).
- Anything else that does not resolve is an *error* with sheet, row, column and value; the value is
  left out (never guessed) and the rest of the row is still read. A multi-choice value with one
  unresolved part is left out whole, so that a set is never silently shortened.

Errors about the workbook's shape (a missing sheet, a header that is not the TOSEM layout) raise
:class:`TosemLayoutError` instead: nothing sensible can be read from such a file.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import openpyxl
from openpyxl.utils import get_column_letter
from openpyxl.worksheet.worksheet import Worksheet

ISSUE_TYPE = "issue_type"
DISTRIBUTED_SPECIFIC = "distributed_specific"
SYMPTOM = "symptom"
FIX_PATTERN = "fix_pattern"
HOWTO_TOPIC = "howto_topic"
DIMENSIONS = (ISSUE_TYPE, DISTRIBUTED_SPECIFIC, SYMPTOM, FIX_PATTERN, HOWTO_TOPIC)

PENDING_LABEL = "pending"
PENDING_SPELLINGS = frozenset({"pending", "pedning", "pening"})

#: Annotator written for each sheet of a reliability workbook ("" for the settled ``Final`` sheet).
RELIABILITY_SHEETS: Mapping[str, str] = {"label1": "annotator1", "label2": "annotator2", "Final": ""}

FINAL_HOWTO_SHEET = "how-to questions"
FINAL_FAULT_SHEET = "faults"

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


# --- Rows ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LabelRow:
    """One row of a labels CSV (docs/design.md §5). ``annotator`` is "" for settled labels; ``round`` is
    None when the labels belong to no round."""

    item: str
    annotator: str
    dimension: str
    label: str
    finding: int
    round: int | None
    memo: str = ""
    raw: str = ""  # the cell text the label was read from (provenance; not a labels-CSV column)


@dataclass(frozen=True)
class CellIssue:
    """An error (value left out) or a note (value repaired) about one cell; ``row`` is the sheet row
    (1-based, as Excel shows it) and ``column`` its letter."""

    sheet: str
    row: int
    column: str
    value: str
    message: str
    item: str = ""

    def __str__(self) -> str:
        return f"{self.sheet}!{self.column}{self.row} {self.value!r}: {self.message}"


@dataclass(frozen=True)
class SheetResult:
    sheet: str
    annotator: str
    findings: int
    items: tuple[str, ...]  # every post with a link in the sheet, in order, labelled or not
    rows: tuple[LabelRow, ...]
    errors: tuple[CellIssue, ...]
    notes: tuple[CellIssue, ...]


@dataclass(frozen=True)
class WorkbookResult:
    """Everything read from one workbook, sheet by sheet, in reading order."""

    path: str
    sheets: tuple[SheetResult, ...]
    # The final workbook's ``Type`` column per post (e.g. "SO-tensorflow & SO-keras"); empty otherwise.
    sources: Mapping[str, str]

    @property
    def rows(self) -> tuple[LabelRow, ...]:
        return tuple(row for sheet in self.sheets for row in sheet.rows)

    @property
    def errors(self) -> tuple[CellIssue, ...]:
        return tuple(issue for sheet in self.sheets for issue in sheet.errors)

    @property
    def notes(self) -> tuple[CellIssue, ...]:
        return tuple(issue for sheet in self.sheets for issue in sheet.notes)

    def sheet(self, name: str) -> SheetResult:
        for sheet in self.sheets:
            if sheet.sheet == name:
                return sheet
        raise KeyError(name)


@dataclass(frozen=True)
class _Cell:
    column: str  # "" when the value is implied by the sheet (the final workbook's issue type)
    raw: object

    @property
    def text(self) -> str:
        return normalise_label(self.raw)

    @property
    def shown(self) -> str:
        return "" if self.raw is None else str(self.raw)


_EMPTY = _Cell("", None)


@dataclass(frozen=True)
class _Finding:
    """The cells of one finding, by meaning, whatever the layout."""

    issue_type: _Cell = _EMPTY
    topic: _Cell = _EMPTY
    subtopic: _Cell = _EMPTY
    distributed: _Cell = _EMPTY
    stage: _Cell = _EMPTY
    inner: _Cell = _EMPTY
    leaf: _Cell = _EMPTY
    fix: _Cell = _EMPTY

    def fault_cells(self) -> tuple[_Cell, ...]:
        return (self.distributed, self.stage, self.inner, self.leaf, self.fix)

    def howto_cells(self) -> tuple[_Cell, ...]:
        return (self.topic, self.subtopic)


class _Collector:
    def __init__(self, sheet: str, row: int, item: str) -> None:
        self.sheet = sheet
        self.row = row
        self.item = item
        self.labels: list[tuple[str, str, str]] = []
        self.errors: list[CellIssue] = []
        self.notes: list[CellIssue] = []

    def error(self, cell: _Cell, message: str) -> None:
        self.errors.append(CellIssue(self.sheet, self.row, cell.column, cell.shown, message, self.item))

    def note(self, cell: _Cell, message: str) -> None:
        self.notes.append(CellIssue(self.sheet, self.row, cell.column, cell.shown, message, self.item))

    def add(self, dimension: str, label: str, cell: _Cell) -> None:
        self.labels.append((dimension, label, cell.shown))


def _parse_finding(finding: _Finding, vocabulary: Vocabulary, out: _Collector) -> None:
    """Append the labels of one finding to ``out`` (errors and notes too). See the module docstring."""
    issue_type = _issue_type(finding, vocabulary, out)
    if issue_type is None:
        return
    out.add(ISSUE_TYPE, issue_type, finding.issue_type)
    if issue_type == vocabulary.fault_key:
        for cell in finding.howto_cells():
            if cell.text:
                out.error(cell, "how-to topic on a fault row: left out")
        _fault(finding, vocabulary, out)
    elif issue_type == vocabulary.howto_key:
        for cell in finding.fault_cells():
            if cell.text:
                out.error(cell, "fault column filled on a how-to row: left out")
        _path(vocabulary, HOWTO_TOPIC, (finding.topic, finding.subtopic), out)
    else:
        for cell in (*finding.howto_cells(), *finding.fault_cells()):
            if cell.text:
                out.error(cell, f"issue type {issue_type!r} takes no symptom, fix or topic: left out")


def _issue_type(finding: _Finding, vocabulary: Vocabulary, out: _Collector) -> str | None:
    cell = finding.issue_type
    if cell.text:
        try:
            return vocabulary.resolve(ISSUE_TYPE, cell.text)
        except UnresolvedLabel as exc:
            out.error(cell, f"{exc}: the row is left out")
            return None
    has_fault = any(c.text for c in finding.fault_cells())
    has_howto = any(c.text for c in finding.howto_cells())
    if has_fault and not has_howto:
        out.note(cell, "issue type empty; fault columns filled: read as a fault")
        return vocabulary.fault_key
    if has_howto and not has_fault:
        out.note(cell, "issue type empty; how-to columns filled: read as a how-to question")
        return vocabulary.howto_key
    out.error(cell, "issue type empty and not implied by the other columns: the row is left out")
    return None


def _fault(finding: _Finding, vocabulary: Vocabulary, out: _Collector) -> None:
    if finding.distributed.text:
        try:
            key = vocabulary.resolve(DISTRIBUTED_SPECIFIC, finding.distributed.text)
            out.add(DISTRIBUTED_SPECIFIC, key, finding.distributed)
        except UnresolvedLabel as exc:
            out.error(finding.distributed, str(exc))
    inner, leaf, fix = finding.inner, finding.leaf, finding.fix
    stage_key = _stage_without_inner_level(finding.stage, vocabulary)
    if stage_key is not None and inner.text:
        # A stage whose children are leaves has no inner category: repair the two known shapes.
        symptoms = vocabulary.dimension(SYMPTOM)
        leaf_here = symptoms.child_named(stage_key, inner.text)
        if leaf.text and symptoms.canonical(inner.text) == symptoms.canonical(leaf.text):
            out.note(inner, "inner category repeats the leaf of a stage without inner categories: ignored")
            inner = _EMPTY
        elif leaf_here is not None and not fix.text:
            out.note(inner, "values shifted one column left (leaf in inner category, fix in leaf): realigned")
            inner, leaf, fix = _EMPTY, inner, leaf
    _path(vocabulary, SYMPTOM, (finding.stage, inner, leaf), out)
    if fix.text:
        if fix.text in PENDING_SPELLINGS:
            out.add(FIX_PATTERN, PENDING_LABEL, fix)
        else:
            try:
                for key in vocabulary.resolve_many(FIX_PATTERN, fix.text):
                    out.add(FIX_PATTERN, key, fix)
            except UnresolvedLabel as exc:
                out.error(fix, str(exc))


def _stage_without_inner_level(stage: _Cell, vocabulary: Vocabulary) -> str | None:
    if not stage.text or stage.text in PENDING_SPELLINGS:
        return None
    key = vocabulary.dimension(SYMPTOM).child_named(None, stage.text)
    if key is None or vocabulary.has_grandchildren(SYMPTOM, key):
        return None
    return key


def _path(vocabulary: Vocabulary, dimension: str, cells: Sequence[_Cell], out: _Collector) -> None:
    """Resolve a tree value given level by level (top first); see the module docstring."""
    given = [cell for cell in cells if cell.text]
    if not given:
        return
    parent: str | None = None
    last = _EMPTY
    for depth, cell in enumerate(cells):
        if not cell.text:
            later = [c for c in cells[depth + 1 :] if c.text]
            if parent is None:
                out.error(later[0], f"{dimension}: a lower level is given without the top level: left out")
                return
            if not later:
                out.add(dimension, parent, last)
                return
            if vocabulary.has_grandchildren(dimension, parent) or not vocabulary.has_children(
                dimension, parent
            ):
                name = vocabulary.name_of(dimension, parent)
                out.error(
                    later[0],
                    f"{dimension}: level {depth + 1} empty under {name!r}, a deeper level given: left out",
                )
                return
            continue  # this level does not exist under `parent` (a stage whose children are leaves)
        if cell.text in PENDING_SPELLINGS:
            out.add(dimension, PENDING_LABEL, cell)
            return
        if parent is not None and not vocabulary.has_children(dimension, parent):
            out.error(cell, f"{dimension}: {vocabulary.name_of(dimension, parent)!r} has no subcategories")
            return
        try:
            parent = vocabulary.resolve(dimension, cell.text, parent)
        except UnresolvedLabel as exc:
            out.error(cell, f"{dimension}: {exc}: left out")
            return
        last = cell
    assert parent is not None  # at least one cell was given and resolved
    out.add(dimension, parent, last)


# --- Workbooks -------------------------------------------------------------------------------------

_RELIABILITY_HEADER = (
    "link",
    "issue type",
    "how-to topic",
    "how-to sub-topic",
    "distributed-specified",
    "stage",
    "type",
    "leaf category",
    "fix pattern",
)
_MEMO_COLUMN = get_column_letter(len(_RELIABILITY_HEADER) + 1)
_FINAL_HOWTO_HEADER = ("type", "link", "how-to topic", "sub-topic")
_FINAL_FAULT_HEADER = (
    "type",
    "link",
    "distributed-specific",
    "stage",
    "inner-category",
    "leaf category",
    "fix pattern",
)


def _header(ws: Worksheet, expected: Sequence[str], path: str, strip_suffix: str = "") -> int:
    """Check row 1 against ``expected``; return the number of layout columns (+1 if a memo column)."""
    values = [normalise_label(ws.cell(row=1, column=i + 1).value) for i in range(len(expected) + 1)]
    found = [v.removesuffix(strip_suffix).strip() if strip_suffix else v for v in values[: len(expected)]]
    if tuple(found) != tuple(expected):
        raise TosemLayoutError(
            f"{path}: sheet {ws.title!r} header is {values[: len(expected)]}, expected {list(expected)}"
        )
    return len(expected) + 1 if values[len(expected)] == "memo" else len(expected)


def _merged_tops(ws: Worksheet, column: int) -> dict[int, int]:
    """For every row covered (below its top) by a merged range over ``column``: the range's top row."""
    tops: dict[int, int] = {}
    for merged in ws.merged_cells.ranges:
        if merged.min_col <= column <= merged.max_col:
            for row in range(merged.min_row + 1, merged.max_row + 1):
                tops[row] = merged.min_row
    return tops


def _rows(ws: Worksheet) -> Iterator[tuple[int, list[object]]]:
    for number, values in enumerate(ws.iter_rows(min_row=2, values_only=True), start=2):
        yield number, list(values)


def _value(values: Sequence[object], index: int) -> object:
    value = values[index] if index < len(values) else None
    if isinstance(value, str) and not value.strip():
        return None
    return value


def _stray_cells(values: Sequence[object], width: int, sheet: str, row: int) -> list[CellIssue]:
    return [
        CellIssue(sheet, row, get_column_letter(i + 1), str(value), "value outside the TOSEM layout: ignored")
        for i, value in enumerate(values)
        if i >= width and _value(values, i) is not None
    ]


class _SheetReader:
    """Shared row loop: link (with merged cells), finding numbers, empty rows, issue collection."""

    def __init__(self, ws: Worksheet, link_column: int, annotator: str, round_number: int | None) -> None:
        self.ws = ws
        self.link_column = link_column  # 0-based
        self.annotator = annotator
        self.round = round_number
        self.tops = _merged_tops(ws, link_column + 1)
        self.links: dict[int, str] = {}
        self.counts: Counter[str] = Counter()
        self.rows: list[LabelRow] = []
        self.errors: list[CellIssue] = []
        self.notes: list[CellIssue] = []
        self.findings = 0
        self.items: dict[str, None] = {}  # ordered set of the posts met

    def link(self, row: int, values: Sequence[object]) -> str:
        raw = _value(values, self.link_column)
        if raw is None and row in self.tops:
            return self.links.get(self.tops[row], "")
        text = "" if raw is None else str(raw).strip()
        self.links[row] = text
        if text:
            self.items.setdefault(text)
        return text

    def read(
        self,
        row: int,
        values: Sequence[object],
        finding: _Finding,
        memo: str,
        labelled: bool,
        vocabulary: Vocabulary,
    ) -> None:
        item = self.link(row, values)
        letter = get_column_letter(self.link_column + 1)
        if not labelled:
            if memo:
                self.errors.append(
                    CellIssue(self.ws.title, row, _MEMO_COLUMN, memo, "memo without labels", item)
                )
            elif item and row not in self.tops:
                self.notes.append(
                    CellIssue(self.ws.title, row, letter, item, "link without labels: skipped", item)
                )
            return
        if not item:
            self.errors.append(
                CellIssue(
                    self.ws.title, row, letter, "", "labels without a link (no merged cell above): left out"
                )
            )
            return
        out = _Collector(self.ws.title, row, item)
        _parse_finding(finding, vocabulary, out)
        self.errors.extend(out.errors)
        self.notes.extend(out.notes)
        if not out.labels:
            return
        self.counts[item] += 1
        self.findings += 1
        for position, (dimension, label, raw) in enumerate(out.labels):
            first_memo = memo if position == 0 else ""
            self.rows.append(
                LabelRow(
                    item, self.annotator, dimension, label, self.counts[item], self.round, first_memo, raw
                )
            )

    def result(self) -> SheetResult:
        return SheetResult(
            self.ws.title,
            self.annotator,
            self.findings,
            tuple(self.items),
            tuple(self.rows),
            tuple(self.errors),
            tuple(self.notes),
        )


def _load(path: str | Path) -> Any:
    # Not read-only: merged-cell ranges are only available on a fully loaded workbook.
    return openpyxl.load_workbook(Path(path), data_only=True)


def read_reliability_workbook(
    path: str | Path,
    round_number: int,
    vocabulary: Vocabulary,
    sheets: Mapping[str, str] = RELIABILITY_SHEETS,
) -> WorkbookResult:
    """Read a ``reliability_analysis_roundN.xlsx`` workbook: each sheet of ``sheets`` (sheet name ->
    annotator written in the rows) into label rows of round ``round_number``.

    Raises :class:`TosemLayoutError` when a sheet is missing or its header is not the TOSEM layout.
    """
    workbook = _load(path)
    results: list[SheetResult] = []
    for sheet_name, annotator in sheets.items():
        if sheet_name not in workbook.sheetnames:
            raise TosemLayoutError(f"{path}: no sheet {sheet_name!r} (sheets: {workbook.sheetnames})")
        ws = workbook[sheet_name]
        width = _header(ws, _RELIABILITY_HEADER, str(path), strip_suffix=" final")
        reader = _SheetReader(ws, 0, annotator, round_number)
        for row, values in _rows(ws):
            cells = [
                _Cell(get_column_letter(i + 1), _value(values, i)) for i in range(len(_RELIABILITY_HEADER))
            ]
            finding = _Finding(
                issue_type=cells[1],
                topic=cells[2],
                subtopic=cells[3],
                distributed=cells[4],
                stage=cells[5],
                inner=cells[6],
                leaf=cells[7],
                fix=cells[8],
            )
            memo_value = _value(values, 9) if width > 9 else None
            memo = "" if memo_value is None else str(memo_value).strip()
            labelled = any(cell.text for cell in cells[1:])
            reader.errors.extend(_stray_cells(values, width, ws.title, row))
            reader.read(row, values, finding, memo, labelled, vocabulary)
        results.append(reader.result())
    return WorkbookResult(str(path), tuple(results), {})


def read_final_workbook(path: str | Path, vocabulary: Vocabulary) -> WorkbookResult:
    """Read ``final_categories.xlsx``: the settled labels (annotator "", round None) of every post.

    Findings are numbered per post across both sheets in workbook order (how-to questions, then
    faults). ``sources`` maps each post to its ``Type`` cell (several distinct values joined by "; ").
    Raises :class:`TosemLayoutError` when a sheet is missing or its header is not the TOSEM layout.
    """
    workbook = _load(path)
    results: list[SheetResult] = []
    sources: dict[str, list[str]] = {}
    counts: Counter[str] = Counter()  # shared: findings are numbered across the two sheets
    for sheet_name, header, implied in (
        (FINAL_HOWTO_SHEET, _FINAL_HOWTO_HEADER, vocabulary.howto_key),
        (FINAL_FAULT_SHEET, _FINAL_FAULT_HEADER, vocabulary.fault_key),
    ):
        if sheet_name not in workbook.sheetnames:
            raise TosemLayoutError(f"{path}: no sheet {sheet_name!r} (sheets: {workbook.sheetnames})")
        ws = workbook[sheet_name]
        width = _header(ws, header, str(path))
        if width > len(header):
            raise TosemLayoutError(f"{path}: sheet {sheet_name!r} has an unexpected memo column")
        reader = _SheetReader(ws, 1, "", None)
        reader.counts = counts
        type_tops = _merged_tops(ws, 1)
        types: dict[int, str] = {}
        implied_name = vocabulary.name_of(ISSUE_TYPE, implied)
        for row, values in _rows(ws):
            cells = [_Cell(get_column_letter(i + 1), _value(values, i)) for i in range(len(header))]
            if sheet_name == FINAL_HOWTO_SHEET:
                finding = _Finding(issue_type=_Cell("", implied_name), topic=cells[2], subtopic=cells[3])
            else:
                finding = _Finding(
                    issue_type=_Cell("", implied_name),
                    distributed=cells[2],
                    stage=cells[3],
                    inner=cells[4],
                    leaf=cells[5],
                    fix=cells[6],
                )
            labelled = any(cell.text for cell in cells[2:])
            reader.errors.extend(_stray_cells(values, width, ws.title, row))
            source_raw = _value(values, 0)
            source = (
                str(source_raw).strip() if source_raw is not None else types.get(type_tops.get(row, -1), "")
            )
            types[row] = source
            reader.read(row, values, finding, "", labelled, vocabulary)
            item = reader.links.get(row) or reader.links.get(reader.tops.get(row, -1), "")
            if labelled and item and source and source not in sources.setdefault(item, []):
                sources[item].append(source)
        results.append(reader.result())
    joined = {item: "; ".join(values) for item, values in sorted(sources.items())}
    return WorkbookResult(str(path), tuple(results), joined)


def iter_label_rows(results: Iterable[WorkbookResult]) -> Iterator[LabelRow]:
    """All label rows of several workbooks, in reading order."""
    for result in results:
        yield from result.rows
