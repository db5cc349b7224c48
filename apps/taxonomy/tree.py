"""Category trees as plain rows: paths, depths, subtrees, safe moves and merges, label remapping, and
resolution of the labels a person types (docs/design.md §2 codebook changes, §5 labels CSV, §6 levels).
No Django.

One `CategoryTree` holds one dimension's categories (keys are unique within a dimension). It is built once
from rows ``(id, parent_id, key, name)`` in sibling order (the database's ``position``) and then answers
each query in O(depth) or better: every node's lineage (its ancestors from the top, then itself) is
computed up front. Depth counts from the top: a top-level category has depth 1.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

PATH_SEPARATOR = " > "


class Node(NamedTuple):
    id: int
    parent_id: int | None
    key: str
    name: str


class TreeError(ValueError):
    """Rows that do not form a tree, an unknown id, or a move or merge that would break the tree."""


class LabelError(ValueError):
    """A label text that names no single category. `candidates` are the paths it could mean."""

    def __init__(self, text: str, message: str, candidates: Sequence[str] = ()) -> None:
        self.text = text
        self.candidates = list(candidates)
        super().__init__(message)


class AmbiguousLabelError(LabelError):
    """The text matches several categories; `candidates` lists their paths."""


class UnknownLabelError(LabelError):
    """The text matches no category; `candidates` lists close matches (may be empty)."""


def _fold(text: str) -> str:
    """Case- and spacing-insensitive form of a name: ``' Hang  And Timeout'`` → ``'hang and timeout'``."""
    return " ".join(text.split()).casefold()


def _as_node(row: Node | Sequence[Any] | Mapping[str, Any], index: int) -> Node:
    try:
        if isinstance(row, Mapping):
            node = Node(row["id"], row["parent_id"], row["key"], row["name"])
        else:
            node = Node(*row)
    except (KeyError, TypeError) as exc:
        raise TreeError(f"row {index}: expected (id, parent_id, key, name), got {row!r}") from exc
    return node


class CategoryTree:
    """An index over one dimension's category rows. Build it with `CategoryTree.from_rows`."""

    def __init__(self, nodes: Sequence[Node]) -> None:
        self._nodes: dict[int, Node] = {}
        self._by_key: dict[str, int] = {}
        for index, node in enumerate(nodes):
            if node.id in self._nodes:
                raise TreeError(f"row {index}: duplicate category id {node.id}")
            if node.key in self._by_key:
                raise TreeError(
                    f"row {index}: duplicate category key {node.key!r} (ids {self._by_key[node.key]} "
                    f"and {node.id})"
                )
            self._nodes[node.id] = node
            self._by_key[node.key] = node.id
        self._children: dict[int | None, list[int]] = {None: []}
        for node in nodes:
            if node.parent_id is not None and node.parent_id not in self._nodes:
                raise TreeError(f"category {node.id} ({node.key!r}) has unknown parent {node.parent_id}")
            self._children.setdefault(node.parent_id, []).append(node.id)
        self._lineage: dict[int, tuple[int, ...]] = {}
        stack: list[tuple[int, tuple[int, ...]]] = [(i, (i,)) for i in reversed(self._children[None])]
        while stack:
            node_id, lineage = stack.pop()
            self._lineage[node_id] = lineage
            for child in reversed(self._children.get(node_id, [])):
                stack.append((child, (*lineage, child)))
        if len(self._lineage) != len(self._nodes):
            cut_off = sorted(set(self._nodes) - set(self._lineage))
            raise TreeError(
                f"categories {cut_off} form a cycle of parents and are not reachable from the top"
            )
        self._by_name: dict[str, list[int]] = {}
        for node_id in self:
            self._by_name.setdefault(_fold(self._nodes[node_id].name), []).append(node_id)

    @classmethod
    def from_rows(cls, rows: Iterable[Node | Sequence[Any] | Mapping[str, Any]]) -> CategoryTree:
        """Rows as `Node`s, 4-tuples or mappings with id, parent_id, key, name (e.g. a `.values()` query).

        Raises TreeError on a duplicate id or key, an unknown parent, or a cycle of parents.
        """
        return cls([_as_node(row, index) for index, row in enumerate(rows)])

    # --- Lookups ---------------------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._nodes)

    def __contains__(self, node_id: object) -> bool:
        return node_id in self._nodes

    def __iter__(self) -> Iterator[int]:
        """Ids depth-first, parents before children, siblings in row order."""
        for root in self._children[None]:
            yield root
            yield from self.descendants(root)

    def _lineage_of(self, node_id: int) -> tuple[int, ...]:
        try:
            return self._lineage[node_id]
        except KeyError:
            raise TreeError(f"unknown category id {node_id!r}") from None

    def node(self, node_id: int) -> Node:
        self._lineage_of(node_id)
        return self._nodes[node_id]

    def by_key(self, key: str) -> Node:
        if key not in self._by_key:
            raise TreeError(f"unknown category key {key!r}")
        return self._nodes[self._by_key[key]]

    def roots(self) -> list[int]:
        return list(self._children[None])

    def children(self, node_id: int | None) -> list[int]:
        """Direct children in row order; `None` gives the top-level categories."""
        if node_id is not None:
            self._lineage_of(node_id)
        return list(self._children.get(node_id, []))

    # --- Paths and levels ------------------------------------------------------------------------------

    def path_of_names(self, node_id: int) -> list[str]:
        """Names from the top category down to this one."""
        return [self._nodes[i].name for i in self._lineage_of(node_id)]

    def path_string(self, node_id: int, sep: str = PATH_SEPARATOR) -> str:
        return sep.join(self.path_of_names(node_id))

    def depth(self, node_id: int) -> int:
        """1 for a top-level category, 2 for its children, and so on."""
        return len(self._lineage_of(node_id))

    def ancestors(self, node_id: int) -> list[int]:
        """Proper ancestors, the top-level one first."""
        return list(self._lineage_of(node_id)[:-1])

    def ancestor_at_depth(self, node_id: int, n: int) -> int:
        """The ancestor at depth `n` (1 = top), used to compare labels at a level of the tree (§6).

        When `n` is at least the node's own depth the node itself is returned: a leaf at depth 2 stays
        itself when labels are compared at level 3. `n` < 1 raises ValueError.
        """
        if n < 1:
            raise ValueError(f"depth must be 1 or more, got {n}")
        lineage = self._lineage_of(node_id)
        return lineage[min(n, len(lineage)) - 1]

    def descendants(self, node_id: int) -> list[int]:
        """Every category below this one (not itself), depth-first in row order."""
        self._lineage_of(node_id)
        found: list[int] = []
        stack = list(reversed(self._children.get(node_id, [])))
        while stack:
            current = stack.pop()
            found.append(current)
            stack.extend(reversed(self._children.get(current, [])))
        return found

    def is_descendant(self, a: int, b: int) -> bool:
        """True when `a` lies strictly below `b` (a category is not its own descendant). O(1)."""
        lineage_a, depth_b = self._lineage_of(a), self.depth(b)
        return len(lineage_a) > depth_b and lineage_a[depth_b - 1] == b

    # --- Checks for codebook changes -------------------------------------------------------------------

    def check_move(self, node_id: int, new_parent_id: int | None) -> None:
        """Refuse (TreeError) a move of a category under itself or anything below it; `None` = top level."""
        self._lineage_of(node_id)
        if new_parent_id is None:
            return
        if new_parent_id == node_id:
            raise TreeError(f"cannot move {self.path_string(node_id)!r} under itself")
        if self.is_descendant(new_parent_id, node_id):
            raise TreeError(
                f"cannot move {self.path_string(node_id)!r} under {self.path_string(new_parent_id)!r}, "
                "which lies inside it"
            )

    def check_merge(self, source_id: int, target_id: int) -> None:
        """Refuse (TreeError) merging a category into itself or into one of its descendants.

        A merge remaps the source's labels to the target (`remap_for_merge`) and the source's children
        become the target's children; merging into a descendant would make that child its own ancestor.
        Merging into an ancestor or into another branch is allowed.
        """
        self._lineage_of(source_id)
        self._lineage_of(target_id)
        if source_id == target_id:
            raise TreeError(f"cannot merge {self.path_string(source_id)!r} into itself")
        if self.is_descendant(target_id, source_id):
            raise TreeError(
                f"cannot merge {self.path_string(source_id)!r} into {self.path_string(target_id)!r}, "
                "which lies inside it"
            )

    # --- Resolving typed labels ------------------------------------------------------------------------

    def resolve(self, text: str) -> int:
        """The id of the category `text` names (the labels CSV, §5). In order of precedence:

        1. a category key, exactly;
        2. a path of names joined by ``>`` (spacing and case ignored): from the top (``Training &
           Evaluation > Program Failure > Hang``; a top-level name alone is such a path), else the end of a
           path (``Program Failure > Hang``, or a bare name ``hang``) when that end names one category;
           a path from the top wins over longer paths that end the same way;
        3. a key, case-insensitive.

        Raises AmbiguousLabelError listing the candidate paths, or UnknownLabelError with close matches.
        """
        stripped = text.strip()
        if not stripped:
            raise UnknownLabelError(text, "empty label: expected a category key or a path of names")
        if stripped in self._by_key:
            return self._by_key[stripped]
        parts = [_fold(part) for part in stripped.split(">")]
        if not all(parts):
            raise UnknownLabelError(text, f"label {text!r} has an empty part between '>' separators")
        matches = [i for i in self._by_name.get(parts[-1], []) if self._ends_with(i, parts)]
        from_top = [i for i in matches if self.depth(i) == len(parts)]
        for group in (from_top, matches):
            if len(group) == 1:
                return group[0]
            if len(group) > 1:
                raise self._ambiguous(text, group)
        if len(parts) == 1 and stripped.lower() in self._by_key:
            return self._by_key[stripped.lower()]
        raise self._unknown(text)

    def _ends_with(self, node_id: int, parts: Sequence[str]) -> bool:
        lineage = self._lineage[node_id]
        if len(lineage) < len(parts):
            return False
        tail = lineage[len(lineage) - len(parts) :]
        return all(_fold(self._nodes[i].name) == part for i, part in zip(tail, parts, strict=True))

    def _ambiguous(self, text: str, ids: Sequence[int]) -> AmbiguousLabelError:
        paths = sorted(self.path_string(i) for i in ids)
        listed = "; ".join(repr(p) for p in paths)
        return AmbiguousLabelError(text, f"label {text!r} is ambiguous: it could be {listed}", paths)

    def _unknown(self, text: str) -> UnknownLabelError:
        choices: dict[str, int] = {}
        for node_id in self:
            node = self._nodes[node_id]
            choices.setdefault(node.key, node_id)
            choices.setdefault(_fold(node.name), node_id)
            choices.setdefault(_fold(self.path_string(node_id)), node_id)
        query = _fold(text) if ">" not in text else _fold(PATH_SEPARATOR.join(text.split(">")))
        close = difflib.get_close_matches(query, list(choices), n=3, cutoff=0.6)
        paths = list(dict.fromkeys(self.path_string(choices[c]) for c in close))
        hint = "; did you mean " + " or ".join(repr(p) for p in paths) + "?" if paths else ""
        return UnknownLabelError(text, f"unknown category {text!r}{hint}", paths)


def resolve_label(text: str, nodes: CategoryTree | Iterable[Node | Sequence[Any] | Mapping[str, Any]]) -> int:
    """`CategoryTree.resolve` for one text; pass a built tree when resolving many labels."""
    tree = nodes if isinstance(nodes, CategoryTree) else CategoryTree.from_rows(nodes)
    return tree.resolve(text)


# --- Near-duplicate names for proposed codes ----------------------------------------------------------

_NOT_WORD = re.compile(r"[\W_]+")
NEAR_DUPLICATE_RATIO = 0.85


def _singular(word: str) -> str:
    """A rough English singular, enough to match 'errors' with 'error' and 'dependencies' with
    'dependency'; words of three letters or fewer and '-ss', '-us', '-is' endings are left alone."""
    if len(word) <= 3:
        return word
    if word.endswith("ies"):
        return word[:-3] + "y"
    if word.endswith(("sses", "shes", "ches", "xes", "zes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def normalize_name(name: str) -> str:
    """Case-, spacing- and punctuation-insensitive singular form: ``'Hang & Timeouts!'`` → ``'hang and
    timeout'``."""
    words = _NOT_WORD.sub(" ", name.casefold().replace("&", " and ")).split()
    return " ".join(_singular(word) for word in words)


def name_similarity(a: str, b: str) -> float:
    """Similarity in [0, 1] of two names after `normalize_name`: the higher of difflib's ratio on the
    normalized names and on their words sorted (so word order alone does not make names different)."""
    # difflib's ratio depends on argument order (its junk heuristic): a fixed order keeps this symmetric.
    left, right = sorted((normalize_name(a), normalize_name(b)))
    if left == right:
        return 1.0
    as_written = difflib.SequenceMatcher(None, left, right).ratio()
    sorted_words = difflib.SequenceMatcher(
        None, " ".join(sorted(left.split())), " ".join(sorted(right.split()))
    ).ratio()
    return max(as_written, sorted_words)


def near_duplicates(name: str, existing_names: Iterable[str]) -> list[str]:
    """Existing names a proposed code `name` probably repeats: equal after `normalize_name`, or with
    `name_similarity` ≥ 0.85. Most similar first, ties in the given order, each name once."""
    if not normalize_name(name):
        return []
    scored: dict[str, float] = {}
    for existing in existing_names:
        if existing not in scored and normalize_name(existing):
            score = name_similarity(name, existing)
            if score >= NEAR_DUPLICATE_RATIO:
                scored[existing] = score
    return sorted(scored, key=lambda existing: -scored[existing])


# --- Label remapping ----------------------------------------------------------------------------------


class LabelRow(NamedTuple):
    """One label value. `finding_id` (optional) groups the values of one finding and dimension, so a
    remap can spot a finding that would hold the same category twice."""

    label_id: int
    category_id: int | None
    original_category_id: int | None
    finding_id: int | None = None


@dataclass(frozen=True)
class Remap:
    """The outcome of a merge or split.

    `changed`: rows with their new category; `original_category_id` keeps what the annotator chose (set to
    the source when it was empty, kept when an earlier merge already set it). `dropped`: rows whose finding
    already holds the new category (a multi-choice value with both source and target): updating them
    would store one category twice, so the caller deletes them and records them in the change's history.
    Rows not on the source are in neither list.
    """

    changed: list[LabelRow]
    dropped: list[LabelRow]


def _check_label_ids(labels: Sequence[LabelRow]) -> None:
    seen: set[int] = set()
    for row in labels:
        if row.label_id in seen:
            raise ValueError(f"label {row.label_id} appears twice")
        seen.add(row.label_id)


def _remap(labels: Sequence[LabelRow], source_id: int, new_category: Mapping[int, int]) -> Remap:
    taken = {(row.finding_id, row.category_id) for row in labels if row.category_id != source_id}
    changed: list[LabelRow] = []
    dropped: list[LabelRow] = []
    for row in labels:
        if row.category_id != source_id or new_category[row.label_id] == source_id:
            continue
        target = new_category[row.label_id]
        if row.finding_id is not None and (row.finding_id, target) in taken:
            dropped.append(row)
            continue
        taken.add((row.finding_id, target))
        original = row.original_category_id if row.original_category_id is not None else source_id
        changed.append(row._replace(category_id=target, original_category_id=original))
    return Remap(changed, dropped)


def remap_for_merge(
    labels: Iterable[LabelRow], source_id: int, target_id: int, tree: CategoryTree | None = None
) -> Remap:
    """Move every label on `source_id` to `target_id`, keeping the original (see `Remap`).

    With `tree`, the merge is first checked with `CategoryTree.check_merge` (TreeError). Raises
    ValueError when source and target are the same or a label id repeats.
    """
    rows = list(labels)
    _check_label_ids(rows)
    if source_id == target_id:
        raise ValueError(f"cannot merge category {source_id} into itself")
    if tree is not None:
        tree.check_merge(source_id, target_id)
    return _remap(rows, source_id, {row.label_id: target_id for row in rows})


def remap_for_split(
    labels: Iterable[LabelRow],
    source_id: int,
    assignment: Mapping[int, int],
    tree: CategoryTree | None = None,
) -> Remap:
    """Give each label on `source_id` the category `assignment[label_id]` chose for it, keeping the
    original (see `Remap`). A label assigned `source_id` itself stays unchanged.

    Every label on the source must be assigned, and only those: ValueError lists the label ids missing or
    not on the source. With `tree`, every new category must exist in it (TreeError otherwise).
    """
    rows = list(labels)
    _check_label_ids(rows)
    on_source = {row.label_id for row in rows if row.category_id == source_id}
    missing = sorted(on_source - set(assignment))
    if missing:
        raise ValueError(f"labels {missing} on category {source_id} have no new category")
    extra = sorted(set(assignment) - on_source)
    if extra:
        raise ValueError(f"labels {extra} are not on category {source_id}, so the split cannot move them")
    if tree is not None:
        for label_id, category_id in sorted(assignment.items()):
            if category_id not in tree:
                raise TreeError(f"label {label_id}: new category {category_id} is not in this dimension")
    return _remap(rows, source_id, assignment)
