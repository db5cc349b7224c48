"""Codebook files in and out: `load_codebook` applies a file as recorded changes, `export_codebook` writes
the codebook as JSON, YAML or Markdown (docs/design.md §4 ``load_codebook``, §5 codebook format).

Loading compares the file with the active codebook (`codebook_diff.diff_codebooks`, categories matched by
key within their dimension) and applies the difference through the same change set as the editor: one
`CodebookChange` per difference, the version raised by exactly one, one `CodebookVersion` snapshot, all in
one transaction under the codebook's row lock. The same file loaded twice finds no difference and changes
nothing. A key the file adds that the database already holds (retired, merged or an open proposal) is
restored or accepted rather than duplicated; a key the file drops is retired, never deleted.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from django.db import transaction
from django.db.models import Count
from django.utils import timezone

from apps.accounts.models import Study, User

from .codebook_diff import Change, diff_codebooks
from .codebook_markdown import codebook_markdown
from .codebook_spec import (
    CodebookSpec,
    dump_codebook,
    read_codebook,
    validate_codebook,
    walk_categories,
)
from .index import CodebookIndex
from .label_stores import GOLD, store
from .models import Category, CategoryStatus, ChangeKind, Codebook, Dimension
from .services import ChangeSet, CodebookEditError, changing, check_single_choice

ExportFormat = Literal["json", "yaml", "md"]
EXPORT_FORMATS: tuple[ExportFormat, ...] = ("json", "yaml", "md")
CONTENT_TYPES = {
    "json": "application/json",
    "yaml": "application/yaml",
    "md": "text/markdown; charset=utf-8",
}


@dataclass(frozen=True)
class LoadResult:
    """What a load did (or, with `dry_run`, would do). `version` is the version after the load."""

    changes: tuple[Change, ...]
    version: int
    created: bool
    dry_run: bool
    renamed: tuple[str, str] | None = None

    @property
    def changed(self) -> bool:
        return bool(self.changes) or self.renamed is not None

    def lines(self) -> list[str]:
        """One line per change, for people (the command's output, the upload preview)."""
        out = []
        if self.renamed is not None:
            out.append(f"rename codebook: {self.renamed[0]!r} → {self.renamed[1]!r}")
        out.extend(change.describe() for change in self.changes)
        return out


def load_codebook_file(
    study: Study, path: str | Path, *, actor: User | None = None, dry_run: bool = False
) -> LoadResult:
    """Read and validate a .json/.yaml/.yml file (`codebook_spec.CodebookError` names the offending
    entry's path), then `load_codebook`."""
    return load_codebook(
        study, read_codebook(path), actor=actor, dry_run=dry_run, note=f"loaded {Path(path).name}"
    )


def load_codebook(
    study: Study,
    spec: CodebookSpec,
    *,
    actor: User | None = None,
    dry_run: bool = False,
    note: str = "loaded from a file",
) -> LoadResult:
    """Make the study's active codebook equal `spec`, recording the difference (module docstring).

    Creates the codebook when the study has none. With `dry_run` nothing is written (not even the
    codebook) and the result lists what would change. Raises `codebook_spec.CodebookError` for an invalid
    spec and `services.CodebookEditError` when the difference cannot be applied (a dimension made
    single-choice while findings hold several of its categories); then nothing is written.
    """
    validate_codebook(spec)
    with transaction.atomic():
        book = Codebook.objects.select_for_update().filter(study=study).first()
        created = book is None
        if book is None:
            old = CodebookSpec(name=spec.name)
            version = 0
        else:
            index = CodebookIndex.for_codebook(book)
            old = index.spec()
            version = book.version
        changes = tuple(diff_codebooks(old, spec))
        renamed = (old.name, spec.name) if old.name != spec.name else None
        if book is not None:
            _preflight(book, changes)
        if dry_run:
            return LoadResult(changes, version, created, True, renamed)
        if book is None:
            book = Codebook.objects.create(study=study, name=spec.name)
        if not changes and renamed is None:
            return LoadResult(changes, book.version, created, False, None)
        with changing(book.pk, actor, note=note) as change_set:
            if renamed is not None:
                change_set.book.name = spec.name
                change_set.book.save(update_fields=["name"])
                change_set.record(
                    ChangeKind.EDIT,
                    before={"name": renamed[0]},
                    after={"name": renamed[1]},
                    note="codebook renamed",
                )
            _Applier(change_set).apply(changes, spec)
        return LoadResult(changes, change_set.book.version, created, False, renamed)


def _preflight(book: Codebook, changes: tuple[Change, ...]) -> None:
    """Checks that need the database, run before anything is written (and by dry runs)."""
    for change in changes:
        if change.kind == "edit_dimension" and change.after.get("multiple") is False:
            dimension = Dimension.objects.get(codebook=book, key=change.dimension)
            check_single_choice(dimension)


class _Applier:
    """Applies diff changes in order; every category and dimension of the codebook is loaded once."""

    def __init__(self, changes: ChangeSet) -> None:
        self.changes = changes
        book = changes.book
        self.dimensions = {d.key: d for d in Dimension.objects.filter(codebook=book)}
        self.categories = {
            (c.dimension.key, c.key): c
            for c in Category.objects.filter(dimension__codebook=book).select_related("dimension")
        }

    def apply(self, changes: tuple[Change, ...], spec: CodebookSpec) -> None:
        for change in changes:
            getattr(self, f"_{change.kind}")(change)
        self._normalise_positions(spec)

    # Categories -----------------------------------------------------------------------------------

    def _category(self, change: Change) -> Category:
        assert change.category is not None  # category kinds always name one
        try:
            return self.categories[(change.dimension, change.category)]
        except KeyError:
            raise CodebookEditError(
                f"{change.dimension}/{change.category} is not in the codebook (was it changed meanwhile?)"
            ) from None

    def _parent(self, dimension: str, key: str | None) -> Category | None:
        if key is None:
            return None
        return self.categories[(dimension, key)]

    def _set(self, category: Category, values: dict[str, Any]) -> None:
        for name, value in values.items():
            if name == "parent":
                category.parent = self._parent(category.dimension.key, value)
            else:
                setattr(category, name, value)

    def _add(self, change: Change) -> None:
        dimension = self.dimensions[change.dimension]
        key = change.category
        assert key is not None
        after = dict(change.after)
        existing = self.categories.get((dimension.key, key))
        if existing is None:
            category = Category(dimension=dimension, key=key)
            self._set(category, after)
            category.save()
            self.categories[(dimension.key, key)] = category
            self.changes.record(ChangeKind.ADD, category=category, after=after)
            return
        # The key exists but is not active: restore (or accept) it with the file's fields.
        merged_into = existing.merged_into.key if existing.merged_into is not None else None
        before: dict[str, Any] = {"status": existing.status, "merged_into": merged_into}
        before.update({name: self._field(existing, name) for name in after})
        kind = {
            CategoryStatus.PROPOSED: ChangeKind.ACCEPT,
            CategoryStatus.ACTIVE: ChangeKind.EDIT,
        }.get(CategoryStatus(existing.status), ChangeKind.RESTORE)
        self._set(existing, after)
        existing.status = CategoryStatus.ACTIVE
        existing.merged_into = None
        existing.save()
        self.changes.record(kind, category=existing, before=before, after={"status": "active", **after})

    def _field(self, category: Category, name: str) -> Any:
        if name == "parent":
            return category.parent.key if category.parent_id and category.parent else None
        value = getattr(category, name)
        return list(value) if name == "examples" else value

    def _update(self, change: Change, kind: str) -> None:
        category = self._category(change)
        self._set(category, change.after)
        category.save()
        self.changes.record(kind, category=category, before=change.before, after=change.after)

    def _move(self, change: Change) -> None:
        self._update(change, ChangeKind.MOVE)

    def _reorder(self, change: Change) -> None:
        self._update(change, ChangeKind.REORDER)

    def _rename(self, change: Change) -> None:
        self._update(change, ChangeKind.RENAME)

    def _edit(self, change: Change) -> None:
        self._update(change, ChangeKind.EDIT)

    def _retire(self, change: Change) -> None:
        category = self._category(change)
        category.status = CategoryStatus.RETIRED
        category.save(update_fields=["status"])
        self.changes.record(
            ChangeKind.RETIRE,
            category=category,
            before={"status": "active", **change.before},
            after={"status": "retired"},
        )

    # Dimensions -----------------------------------------------------------------------------------

    def _condition(self, value: dict[str, str] | None) -> Category | None:
        if not value:
            return None
        ((dimension, key),) = value.items()
        try:
            return self.categories[(dimension, key)]
        except KeyError:
            raise CodebookEditError(
                f"applies_when names {dimension}/{key}, which is not in the codebook"
            ) from None

    def _set_dimension(self, dimension: Dimension, values: dict[str, Any]) -> None:
        for name, value in values.items():
            if name == "applies_when":
                dimension.applies_when_category = self._condition(value)
            else:
                setattr(dimension, name, value)

    def _add_dimension(self, change: Change) -> None:
        existing = self.dimensions.get(change.dimension)
        if existing is None:
            dimension = Dimension(codebook=self.changes.book, key=change.dimension)
            self._set_dimension(dimension, change.after)
            dimension.save()
            self.dimensions[dimension.key] = dimension
            self.changes.record(ChangeKind.ADD_DIMENSION, dimension=dimension, after=change.after)
            return
        if not change.after["multiple"] and existing.multiple:
            check_single_choice(existing)
        before = {"retired": True, "name": existing.name, "multiple": existing.multiple}
        self._set_dimension(existing, change.after)
        existing.retired_at = None
        existing.save()
        self.changes.record(
            ChangeKind.ADD_DIMENSION, dimension=existing, before=before, after=change.after, note="restored"
        )

    def _edit_dimension(self, change: Change) -> None:
        dimension = self.dimensions[change.dimension]
        self._set_dimension(dimension, change.after)
        dimension.save()
        self.changes.record(
            ChangeKind.EDIT_DIMENSION, dimension=dimension, before=change.before, after=change.after
        )

    def _retire_dimension(self, change: Change) -> None:
        dimension = self.dimensions[change.dimension]
        dimension.retired_at = timezone.now()
        dimension.save(update_fields=["retired_at"])
        self.changes.record(ChangeKind.RETIRE_DIMENSION, dimension=dimension, before=change.before)

    def _normalise_positions(self, spec: CodebookSpec) -> None:
        """Make stored positions exactly the file's sibling order (the recorded changes explain every
        difference in order; this only renumbers)."""
        changed_dimensions = []
        changed_categories = []
        for position, dimension_spec in enumerate(spec.dimensions):
            dimension = self.dimensions[dimension_spec.key]
            if dimension.position != position:
                dimension.position = position
                changed_dimensions.append(dimension)
            for entry in walk_categories(dimension_spec.categories):
                category = self.categories[(dimension.key, entry.category.key)]
                if category.position != entry.position:
                    category.position = entry.position
                    changed_categories.append(category)
        Dimension.objects.bulk_update(changed_dimensions, ["position"])
        Category.objects.bulk_update(changed_categories, ["position"])


# --- Export ------------------------------------------------------------------------------------------


def gold_counts(book: Codebook) -> dict[tuple[str, str], int]:
    """(dimension key, category key) → gold labels of the current decisions: what taxonomy papers count."""
    rows = (
        store(GOLD)
        .counted()
        .filter(category__dimension__codebook=book)
        .values_list("dimension__key", "category__key")
        .annotate(n=Count("id"))
    )
    return {(d, c): n for d, c, n in rows}


def export_codebook(study: Study, format: ExportFormat, *, counts: bool = True) -> str:
    """The active codebook as a §5 JSON or YAML file (loading it back changes nothing), or as Markdown:
    definitions, criteria, examples, gold-label counts per category (with `counts`), and the retired and
    merged categories with where they went."""
    index = CodebookIndex.for_study(study)
    spec = index.spec()
    if format == "json" or format == "yaml":
        return dump_codebook(spec, format)
    if format != "md":
        raise ValueError(f"unknown format {format!r}: expected json, yaml or md")
    book = Codebook.objects.filter(study=study).first()
    label_counts = gold_counts(book) if counts and book is not None else {}
    text = codebook_markdown(spec, label_counts)
    head, _, rest = text.partition("\n")
    lines = [head, "", f"Codebook version {index.version}."]
    if label_counts:
        lines[-1] += " Counts are gold labels of the current decisions."
    text = "\n".join(lines) + "\n" + rest
    gone = [
        c
        for c in index.categories.values()
        if c.status in (CategoryStatus.RETIRED, CategoryStatus.MERGED)
        and not index.dimension(c.dimension_id).retired
    ]
    if gone:
        extra = ["", "## Retired and merged categories", ""]
        for c in sorted(gone, key=lambda c: (index.dimension(c.dimension_id).position, index.path(c.id))):
            dimension = index.dimension(c.dimension_id)
            where = f"merged into {index.path(c.merged_into_id)}" if c.merged_into_id else "retired"
            extra.append(f"- {dimension.name}: {index.path(c.id)} (`{c.key}`): {where}")
        text = text.rstrip("\n") + "\n" + "\n".join(extra) + "\n"
    return text
