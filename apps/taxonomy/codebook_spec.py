"""Codebook files (docs/design.md §5): the spec, parse, validate and dump. No Django. Rendering a spec as
Markdown is `codebook_markdown.py`, comparing two specs `codebook_diff.py`.

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
