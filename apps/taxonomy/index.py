"""A study's whole codebook in memory: dimensions, category trees, paths, levels, and the §5 snapshot.

`CodebookIndex.for_study(study)` reads the codebook in three queries whatever its size (the codebook, its
dimensions, their categories) into plain frozen records, then answers every question without touching the
database again. Labelling, agreement, adjudication and export build one index per request or job and use it
for all their lookups; nothing here writes.

Stable contract (other apps rely on it):

* ``index.version`` — the codebook version the index was read at (0 when the study has no codebook);
* ``index.dimensions`` — the active dimensions in display order (``index.all_dimensions`` adds the retired
  ones); ``index.dimension(key_or_id)`` finds any dimension (UnknownDimensionError otherwise);
* ``index.categories`` — every category of every dimension by id, whatever its status (labels may point to
  retired, merged or proposed categories, and their paths must still resolve);
* ``index.tree(dimension_key)`` — the active categories as a `tree.CategoryTree`; ``active_only=False``
  gives every category;
* ``resolve``, ``path``, ``path_names``, ``depth``, ``ancestor_at_depth``, ``applicable_dimensions``,
  ``options``, ``spec`` and ``snapshot`` — see their docstrings.

Invariant kept by `services`: an active category's parent is active, so the active categories of a
dimension always form a tree of their own.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.db import connection, transaction

from .codebook_spec import CategorySpec, CodebookSpec, DimensionSpec, codebook_to_data
from .models import Category, CategoryStatus, Codebook, Dimension
from .tree import PATH_SEPARATOR, CategoryTree, Node

if TYPE_CHECKING:
    from apps.accounts.models import Study


# Indexes already read in this process, by codebook row state. Every change the services make to a
# codebook's dimensions or categories raises `Codebook.version` (a change set) or touches its `updated_at`
# (a proposal), and a restored study has a new codebook row, so a key names one committed content. Two
# guards keep uncommitted content out: a transaction that writes a codebook (`note_codebook_write`, called
# by the services before they write and by the models' post_save / post_delete) reads around the cache
# until it ends, and every such write empties the cache. Indexes are never mutated after construction
# except for memoised lookups, which are deterministic.
_CACHE: dict[tuple[Any, ...], CodebookIndex] = {}
_CACHE_SIZE = 64
_LAST_READ: dict[int, tuple[Any, ...]] = {}  # study id → the key of its codebook's index read last
_WRITING = "taxonomy_codebook_written"  # attribute on the (thread-local) connection


def _cache_key(book: Codebook) -> tuple[Any, ...]:
    return (book.pk, book.version, book.updated_at, book.name)


def note_codebook_write(**_: Any) -> None:
    """This transaction writes a codebook: forget every cached index, and read around the cache until
    the transaction ends (a rollback would otherwise leave its content cached under a committed key)."""
    _CACHE.clear()
    _LAST_READ.clear()
    if connection.in_atomic_block and not _marked():
        # The mark is an on-commit hook of this transaction: it runs (and clears the mark) at the commit,
        # and leaves the connection's hooks at a rollback, or with the savepoint that made the write.
        def written() -> None:
            setattr(connection, _WRITING, None)

        setattr(connection, _WRITING, written)
        transaction.on_commit(written)


def _marked() -> bool:
    """Whether the open transaction has written a codebook: its mark is still among its on-commit hooks."""
    written = getattr(connection, _WRITING, None)
    return (
        written is not None
        and connection.in_atomic_block
        and any(entry[1] is written for entry in connection.run_on_commit)
    )


def _cache_usable() -> bool:
    """Whether this connection may read and fill the cache: not while its open transaction has written a
    codebook. Once that transaction has ended, however it ended, the cache serves again (before, the mark
    outlived a transaction until a read outside any, so a worker process whose request had edited a
    codebook read it from the database at every submission: 1 ms of a 5 ms API submission)."""
    return not _marked()


class UnknownDimensionError(LookupError):
    """A dimension key or id the codebook does not have; the message lists the known keys."""


@dataclass(frozen=True)
class CategoryInfo:
    """One category row, detached from the database."""

    id: int
    dimension_id: int
    parent_id: int | None
    key: str
    name: str
    definition: str
    include: str
    exclude: str
    examples: tuple[str, ...]
    position: int
    status: str
    merged_into_id: int | None
    proposed_by_id: int | None

    @property
    def is_active(self) -> bool:
        return self.status == CategoryStatus.ACTIVE

    @property
    def is_proposed(self) -> bool:
        return self.status == CategoryStatus.PROPOSED


@dataclass(frozen=True)
class DimensionInfo:
    """One dimension row. `applies_when` is (dimension key, category key) or None."""

    id: int
    key: str
    name: str
    description: str
    multiple: bool
    position: int
    applies_when: tuple[str, str] | None
    applies_when_category_id: int | None
    retired: bool


CategoryValues = int | str | Iterable[int | str] | None


class CodebookIndex:
    """Read-only view of one codebook. Build with `for_study` or `for_codebook`."""

    def __init__(
        self,
        *,
        codebook_id: int | None,
        name: str,
        version: int,
        dimensions: Iterable[DimensionInfo],
        categories: Iterable[CategoryInfo],
    ) -> None:
        self.codebook_id = codebook_id
        self.name = name
        self.version = version
        # The codebook row it was read from (id, version, updated_at, name): see `last_read`.
        self.row_state: tuple[Any, ...] | None = None
        # Structures other apps derive from this index (e.g. labelling's payload schema), built once
        # per index; they live as long as the index does in the cache.
        self.memo: dict[str, object] = {}
        every = sorted(dimensions, key=lambda d: (d.position, d.id))
        self._dimensions_by_id = {d.id: d for d in every}
        self._dimensions_by_key = {d.key: d for d in every}
        self.dimensions: tuple[DimensionInfo, ...] = tuple(d for d in every if not d.retired)
        self.all_dimensions: tuple[DimensionInfo, ...] = tuple(every)
        ordered = sorted(categories, key=lambda c: (c.position, c.id))
        self.categories: dict[int, CategoryInfo] = {c.id: c for c in ordered}
        per_dimension: dict[int, list[CategoryInfo]] = {d.id: [] for d in every}
        for category in ordered:
            per_dimension.setdefault(category.dimension_id, []).append(category)
        self._per_dimension = per_dimension
        self._trees: dict[int, CategoryTree] = {}
        self._active_trees: dict[int, CategoryTree] = {}
        for dimension_id, rows in per_dimension.items():
            full = CategoryTree.from_rows(_nodes(rows))
            self._trees[dimension_id] = full
            self._active_trees[dimension_id] = CategoryTree.from_rows(
                Node(c.id, self._active_parent(full, c.id), c.key, c.name) for c in rows if c.is_active
            )

    def _active_parent(self, full: CategoryTree, category_id: int) -> int | None:
        # Services keep active categories under active parents; rows written by other means (the admin)
        # may not, and then the nearest active ancestor stands in rather than the index failing.
        for ancestor in reversed(full.ancestors(category_id)):
            if self.categories[ancestor].is_active:
                return ancestor
        return None

    # --- Construction --------------------------------------------------------------------------------

    @classmethod
    def for_study(cls, study: Study) -> CodebookIndex:
        """The study's codebook (three queries); an empty index at version 0 when it has none."""
        book = Codebook.objects.filter(study=study).first()
        if book is None:
            return cls(codebook_id=None, name=study.name, version=0, dimensions=(), categories=())
        return cls.for_codebook(book)

    @classmethod
    def for_codebook(cls, book: Codebook) -> CodebookIndex:
        """The codebook as currently stored: from this process's cache when the row's version and
        `updated_at` are those it was read at, else two queries (dimensions, then categories)."""
        if not _cache_usable():
            return cls._read(book)
        key = _cache_key(book)
        cached = _CACHE.get(key)
        if cached is None:
            cached = cls._read(book)
            if len(_CACHE) >= _CACHE_SIZE:
                _CACHE.pop(next(iter(_CACHE)))
            _CACHE[key] = cached
        _LAST_READ[book.study_id] = key
        return cached

    @classmethod
    def last_read(cls, study_id: int) -> CodebookIndex | None:
        """The index this process read last for the study's codebook, without a query; None when there is
        none or the cache is not usable (a transaction writing a codebook). It may be out of date: trust it
        only once the codebook row, share-locked, still has its `row_state` (labelling's short path)."""
        if not _cache_usable():
            return None
        key = _LAST_READ.get(study_id)
        return _CACHE.get(key) if key is not None else None

    @classmethod
    def _read(cls, book: Codebook) -> CodebookIndex:
        dimension_rows = list(
            Dimension.objects.filter(codebook=book).values(
                "id",
                "key",
                "name",
                "description",
                "multiple",
                "position",
                "applies_when_category_id",
                "applies_when_category__key",
                "applies_when_category__dimension__key",
                "retired_at",
            )
        )
        category_rows = Category.objects.filter(dimension__codebook=book).values(
            "id",
            "dimension_id",
            "parent_id",
            "key",
            "name",
            "definition",
            "include",
            "exclude",
            "examples",
            "position",
            "status",
            "merged_into_id",
            "proposed_by_id",
        )
        dimensions = [
            DimensionInfo(
                id=row["id"],
                key=row["key"],
                name=row["name"],
                description=row["description"],
                multiple=row["multiple"],
                position=row["position"],
                applies_when=(row["applies_when_category__dimension__key"], row["applies_when_category__key"])
                if row["applies_when_category_id"] is not None
                else None,
                applies_when_category_id=row["applies_when_category_id"],
                retired=row["retired_at"] is not None,
            )
            for row in dimension_rows
        ]
        categories = [
            CategoryInfo(
                id=row["id"],
                dimension_id=row["dimension_id"],
                parent_id=row["parent_id"],
                key=row["key"],
                name=row["name"],
                definition=row["definition"],
                include=row["include"],
                exclude=row["exclude"],
                examples=tuple(str(e) for e in (row["examples"] or [])),
                position=row["position"],
                status=row["status"],
                merged_into_id=row["merged_into_id"],
                proposed_by_id=row["proposed_by_id"],
            )
            for row in category_rows
        ]
        index = cls(
            codebook_id=book.pk,
            name=book.name,
            version=book.version,
            dimensions=dimensions,
            categories=categories,
        )
        index.row_state = _cache_key(book)
        return index

    # --- Dimensions ----------------------------------------------------------------------------------

    def dimension(self, key_or_id: str | int) -> DimensionInfo:
        """A dimension by key or id, retired ones included. Raises UnknownDimensionError."""
        found = (
            self._dimensions_by_id.get(key_or_id)
            if isinstance(key_or_id, int)
            else self._dimensions_by_key.get(key_or_id)
        )
        if found is None:
            known = ", ".join(d.key for d in self.dimensions) or "none"
            raise UnknownDimensionError(f"unknown dimension {key_or_id!r} (known: {known})")
        return found

    def categories_of(self, dimension_key: str, *, active_only: bool = True) -> list[CategoryInfo]:
        """The dimension's categories depth-first (parents before children, siblings in order)."""
        dimension = self.dimension(dimension_key)
        tree = self.tree(dimension.key, active_only=active_only)
        return [self.categories[i] for i in tree]

    def applicable_dimensions(self, values: Mapping[str, CategoryValues]) -> list[DimensionInfo]:
        """The active dimensions that apply to a finding whose chosen values are `values`.

        `values` maps a dimension key to the chosen category (id or key), several of them, or None. A
        dimension without ``applies_when`` always applies; one with ``applies_when = (D, c)`` applies when D
        itself applies and a value chosen for D is c or lies below c in D's tree (choosing a subtype of
        *fault* counts as choosing *fault*). Order: the dimensions' display order.
        """
        applies: dict[str, bool] = {}

        def check(dimension: DimensionInfo, seen: frozenset[str]) -> bool:
            if dimension.key in applies:
                return applies[dimension.key]
            result = True
            if dimension.applies_when is not None:
                on_key, _ = dimension.applies_when
                on = self._dimensions_by_key.get(on_key)
                target = dimension.applies_when_category_id
                if on is None or on.retired or target is None or dimension.key in seen:
                    result = False
                else:
                    chosen = self._category_ids(on, values.get(on_key))
                    tree = self._trees[on.id]
                    result = check(on, seen | {dimension.key}) and any(
                        c == target or (c in tree and tree.is_descendant(c, target)) for c in chosen
                    )
            applies[dimension.key] = result
            return result

        return [d for d in self.dimensions if check(d, frozenset())]

    def _category_ids(self, dimension: DimensionInfo, value: CategoryValues) -> list[int]:
        if value is None:
            return []
        items: Iterable[int | str] = [value] if isinstance(value, int | str) else value
        ids: list[int] = []
        tree = self._trees[dimension.id]
        for item in items:
            if isinstance(item, int):
                ids.append(item)
            elif item.isdigit() and int(item) in tree:
                ids.append(int(item))
            else:
                try:
                    ids.append(tree.by_key(item).id)
                except ValueError:
                    continue
        return ids

    # --- Categories ----------------------------------------------------------------------------------

    def tree(self, dimension_key: str, *, active_only: bool = True) -> CategoryTree:
        """The dimension's category tree: active categories only, or every category."""
        dimension = self.dimension(dimension_key)
        return (self._active_trees if active_only else self._trees)[dimension.id]

    def category(self, category_id: int) -> CategoryInfo:
        try:
            return self.categories[category_id]
        except KeyError:
            raise LookupError(f"category {category_id} is not in this codebook") from None

    def category_by_key(self, dimension_key: str, key: str) -> CategoryInfo:
        """A category of the dimension by its exact key, whatever its status. Raises LookupError."""
        dimension = self.dimension(dimension_key)
        try:
            return self.categories[self._trees[dimension.id].by_key(key).id]
        except ValueError:
            raise LookupError(f"dimension {dimension_key!r} has no category with the key {key!r}") from None

    def resolve(self, dimension_key: str, text: str, *, active_only: bool = True) -> int:
        """The id of the category `text` names in the dimension: a key, a `` > ``-joined path of names
        (from the top or the end of one), or a bare name; case-insensitive (`tree.CategoryTree.resolve`).

        With `active_only` (the default) only active categories can match, except that an exact key always
        resolves, whatever the category's status (keys are identities; old label files name retired keys).
        Raises UnknownDimensionError, `tree.AmbiguousLabelError` (its `candidates` are the paths it could
        mean) or `tree.UnknownLabelError` (with close matches).
        """
        dimension = self.dimension(dimension_key)
        stripped = text.strip()
        if active_only:
            full = self._trees[dimension.id]
            try:
                return full.by_key(stripped).id
            except ValueError:
                pass
        return self.tree(dimension.key, active_only=active_only).resolve(text)

    def path_names(self, category_id: int) -> list[str]:
        """Names from the top category down to this one (any status)."""
        category = self.category(category_id)
        return self._trees[category.dimension_id].path_of_names(category_id)

    def path(self, category_id: int, sep: str = PATH_SEPARATOR) -> str:
        """The category's path of names, e.g. ``Training & Evaluation > Program Failure > Hang``."""
        return sep.join(self.path_names(category_id))

    def depth(self, category_id: int) -> int:
        """1 for a top-level category."""
        category = self.category(category_id)
        return self._trees[category.dimension_id].depth(category_id)

    def ancestor_at_depth(self, category_id: int, level: int) -> int:
        """The category's ancestor at `level` (1 = top); the category itself when it is not deeper than
        `level` (docs/design.md §6 levels). `level` < 1 raises ValueError."""
        category = self.category(category_id)
        return self._trees[category.dimension_id].ancestor_at_depth(category_id, level)

    def options(self, dimension_key: str, user_id: int | None = None) -> list[tuple[CategoryInfo, int]]:
        """What a user may pick in the dimension, as (category, depth) in tree order: the active
        categories plus `user_id`'s own open proposals (placed under their parent, after its children)."""
        dimension = self.dimension(dimension_key)
        active = self._active_trees[dimension.id]
        own: dict[int | None, list[CategoryInfo]] = {}
        if user_id is not None:
            for c in self._per_dimension.get(dimension.id, []):
                if c.is_proposed and c.proposed_by_id == user_id:
                    parent = c.parent_id if c.parent_id in active else None
                    own.setdefault(parent, []).append(c)
        out: list[tuple[CategoryInfo, int]] = []

        def visit(node_id: int | None, depth: int) -> None:
            for child in active.children(node_id):
                out.append((self.categories[child], depth))
                visit(child, depth + 1)
            for proposal in own.get(node_id, []):
                out.append((proposal, depth))

        visit(None, 1)
        return out

    # --- The file format -----------------------------------------------------------------------------

    def spec(self) -> CodebookSpec:
        """The active codebook as a `codebook_spec.CodebookSpec`: active dimensions in order, each with its
        active categories (proposals, retired and merged categories are not part of the shared codebook)."""
        dimensions = []
        for dimension in self.dimensions:
            tree = self._active_trees[dimension.id]

            def build(node_id: int, tree: CategoryTree = tree) -> CategorySpec:
                c = self.categories[node_id]
                return CategorySpec(
                    key=c.key,
                    name=c.name,
                    definition=c.definition,
                    include=c.include,
                    exclude=c.exclude,
                    examples=c.examples,
                    children=tuple(build(child) for child in tree.children(node_id)),
                )

            dimensions.append(
                DimensionSpec(
                    key=dimension.key,
                    name=dimension.name,
                    multiple=dimension.multiple,
                    applies_when=dimension.applies_when,
                    description=dimension.description,
                    categories=tuple(build(root) for root in tree.roots()),
                )
            )
        return CodebookSpec(name=self.name, dimensions=tuple(dimensions))

    def snapshot(self) -> dict[str, Any]:
        """The active codebook as docs/design.md §5 data (what `CodebookVersion.snapshot` stores)."""
        return codebook_to_data(self.spec())


def _nodes(rows: Iterable[CategoryInfo]) -> list[Node]:
    return [Node(c.id, c.parent_id, c.key, c.name) for c in rows]
