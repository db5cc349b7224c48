"""Checking a package's codebook.json: consistent with itself, with its stored versions, and (through
`check_value`) with every label of the package."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from apps.taxonomy.codebook_spec import KEY_PATTERN, CodebookError, codebook_from_data, codebook_to_data
from apps.taxonomy.index import CategoryInfo, CodebookIndex, DimensionInfo
from apps.taxonomy.models import (
    CategoryStatus,
    ChangeKind,
)
from apps.taxonomy.tree import TreeError

from .reading import Problems, expect, new_number, read_time, text_field, username_field


@dataclass
class PackageCodebook:
    data: dict[str, Any]
    index: CodebookIndex
    ids: dict[tuple[str, str], int]
    """(dimension key, category key) → the category's id in `index` (positional, not a database id)."""


def check_codebook(data: Any, problems: Problems, users: set[str]) -> PackageCodebook | None:
    where = "codebook.json"
    if not expect(data, dict, where, problems):
        return None
    before = len(problems.items)
    for name in ("dimensions", "categories", "versions", "changes"):
        if not isinstance(data.get(name), list):
            problems.add(where, f"{name!r} must be a list")
    version = data.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 0:
        problems.add(f"{where}.version", f"expected a whole number ≥ 0, got {version!r}")
    text_field(data, "name", where, problems)
    try:
        spec = codebook_from_data(data.get("codebook"))
    except CodebookError as exc:
        problems.add(f"{where}.codebook", f"not a valid codebook: {exc}")
        spec = None
    if len(problems.items) > before:
        return None
    dimension_infos: list[DimensionInfo] = []
    dimension_ids: dict[str, int] = {}
    conditions: dict[str, tuple[str, str]] = {}
    for position, raw in enumerate(data["dimensions"]):
        at = f"{where}.dimensions[{position}]"
        if not expect(raw, dict, at, problems):
            continue
        key = text_field(raw, "key", at, problems, empty=False)
        if key and not KEY_PATTERN.fullmatch(key):
            problems.add(f"{at}.key", f"not a valid key: {key!r}")
        if key in dimension_ids:
            problems.add(f"{at}.key", f"dimension {key!r} appears twice")
            continue
        condition = raw.get("applies_when")
        if condition is not None:
            if not (isinstance(condition, dict) and isinstance(condition.get("dimension"), str)
                    and isinstance(condition.get("category"), str)):  # fmt: skip
                problems.add(f"{at}.applies_when", "expected null or {'dimension': KEY, 'category': KEY}")
            else:
                conditions[key] = (condition["dimension"], condition["category"])
        multiple = raw.get("multiple")
        if not isinstance(multiple, bool):
            problems.add(f"{at}.multiple", f"expected true or false, got {multiple!r}")
        order = raw.get("position")
        if not isinstance(order, int) or isinstance(order, bool) or order < 0:
            problems.add(f"{at}.position", f"expected a whole number ≥ 0, got {order!r}")
            order = 0
        retired = read_time(raw.get("retired_at"), f"{at}.retired_at", problems, required=False)
        dimension_ids[key] = position + 1
        dimension_infos.append(
            DimensionInfo(
                id=position + 1,
                key=key,
                name=text_field(raw, "name", at, problems, empty=False),
                description=text_field(raw, "description", at, problems),
                multiple=bool(multiple),
                position=order,
                applies_when=None,
                applies_when_category_id=None,
                retired=retired is not None,
            )
        )
    category_rows: list[tuple[str, dict[str, Any], str]] = []
    ids: dict[tuple[str, str], int] = {}
    for position, raw in enumerate(data["categories"]):
        at = f"{where}.categories[{position}]"
        if not expect(raw, dict, at, problems):
            continue
        dimension = text_field(raw, "dimension", at, problems, empty=False)
        key = text_field(raw, "key", at, problems, empty=False)
        if dimension not in dimension_ids:
            problems.add(f"{at}.dimension", f"no dimension {dimension!r} in the codebook")
            continue
        if key and not KEY_PATTERN.fullmatch(key):
            problems.add(f"{at}.key", f"not a valid key: {key!r}")
        if (dimension, key) in ids:
            problems.add(f"{at}.key", f"category {key!r} appears twice in dimension {dimension!r}")
            continue
        if raw.get("status") not in CategoryStatus.values:
            problems.add(
                f"{at}.status",
                f"expected one of {', '.join(CategoryStatus.values)}, got {raw.get('status')!r}",
            )
        examples = raw.get("examples", [])
        if not isinstance(examples, list) or not all(isinstance(e, str) for e in examples):
            problems.add(f"{at}.examples", "expected a list of texts")
        order = raw.get("position")
        if not isinstance(order, int) or isinstance(order, bool) or order < 0:
            problems.add(f"{at}.position", f"expected a whole number ≥ 0, got {order!r}")
        read_time(raw.get("created_at"), f"{at}.created_at", problems, required=False)
        username_field(raw.get("proposed_by"), f"{at}.proposed_by", problems, users)
        for name in ("name", "definition", "include", "exclude", "proposal_reason"):
            text_field(raw, name, at, problems, empty=name != "name")
        ids[(dimension, key)] = position + 1
        category_rows.append((dimension, raw, at))
    if len(problems.items) > before:
        return None
    infos = []
    for dimension, raw, at in category_rows:
        parent, target = raw.get("parent"), raw.get("merged_into")
        if parent is not None and (dimension, parent) not in ids:
            problems.add(f"{at}.parent", f"no category {parent!r} in dimension {dimension!r}")
        if target is not None and (dimension, target) not in ids:
            problems.add(f"{at}.merged_into", f"no category {target!r} in dimension {dimension!r}")
        if raw["status"] == CategoryStatus.MERGED and target is None:
            problems.add(f"{at}.merged_into", "a merged category needs the category it was merged into")
        infos.append(
            CategoryInfo(
                id=ids[(dimension, raw["key"])],
                dimension_id=dimension_ids[dimension],
                parent_id=ids.get((dimension, parent)) if parent is not None else None,
                key=raw["key"],
                name=raw["name"],
                definition=raw.get("definition") or "",
                include=raw.get("include") or "",
                exclude=raw.get("exclude") or "",
                examples=tuple(raw.get("examples") or ()),
                position=raw["position"],
                status=raw["status"],
                merged_into_id=ids.get((dimension, target)) if target is not None else None,
                proposed_by_id=None,
            )
        )
    for key, (on_dimension, on_category) in conditions.items():
        if (on_dimension, on_category) not in ids:
            problems.add(
                f"{where}.dimensions[{key}].applies_when",
                f"no category {on_category!r} in dimension {on_dimension!r}",
            )
    if len(problems.items) > before:
        return None
    dimension_infos = [
        replace(d, applies_when=conditions[d.key], applies_when_category_id=ids[conditions[d.key]])
        if d.key in conditions
        else d
        for d in dimension_infos
    ]
    try:
        index = CodebookIndex(
            codebook_id=None, name=data.get("name") or "", version=data["version"],
            dimensions=dimension_infos, categories=infos,
        )  # fmt: skip
    except TreeError as exc:
        problems.add(f"{where}.categories", f"the categories do not form trees: {exc}")
        return None
    assert spec is not None
    snapshot = index.snapshot()
    if snapshot != codebook_to_data(spec):
        problems.add(
            f"{where}.codebook",
            "is inconsistent with the listed dimensions and categories (the active ones must give exactly "
            "this codebook)",
        )
    numbers: set[int] = set()
    for position, raw in enumerate(data["versions"]):
        at = f"{where}.versions[{position}]"
        if not expect(raw, dict, at, problems):
            continue
        number = new_number(raw, at, numbers, problems)
        if number is None:
            continue
        if not isinstance(raw.get("snapshot"), dict):
            problems.add(f"{at}.snapshot", "expected a codebook object")
        read_time(raw.get("created_at"), f"{at}.created_at", problems)
        username_field(raw.get("created_by"), f"{at}.created_by", problems, users)
    if numbers and max(numbers) != data["version"]:
        problems.add(
            f"{where}.version", f"is {data['version']} but the latest stored version is {max(numbers)}"
        )
    elif numbers:
        latest = next(v for v in data["versions"] if isinstance(v, dict) and v.get("number") == max(numbers))
        if latest.get("snapshot") != snapshot:
            problems.add(
                f"{where}.versions",
                f"the snapshot of version {max(numbers)} is not the codebook of the package",
            )
    for position, raw in enumerate(data["changes"]):
        at = f"{where}.changes[{position}]"
        if not expect(raw, dict, at, problems):
            continue
        number = raw.get("version")
        if not isinstance(number, int) or isinstance(number, bool) or not 0 <= number <= data["version"]:
            problems.add(
                f"{at}.version", f"expected a version between 0 and {data['version']}, got {number!r}"
            )
        if raw.get("kind") not in ChangeKind.values:
            problems.add(f"{at}.kind", f"unknown change kind {raw.get('kind')!r}")
        read_time(raw.get("at"), f"{at}.at", problems)
        username_field(raw.get("actor"), f"{at}.actor", problems, users)
        dimension = raw.get("dimension")
        if dimension is not None and dimension not in dimension_ids:
            problems.add(f"{at}.dimension", f"no dimension {dimension!r} in the codebook")
        category = raw.get("category")
        if category is not None and (
            not isinstance(category, dict) or (category.get("dimension"), category.get("key")) not in ids
        ):
            problems.add(f"{at}.category", f"no such category: {category!r}"[:200])
        for name in ("before", "after"):
            if not isinstance(raw.get(name), dict):
                problems.add(f"{at}.{name}", "expected an object")
        text_field(raw, "note", at, problems)
    if len(problems.items) > before:
        return None
    return PackageCodebook(data, index, ids)


def check_value(
    book: PackageCodebook, dimension: str, key: str, path: str | None, where: str, problems: Problems
) -> int | None:
    """The category id of (dimension, key), checking that `path` (when given) is its path."""
    category_id = book.ids.get((dimension, key))
    if category_id is None:
        problems.add(where, f"no category {key!r} in dimension {dimension!r} of codebook.json")
        return None
    if path is not None and path != book.index.path(category_id):
        problems.add(
            where,
            f"the path {path!r} is not the path of {key!r} in codebook.json "
            f"({book.index.path(category_id)!r}): the codebook is inconsistent with the labels",
        )
    return category_id
