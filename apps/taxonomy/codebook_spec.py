"""Codebook files (docs/design.md §5): parse, validate, dump, render as Markdown, and diff. No Django.

A codebook file is JSON or YAML::

    name: Distributed training faults
    dimensions:
      - key: symptom
        name: Symptom
        multiple: false                      # optional, default false
        applies_when: {issue-type: fault}    # optional: one DIMENSION_KEY: CATEGORY_KEY pair
        description: ...                     # optional
        categories:
          - key: training-evaluation
            name: Training & Evaluation
            definition: ...                  # optional; so are include, exclude, examples, children
            include: ...
            exclude: ...
            examples: [https://github.com/horovod/horovod/issues/100]
            children: [...]

Rules (a file breaking any of them is refused whole, with every problem listed):

* keys match ``^[a-z0-9][a-z0-9_-]*$`` (at most 64 characters for a dimension, 100 for a category, the
  database's limits); dimension keys are unique in the codebook and category keys unique within their
  dimension, across the whole tree, because a key alone names a category in a labels file;
* names are one non-empty line without ``>`` (the separator of category paths, ``A > B``), at most 200
  characters, and sibling categories have different names (ignoring case), so a path names one category;
* ``applies_when`` names another dimension and one of its categories (at any depth), and the chain of
  ``applies_when`` references has no cycle (A applies when B = x, B applies when A = y could never apply);
* fields have the documented types, and unknown fields are refused (a typo such as ``defintion`` would
  otherwise lose a definition silently); no field is given twice;
* categories nest at most 20 levels deep, and YAML anchors and aliases are refused (nested aliases let a
  small file expand into an enormous one).

Category trees are nested, never referenced, so a category tree cannot contain a cycle. Text fields are
stripped of surrounding whitespace (a YAML block scalar's trailing newline is not an edit); ``null`` means
absent for optional fields. ``parse_codebook(dump_codebook(spec, f), f) == spec`` for a valid spec.

Problem paths read ``dimensions[symptom].categories[training-evaluation].children[3].name``: an element is
named by its key when it has one, else by its position (from 0).
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml

from apps.core.files import FileReadError, read_text

KEY_PATTERN = re.compile(r"[a-z0-9][a-z0-9_-]*")
DIMENSION_KEY_MAX_LENGTH = 64
CATEGORY_KEY_MAX_LENGTH = 100
NAME_MAX_LENGTH = 200
PATH_SEPARATOR = " > "
MAX_CATEGORY_DEPTH = 20
MAX_NESTING = 64  # levels of YAML/JSON nesting: 2 per category level, far beyond any real taxonomy

Format = Literal["json", "yaml"]
ChangeKind = Literal[
    "add",
    "rename",
    "move",
    "edit",
    "reorder",
    "retire",
    "add_dimension",
    "edit_dimension",
    "retire_dimension",
]

_CODEBOOK_FIELDS = ("name", "dimensions")
_DIMENSION_FIELDS = ("key", "name", "multiple", "applies_when", "description", "categories")
_CATEGORY_FIELDS = ("key", "name", "definition", "include", "exclude", "examples", "children")


class CodebookError(ValueError):
    """A codebook refused. `path` and `message` describe the first problem; `problems` lists them all."""

    def __init__(self, path: str, message: str, problems: Sequence[tuple[str, str]] = ()) -> None:
        self.path = path
        self.message = message
        self.problems: tuple[tuple[str, str], ...] = tuple(problems) or ((path, message),)
        lines = [f"{p}: {m}" if p else m for p, m in self.problems]
        text = lines[0] if len(lines) == 1 else f"{len(lines)} problems:\n" + "\n".join(lines)
        super().__init__(text)


@dataclass(frozen=True)
class CategorySpec:
    key: str
    name: str
    definition: str = ""
    include: str = ""
    exclude: str = ""
    examples: tuple[str, ...] = ()
    children: tuple[CategorySpec, ...] = ()


@dataclass(frozen=True)
class DimensionSpec:
    key: str
    name: str
    multiple: bool = False
    applies_when: tuple[str, str] | None = None  # (dimension key, category key)
    description: str = ""
    categories: tuple[CategorySpec, ...] = ()


@dataclass(frozen=True)
class CodebookSpec:
    name: str
    dimensions: tuple[DimensionSpec, ...] = ()


@dataclass(frozen=True)
class WalkedCategory:
    """A category met in a depth-first walk: its parent's key (None at the top), depth (top = 1),
    position among its siblings and path of names from the top."""

    category: CategorySpec
    parent: str | None
    depth: int
    position: int
    names: tuple[str, ...]


def walk_categories(categories: Sequence[CategorySpec]) -> Iterator[WalkedCategory]:
    """Pre-order walk of a category tree: every parent comes before its children, siblings in order."""

    def visit(
        nodes: Sequence[CategorySpec], parent: str | None, depth: int, names: tuple[str, ...]
    ) -> Iterator[WalkedCategory]:
        for position, node in enumerate(nodes):
            path = (*names, node.name)
            yield WalkedCategory(node, parent, depth, position, path)
            yield from visit(node.children, node.key, depth + 1, path)

    return visit(categories, None, 1, ())


# --- Parsing -------------------------------------------------------------------------------------------


class _Problems:
    def __init__(self) -> None:
        self.items: list[tuple[str, str]] = []

    def add(self, path: str, message: str) -> None:
        self.items.append((path, message))

    def raise_if_any(self) -> None:
        if self.items:
            path, message = self.items[0]
            raise CodebookError(path, message, self.items)


class _JsonObject(dict[str, Any]):
    """A JSON object that remembers the names it saw twice (json keeps the last one silently)."""

    duplicates: list[str]


def _json_object(pairs: list[tuple[str, Any]]) -> _JsonObject:
    obj = _JsonObject()
    obj.duplicates = []
    for name, value in pairs:
        if name in obj:
            obj.duplicates.append(name)
        obj[name] = value
    return obj


def _yaml_structure_problems(text: str) -> list[tuple[str, str]]:
    """Duplicate mapping keys (`yaml.safe_load` keeps the last one silently) and aliases, by line.

    Aliases are refused: a codebook has no use for them, and nested aliases make a small file expand into
    an enormous one. Uses `yaml.compose` with the SafeLoader, which builds nodes and constructs no Python
    object, and visits each node once (an alias is the node it names, met a second time).
    """
    found: list[tuple[str, str]] = []
    root = yaml.compose(text, Loader=yaml.SafeLoader)
    stack: list[tuple[yaml.Node, int]] = [(root, 1)] if root is not None else []
    visited: set[int] = set()
    while stack:
        node, depth = stack.pop()
        line = node.start_mark.line + 1
        if id(node) in visited:
            found.append((f"line {line}", "YAML aliases are not allowed in a codebook (the anchor is here)"))
            continue
        visited.add(id(node))
        if depth > MAX_NESTING:
            found.append((f"line {line}", f"nested more than {MAX_NESTING} levels deep"))
        elif isinstance(node, yaml.MappingNode):
            seen: set[str] = set()
            for key_node, value_node in node.value:
                if isinstance(key_node, yaml.ScalarNode):
                    if key_node.value in seen:
                        key_line = key_node.start_mark.line + 1
                        found.append((f"line {key_line}", f"duplicate field {key_node.value!r}"))
                    seen.add(key_node.value)
                stack.append((value_node, depth + 1))
        elif isinstance(node, yaml.SequenceNode):
            stack.extend((child, depth + 1) for child in node.value)
    return sorted(set(found), key=lambda p: (int(p[0].split()[1]), p[1]))


def format_of(path: str | Path) -> Format:
    """The format a file name implies: ``.json`` → json, ``.yaml``/``.yml`` → yaml; else CodebookError."""
    suffix = Path(path).suffix.lower()
    if suffix == ".json":
        return "json"
    if suffix in (".yaml", ".yml"):
        return "yaml"
    raise CodebookError("", f"cannot tell the format of {str(path)!r}: expected a .json, .yaml or .yml file")


def read_codebook(path: str | Path) -> CodebookSpec:
    """Read and validate a codebook file (UTF-8), the format given by its extension."""
    fmt = format_of(path)
    try:
        text = read_text(path)
    except FileReadError as exc:
        raise CodebookError("", str(exc)) from exc
    return parse_codebook(text, fmt)


def parse_codebook(text: str, format: Format) -> CodebookSpec:
    """Parse and validate codebook text. Raises CodebookError listing every problem found."""
    data: Any
    if format == "json":
        try:
            data = json.loads(text, object_pairs_hook=_json_object)
        except json.JSONDecodeError as exc:
            raise CodebookError(f"line {exc.lineno}, column {exc.colno}", f"invalid JSON: {exc.msg}") from exc
        except RecursionError as exc:
            raise CodebookError("", "invalid JSON: nested too deeply") from exc
    elif format == "yaml":
        try:
            structure = _yaml_structure_problems(text)
            if structure:
                path, message = structure[0]
                raise CodebookError(path, message, structure)
            data = yaml.safe_load(text)
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else ""
            raise CodebookError(where, f"invalid YAML: {exc.problem or exc.context}") from exc
        except yaml.YAMLError as exc:
            raise CodebookError("", f"invalid YAML: {exc}") from exc
    else:
        raise CodebookError("", f"unknown format {format!r}: expected 'json' or 'yaml'")
    return codebook_from_data(data)


def codebook_from_data(data: Any) -> CodebookSpec:
    """Build and validate a spec from already-decoded JSON/YAML data (dicts, lists, strings, bools)."""
    problems = _Problems()
    spec = _parse_codebook(data, problems)
    problems.raise_if_any()
    assert spec is not None  # no problem means every part parsed
    validate_codebook(spec)
    return spec


def _describe(value: Any) -> str:
    kinds = {bool: "a boolean", int: "a number", float: "a number", list: "a list", type(None): "null"}
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, str):
        return f"the string {value!r}"
    kind = kinds.get(type(value), type(value).__name__)
    return f"{kind} ({value!r})" if isinstance(value, bool | int | float) else kind


def _mapping(value: Any, path: str, what: str, fields: Sequence[str], problems: _Problems) -> bool:
    if not isinstance(value, Mapping):
        problems.add(path, f"expected {what} (a mapping), got {_describe(value)}")
        return False
    for name in getattr(value, "duplicates", ()):
        problems.add(path, f"duplicate field {name!r}")
    for name in value:
        if name not in fields:
            close = difflib.get_close_matches(str(name), fields, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else f"; allowed: {', '.join(fields)}"
            problems.add(path, f"unknown field {name!r}{hint}")
    return True


def _text(obj: Mapping[str, Any], name: str, path: str, problems: _Problems, *, required: bool) -> str:
    value = obj.get(name)
    if value is None:
        if required:
            problems.add(path, f"missing required field {name!r}")
        return ""
    if not isinstance(value, str):
        hint = " (quote it in YAML)" if isinstance(value, bool | int | float) else ""
        problems.add(f"{path}.{name}", f"expected a string, got {_describe(value)}{hint}")
        return ""
    return value.strip()


def _key(obj: Mapping[str, Any]) -> str | None:
    value = obj.get("key")
    return value if isinstance(value, str) and value else None


def _list(obj: Mapping[str, Any], name: str, path: str, problems: _Problems) -> list[Any]:
    value = obj.get(name)
    if value is None:
        return []
    if not isinstance(value, list):
        problems.add(f"{path}.{name}", f"expected a list, got {_describe(value)}")
        return []
    return value


def _parse_codebook(data: Any, problems: _Problems) -> CodebookSpec | None:
    if not _mapping(data, "", "a codebook", _CODEBOOK_FIELDS, problems):
        return None
    name = _text(data, "name", "", problems, required=True)
    if "dimensions" not in data:
        problems.add("", "missing required field 'dimensions'")
    dimensions = []
    for index, raw in enumerate(_list(data, "dimensions", "", problems)):
        key = _key(raw) if isinstance(raw, Mapping) else None
        dimension = _parse_dimension(raw, f"dimensions[{key or index}]", problems)
        if dimension is not None:
            dimensions.append(dimension)
    return CodebookSpec(name=name, dimensions=tuple(dimensions))


def _parse_dimension(raw: Any, path: str, problems: _Problems) -> DimensionSpec | None:
    if not _mapping(raw, path, "a dimension", _DIMENSION_FIELDS, problems):
        return None
    key = _text(raw, "key", path, problems, required=True)
    name = _text(raw, "name", path, problems, required=True)
    multiple = raw.get("multiple", False)
    if multiple is None:
        multiple = False
    if not isinstance(multiple, bool):
        problems.add(f"{path}.multiple", f"expected true or false, got {_describe(multiple)}")
        multiple = False
    applies_when: tuple[str, str] | None = None
    condition = raw.get("applies_when")
    if condition is not None:
        if (
            not isinstance(condition, Mapping)
            or len(condition) != 1
            or not all(isinstance(part, str) for pair in condition.items() for part in pair)
        ):
            problems.add(
                f"{path}.applies_when",
                f"expected one DIMENSION_KEY: CATEGORY_KEY pair, got {_describe(condition)}",
            )
        else:
            ((on_dimension, on_category),) = condition.items()
            applies_when = (on_dimension, on_category)
    categories = []
    for index, child in enumerate(_list(raw, "categories", path, problems)):
        child_key = _key(child) if isinstance(child, Mapping) else None
        category = _parse_category(child, f"{path}.categories[{child_key or index}]", problems)
        if category is not None:
            categories.append(category)
    return DimensionSpec(
        key=key,
        name=name,
        multiple=multiple,
        applies_when=applies_when,
        description=_text(raw, "description", path, problems, required=False),
        categories=tuple(categories),
    )


def _parse_category(raw: Any, path: str, problems: _Problems, depth: int = 1) -> CategorySpec | None:
    if not _mapping(raw, path, "a category", _CATEGORY_FIELDS, problems):
        return None
    if depth > MAX_CATEGORY_DEPTH:
        problems.add(path, f"categories nest more than {MAX_CATEGORY_DEPTH} levels deep")
        return None
    key = _text(raw, "key", path, problems, required=True)
    name = _text(raw, "name", path, problems, required=True)
    definition = _text(raw, "definition", path, problems, required=False)
    include = _text(raw, "include", path, problems, required=False)
    exclude = _text(raw, "exclude", path, problems, required=False)
    examples = []
    for index, example in enumerate(_list(raw, "examples", path, problems)):
        if not isinstance(example, str):
            problems.add(f"{path}.examples[{index}]", f"expected a string, got {_describe(example)}")
        elif not example.strip():
            problems.add(f"{path}.examples[{index}]", "empty example")
        else:
            examples.append(example.strip())
    children = []
    for index, child in enumerate(_list(raw, "children", path, problems)):
        child_key = _key(child) if isinstance(child, Mapping) else None
        category = _parse_category(child, f"{path}.children[{child_key or index}]", problems, depth + 1)
        if category is not None:
            children.append(category)
    return CategorySpec(
        key=key,
        name=name,
        definition=definition,
        include=include,
        exclude=exclude,
        examples=tuple(examples),
        children=tuple(children),
    )


# --- Validation ----------------------------------------------------------------------------------------


def _fold(name: str) -> str:
    return " ".join(name.split()).casefold()


def _check_key(key: str, path: str, what: str, max_length: int, problems: _Problems) -> None:
    if not key:
        problems.add(path, f"{what} key is empty")
    elif not KEY_PATTERN.fullmatch(key):
        problems.add(
            path,
            f"{what} key {key!r} must start with a lower-case letter or digit and contain only "
            "lower-case letters, digits, '-' and '_'",
        )
    elif len(key) > max_length:
        problems.add(path, f"{what} key {key!r} is longer than {max_length} characters")


def _check_name(name: str, path: str, what: str, problems: _Problems) -> None:
    if not name.strip():
        problems.add(path, f"{what} name is empty")
    elif len(name.splitlines()) > 1:
        problems.add(path, f"{what} name {name!r} spans several lines")
    elif ">" in name:
        problems.add(path, f"{what} name {name!r} contains '>', the separator of category paths")
    elif len(name) > NAME_MAX_LENGTH:
        problems.add(path, f"{what} name {name[:40]!r}... is longer than {NAME_MAX_LENGTH} characters")


def validate_codebook(spec: CodebookSpec) -> None:
    """Check the value rules of the module docstring on a spec (parsed or built in code).

    Raises CodebookError listing every problem; returns None when the spec is valid.
    """
    problems = _Problems()
    if not spec.name.strip():
        problems.add("name", "the codebook name is empty")
    dimension_keys: dict[str, int] = {}
    category_keys: dict[str, set[str]] = {}
    for d_index, dimension in enumerate(spec.dimensions):
        d_path = f"dimensions[{dimension.key or d_index}]"
        _check_key(dimension.key, d_path, "dimension", DIMENSION_KEY_MAX_LENGTH, problems)
        _check_name(dimension.name, d_path, "dimension", problems)
        if dimension.key in dimension_keys:
            problems.add(
                f"dimensions[{d_index}]",
                f"duplicate dimension key {dimension.key!r} (also dimension {dimension_keys[dimension.key]})",
            )
        else:
            dimension_keys[dimension.key] = d_index
        keys = category_keys.setdefault(dimension.key, set())
        first_at: dict[str, str] = {}
        _check_categories(dimension.categories, f"{d_path}.categories", keys, first_at, problems)
    for d_index, dimension in enumerate(spec.dimensions):
        if dimension.applies_when is None:
            continue
        path = f"dimensions[{dimension.key or d_index}].applies_when"
        on_dimension, on_category = dimension.applies_when
        if on_dimension == dimension.key:
            problems.add(path, f"dimension {dimension.key!r} cannot depend on itself")
        elif on_dimension not in dimension_keys:
            close = difflib.get_close_matches(on_dimension, list(dimension_keys), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            problems.add(path, f"unknown dimension {on_dimension!r}{hint}")
        elif on_category not in category_keys[on_dimension]:
            close = difflib.get_close_matches(on_category, sorted(category_keys[on_dimension]), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            problems.add(path, f"dimension {on_dimension!r} has no category {on_category!r}{hint}")
    cycle = _applies_when_cycle(spec)
    if cycle:
        problems.add(
            f"dimensions[{cycle[0]}].applies_when",
            "applies_when forms a cycle, so none of these dimensions could ever apply: " + " → ".join(cycle),
        )
    problems.raise_if_any()


def _check_categories(
    categories: Sequence[CategorySpec],
    path: str,
    keys: set[str],
    first_at: dict[str, str],
    problems: _Problems,
) -> None:
    sibling_names: dict[str, str] = {}
    for index, category in enumerate(categories):
        c_path = f"{path}[{category.key or index}]"
        _check_key(category.key, c_path, "category", CATEGORY_KEY_MAX_LENGTH, problems)
        _check_name(category.name, c_path, "category", problems)
        if category.key in keys:
            problems.add(
                f"{path}[{index}]",
                f"duplicate category key {category.key!r} in this dimension "
                f"(first at {first_at[category.key]})",
            )
        else:
            keys.add(category.key)
            first_at[category.key] = c_path
        folded = _fold(category.name)
        if folded and folded in sibling_names:
            problems.add(
                c_path,
                f"category {category.key!r} has the same name as its sibling {sibling_names[folded]!r} "
                f"({category.name!r}), so a path of names could not tell them apart",
            )
        sibling_names.setdefault(folded, category.key)
        _check_categories(category.children, f"{c_path}.children", keys, first_at, problems)


def _applies_when_cycle(spec: CodebookSpec) -> list[str]:
    """The first cycle of applies_when references (keys, first repeated at the end), or []."""
    # A dimension naming itself is reported on its own; here only cycles through other dimensions.
    depends_on = {
        d.key: d.applies_when[0]
        for d in spec.dimensions
        if d.applies_when is not None and d.applies_when[0] != d.key
    }
    for start in depends_on:
        chain = [start]
        current = start
        while current in depends_on:
            current = depends_on[current]
            if current in chain:
                return [*chain[chain.index(current) :], current]
            chain.append(current)
    return []


# --- Dumping -------------------------------------------------------------------------------------------


def _category_data(category: CategorySpec) -> dict[str, Any]:
    data: dict[str, Any] = {"key": category.key, "name": category.name}
    for name in ("definition", "include", "exclude"):
        if getattr(category, name):
            data[name] = getattr(category, name)
    if category.examples:
        data["examples"] = list(category.examples)
    if category.children:
        data["children"] = [_category_data(child) for child in category.children]
    return data


def codebook_to_data(spec: CodebookSpec) -> dict[str, Any]:
    """The spec as plain JSON-ready data in the file format (empty optional fields left out)."""
    dimensions = []
    for dimension in spec.dimensions:
        data: dict[str, Any] = {"key": dimension.key, "name": dimension.name, "multiple": dimension.multiple}
        if dimension.applies_when is not None:
            data["applies_when"] = {dimension.applies_when[0]: dimension.applies_when[1]}
        if dimension.description:
            data["description"] = dimension.description
        data["categories"] = [_category_data(category) for category in dimension.categories]
        dimensions.append(data)
    return {"name": spec.name, "dimensions": dimensions}


class _YamlDumper(yaml.SafeDumper):
    """The safe dumper, writing strings with a NEL (U+0085) double-quoted: PyYAML's plain and single-quoted
    styles turn it into a line break that does not load back as written."""


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = '"' if "\x85" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_YamlDumper.add_representer(str, _represent_str)


def dump_codebook(spec: CodebookSpec, format: Format) -> str:
    """The spec as JSON (2-space indent, UTF-8 characters kept) or YAML (block style, field order kept)."""
    data = codebook_to_data(spec)
    if format == "json":
        return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    if format == "yaml":
        dumped: str = yaml.dump(
            data, Dumper=_YamlDumper, sort_keys=False, allow_unicode=True, default_flow_style=False, width=100
        )
        return dumped
    raise ValueError(f"unknown format {format!r}: expected 'json' or 'yaml'")


# --- Markdown ------------------------------------------------------------------------------------------

_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]<#|])")


def _md(text: str) -> str:
    """Escape a name for inline Markdown (definitions are left as written: they may use Markdown)."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", text)


def _subtree_total(
    category: CategorySpec, dimension: str, counts: Mapping[tuple[str, str], int], totals: dict[str, int]
) -> int:
    total = counts.get((dimension, category.key), 0)
    for child in category.children:
        total += _subtree_total(child, dimension, counts, totals)
    totals[category.key] = total
    return total


def _condition_text(spec: CodebookSpec, on_dimension: str, on_category: str) -> str:
    for dimension in spec.dimensions:
        if dimension.key == on_dimension:
            for entry in walk_categories(dimension.categories):
                if entry.category.key == on_category:
                    names = _md(PATH_SEPARATOR.join(entry.names))
                    return f"*{_md(dimension.name)}* is *{names}* (`{on_dimension}` = `{on_category}`)"
    return f"`{on_dimension}` = `{on_category}`"


def codebook_markdown(spec: CodebookSpec, counts: Mapping[tuple[str, str], int] | None = None) -> str:
    """A readable Markdown document: per dimension an overview tree, then every category with its
    definition, include / exclude criteria and examples.

    `counts` maps (dimension key, category key) to the number of labels of that category itself. A category
    with children shows the total of its subtree (its own labels plus its descendants'), as taxonomy
    papers do, and its own count when it has any. Counts naming no category of the spec are listed at the
    end rather than dropped; a negative count raises ValueError.
    """
    counts = dict(counts or {})
    for (dimension_key, category_key), count in counts.items():
        if count < 0:
            raise ValueError(f"negative count {count} for {dimension_key}/{category_key}")
    show_counts = bool(counts)
    known: set[tuple[str, str]] = set()
    lines = [f"# {_md(spec.name)}", ""]
    for dimension in spec.dimensions:
        totals: dict[str, int] = {}
        for category in dimension.categories:
            _subtree_total(category, dimension.key, counts, totals)
        lines += [f"## {_md(dimension.name)} (`{dimension.key}`)", ""]
        facts = ["Several categories may be chosen." if dimension.multiple else "One category per finding."]
        if dimension.applies_when is not None:
            facts.append(f"Applies only when {_condition_text(spec, *dimension.applies_when)}.")
        lines += [" ".join(facts), ""]
        if dimension.description:
            lines += [dimension.description, ""]
        if not dimension.categories:
            lines += ["No categories yet.", ""]
            continue
        walked = list(walk_categories(dimension.categories))
        for entry in walked:
            known.add((dimension.key, entry.category.key))
            shown = f" — {totals[entry.category.key]}" if show_counts else ""
            lines.append(f"{'  ' * (entry.depth - 1)}- {_md(entry.category.name)}{shown}")
        if show_counts:
            lines += ["", f"Total: {sum(totals[c.key] for c in dimension.categories)}"]
        lines.append("")
        for entry in walked:
            category = entry.category
            level = min(entry.depth + 2, 6)
            lines += [f"{'#' * level} {_md(PATH_SEPARATOR.join(entry.names))} (`{category.key}`)", ""]
            if show_counts:
                own = counts.get((dimension.key, category.key), 0)
                if category.children:
                    detail = f" ({own} on the category itself)" if own else ""
                    lines += [f"**Count:** {totals[category.key]} with its subcategories{detail}", ""]
                else:
                    lines += [f"**Count:** {own}", ""]
            for label, text in (
                ("Definition", category.definition),
                ("Include", category.include),
                ("Exclude", category.exclude),
            ):
                if text:
                    lines += [f"**{label}.** {text}", ""]
            if category.examples:
                lines += ["**Examples.**", ""] + [f"- {example}" for example in category.examples] + [""]
    unknown = sorted(key for key in counts if key not in known)
    if unknown:
        lines += ["## Counts for categories not in this codebook", ""]
        lines += [f"- `{d}` / `{c}`: {counts[(d, c)]}" for d, c in unknown] + [""]
    return "\n".join(lines).rstrip("\n") + "\n"


# --- Diff ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Change:
    """One difference between two codebooks. `before` / `after` hold the fields that differ
    (everything for add and retire), JSON-ready: examples as lists, applies_when as a one-pair dict."""

    kind: ChangeKind
    dimension: str
    category: str | None
    before: dict[str, Any]
    after: dict[str, Any]

    def describe(self) -> str:
        """One line for people, e.g. ``rename symptom/hang: name 'Hang' → 'Hang and timeout'``."""
        target = self.dimension if self.category is None else f"{self.dimension}/{self.category}"
        fields = sorted(set(self.before) | set(self.after))
        if self.kind in ("add", "add_dimension"):
            return f"{self.kind} {target}: {self.after.get('name')!r}"
        if self.kind in ("retire", "retire_dimension"):
            return f"{self.kind} {target}: {self.before.get('name')!r}"
        parts = [f"{f} {self.before.get(f)!r} → {self.after.get(f)!r}" for f in fields]
        return f"{self.kind} {target}: " + "; ".join(parts)


def _lcs_keys(old: Sequence[str], new: Sequence[str]) -> set[str]:
    """Keys of a longest common subsequence: the ones that keep their relative order."""
    table = [[0] * (len(new) + 1) for _ in range(len(old) + 1)]
    for i in range(len(old) - 1, -1, -1):
        for j in range(len(new) - 1, -1, -1):
            if old[i] == new[j]:
                table[i][j] = table[i + 1][j + 1] + 1
            else:
                table[i][j] = max(table[i + 1][j], table[i][j + 1])
    kept: set[str] = set()
    i = j = 0
    while i < len(old) and j < len(new):
        if old[i] == new[j]:
            kept.add(old[i])
            i += 1
            j += 1
        elif table[i + 1][j] >= table[i][j + 1]:
            i += 1
        else:
            j += 1
    return kept


def _moved_in_order(old: Sequence[str], new: Sequence[str]) -> set[str]:
    """Keys present in both sequences whose relative order changed (the fewest such keys)."""
    common = set(old) & set(new)
    old_common = [k for k in old if k in common]
    new_common = [k for k in new if k in common]
    if old_common == new_common:
        return set()
    return common - _lcs_keys(old_common, new_common)


def _category_fields(entry: WalkedCategory) -> dict[str, Any]:
    c = entry.category
    return {
        "name": c.name,
        "parent": entry.parent,
        "position": entry.position,
        "definition": c.definition,
        "include": c.include,
        "exclude": c.exclude,
        "examples": list(c.examples),
    }


def _dimension_fields(dimension: DimensionSpec, position: int) -> dict[str, Any]:
    return {
        "name": dimension.name,
        "multiple": dimension.multiple,
        "applies_when": None if dimension.applies_when is None else dict([dimension.applies_when]),
        "description": dimension.description,
        "position": position,
    }


def _changed(
    before: Mapping[str, Any], after: Mapping[str, Any], names: Sequence[str]
) -> tuple[dict[str, Any], dict[str, Any]]:
    differing = [n for n in names if before[n] != after[n]]
    return {n: before[n] for n in differing}, {n: after[n] for n in differing}


def _dimension_order(spec: CodebookSpec) -> list[DimensionSpec]:
    """File order, except that a dimension comes after the one its applies_when names (so an applier
    creating dimensions in this order always finds the category it depends on)."""
    remaining = list(spec.dimensions)
    keys = {d.key for d in remaining}
    done: set[str] = set()
    ordered: list[DimensionSpec] = []
    while remaining:
        ready = [
            i
            for i, d in enumerate(remaining)
            if d.applies_when is None or d.applies_when[0] in done or d.applies_when[0] not in keys
        ]
        # No dimension ready means a cycle, refused by validation: keep file order rather than loop.
        dimension = remaining.pop(ready[0] if ready else 0)
        done.add(dimension.key)
        ordered.append(dimension)
    return ordered


def diff_codebooks(old: CodebookSpec, new: CodebookSpec) -> list[Change]:
    """The changes that turn `old` into `new`; [] when they are equal.

    Categories are matched by key within their dimension, dimensions by key. Kinds:

    * ``add`` (a new key; `after` has name, parent, position, definition, include, exclude, examples),
    * ``move`` (another parent; parent and position), ``reorder`` (same parent, the category changed its
      order relative to its siblings; parent and position; only the fewest categories that explain the new
      order are reported), ``rename`` (name), ``edit`` (definition, include, exclude, examples),
    * ``retire`` (a key gone: never a deletion; `before` has every field),
    * ``add_dimension``, ``edit_dimension`` (name, multiple, applies_when, description, or position when
      its order among the dimensions changed), ``retire_dimension`` (its categories go with it and get no
      change of their own).

    A changed key is a retire plus an add: keys are identities. Positions count from 0 among siblings
    (among dimensions for a dimension) in `new`. A category or dimension no change names may still sit at
    another index (a sibling was added or retired before it), so an applier sets every position from
    `new`'s order rather than from the changes alone.
    Order: dimensions in `new` file order (a dimension after the one its applies_when names), each as
    add_dimension / edit_dimension, then its categories depth-first (a parent before its children) with
    per category move or reorder, rename, edit; then the dimension's retired categories children first;
    retired dimensions last, in `old` order. Applying the changes in this order never puts a category
    under its own descendant or references a category not yet added.
    """
    changes: list[Change] = []
    old_dimensions = {d.key: (i, d) for i, d in enumerate(old.dimensions)}
    new_positions = {d.key: i for i, d in enumerate(new.dimensions)}
    reordered = _moved_in_order([d.key for d in old.dimensions], [d.key for d in new.dimensions])
    for dimension in _dimension_order(new):
        after = _dimension_fields(dimension, new_positions[dimension.key])
        if dimension.key not in old_dimensions:
            changes.append(Change("add_dimension", dimension.key, None, {}, after))
            changes.extend(_diff_categories(dimension.key, (), dimension.categories))
            continue
        old_position, old_dimension = old_dimensions[dimension.key]
        before = _dimension_fields(old_dimension, old_position)
        b, a = _changed(before, after, ["name", "multiple", "applies_when", "description"])
        if dimension.key in reordered:  # the position is where it goes, even when the number is the same
            b["position"], a["position"] = before["position"], after["position"]
        if b:
            changes.append(Change("edit_dimension", dimension.key, None, b, a))
        changes.extend(_diff_categories(dimension.key, old_dimension.categories, dimension.categories))
    for position, dimension in enumerate(old.dimensions):
        if dimension.key not in new_positions:
            before = _dimension_fields(dimension, position)
            changes.append(Change("retire_dimension", dimension.key, None, before, {}))
    return changes


def _diff_categories(
    dimension: str, old: Sequence[CategorySpec], new: Sequence[CategorySpec]
) -> list[Change]:
    old_walk = list(walk_categories(old))
    new_walk = list(walk_categories(new))
    old_by_key = {e.category.key: e for e in old_walk}
    new_by_key = {e.category.key: e for e in new_walk}

    def siblings(walk: list[WalkedCategory]) -> dict[str | None, list[str]]:
        groups: dict[str | None, list[str]] = {}
        for e in walk:
            groups.setdefault(e.parent, []).append(e.category.key)
        return groups

    old_siblings, new_siblings = siblings(old_walk), siblings(new_walk)
    reordered: set[str] = set()
    for parent, keys in new_siblings.items():
        if parent is None or parent in old_by_key:
            stayed = [k for k in keys if k in old_by_key and old_by_key[k].parent == parent]
            previous = [k for k in old_siblings.get(parent, []) if k in stayed]
            reordered |= _moved_in_order(previous, stayed)

    changes: list[Change] = []
    for entry in new_walk:
        key = entry.category.key
        after = _category_fields(entry)
        if key not in old_by_key:
            changes.append(Change("add", dimension, key, {}, after))
            continue
        before = _category_fields(old_by_key[key])
        if before["parent"] != after["parent"] or key in reordered:
            # Both fields always: the position is where the category goes, even when the number is the same.
            kind: ChangeKind = "move" if before["parent"] != after["parent"] else "reorder"
            where = ("parent", "position")
            changes.append(
                Change(kind, dimension, key, {n: before[n] for n in where}, {n: after[n] for n in where})
            )
        b, a = _changed(before, after, ["name"])
        if b:
            changes.append(Change("rename", dimension, key, b, a))
        b, a = _changed(before, after, ["definition", "include", "exclude", "examples"])
        if b:
            changes.append(Change("edit", dimension, key, b, a))
    for entry in reversed(old_walk):  # reversed pre-order: every child before its parent
        if entry.category.key not in new_by_key:
            changes.append(Change("retire", dimension, entry.category.key, _category_fields(entry), {}))
    return changes
