"""Prompts from the codebook, the JSON Schema of the answer, and the check of an answer. Pure: no Django.

`build_prompt` fills a versioned template (`DEFAULT_TEMPLATE`, editable per rater) with the codebook
(dimensions, categories with definitions, include and exclude criteria, examples, ``applies_when``), the
item (title, body as text, comments or answers within a length budget) and the answer's JSON Schema
(`answer_schema`). `prompt_hash` keys an answer: the same messages, model, parameters and schema give
the same hash, so a restarted run does not ask again for what it has.

`check_answer` reads a model's reply: JSON (a fenced block is accepted), ``{"findings": [{dimension key:
category key, or a list of keys for a multi-choice dimension}, ...]}``. An answer that is not valid
(malformed JSON, an unknown dimension or category, a value for a dimension that does not apply, a missing
dimension that applies, several values for a single-choice one) is a `Refusal` with its reason, never
coerced into a label.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from string import Template
from typing import Any

from apps.taxonomy.codebook_spec import CategorySpec, CodebookSpec, DimensionSpec, walk_categories

PROMPT_VERSION = 1
DEFAULT_BUDGET = 12_000
"""Characters of item text (title, body, comments) a prompt holds at most."""

DEFAULT_TEMPLATE = """\
You are one of the annotators of an empirical software-engineering study. Label the item below with the
study's codebook, exactly as a careful human annotator would, reading the definitions and the include and
exclude criteria of each category.

# Codebook: $codebook_name

$codebook

# Item

$item

# Your answer

Answer with one JSON object and nothing else, matching this JSON Schema:

$schema

Use one finding unless the item clearly reports several distinct problems. Give every dimension that
applies to a finding, and no dimension that does not apply (see "applies when"). Use category keys only.
"""

SYSTEM_MESSAGE = "You label software-engineering artifacts against a codebook and answer in JSON only."

__all__ = [
    "DEFAULT_TEMPLATE",
    "PROMPT_VERSION",
    "CheckedAnswer",
    "ItemText",
    "Prompt",
    "Refusal",
    "answer_schema",
    "build_prompt",
    "check_answer",
    "codebook_text",
    "item_text",
    "prompt_hash",
]


@dataclass(frozen=True)
class ItemText:
    title: str
    body: str
    comments: tuple[str, ...] = ()
    url: str = ""


@dataclass(frozen=True)
class Prompt:
    messages: tuple[dict[str, str], ...]
    schema: dict[str, Any]

    @property
    def text(self) -> str:
        return self.messages[-1]["content"]


def _category_lines(categories: Sequence[CategorySpec]) -> list[str]:
    lines = []
    for walked in walk_categories(categories):
        c = walked.category
        indent = "  " * (walked.depth - 1)
        lines.append(f"{indent}- `{c.key}`: {c.name}" + (f". {c.definition.strip()}" if c.definition else ""))
        for label, text in (("Include", c.include), ("Exclude", c.exclude)):
            if text.strip():
                lines.append(f"{indent}  {label}: {text.strip()}")
        for example in c.examples:
            lines.append(f"{indent}  Example: {example.strip()}")
    return lines


def codebook_text(codebook: CodebookSpec) -> str:
    """The codebook as Markdown: each dimension, whether it takes one or several categories, when it
    applies, and its category tree with definitions, criteria and examples."""
    parts = []
    for d in codebook.dimensions:
        head = [f"## Dimension `{d.key}`: {d.name}"]
        if d.description.strip():
            head.append(d.description.strip())
        head.append("Choose several categories (a list)." if d.multiple else "Choose exactly one category.")
        if d.applies_when is not None:
            head.append(
                f"Applies when `{d.applies_when[0]}` is `{d.applies_when[1]}` or one of its subtypes."
            )
        parts.append("\n".join([*head, *_category_lines(d.categories)]))
    return "\n\n".join(parts)


def item_text(item: ItemText, budget: int = DEFAULT_BUDGET) -> str:
    """Title, body and then comments in order, cut to ``budget`` characters in all: the body keeps at
    least half the budget; comments that do not fit are counted, not silently dropped."""
    title = f"Title: {item.title.strip()}"
    body = item.body.strip()
    room = max(budget - len(title), 0)
    if len(body) > room:
        body = body[: max(room - 40, 0)].rstrip() + "\n[... body cut to fit the length budget]"
    parts = [title, "", body]
    used = len(title) + len(body)
    left_out = 0
    for k, comment in enumerate(item.comments, start=1):
        text = f"Comment {k}: {comment.strip()}"
        if used + len(text) > budget:
            left_out = len(item.comments) - k + 1
            break
        parts += ["", text]
        used += len(text)
    if left_out:
        parts += ["", f"[{left_out} more comment(s) left out to fit the length budget]"]
    return "\n".join(parts)


def _keys(d: DimensionSpec) -> list[str]:
    return [w.category.key for w in walk_categories(d.categories)]


def answer_schema(codebook: CodebookSpec) -> dict[str, Any]:
    """The JSON Schema of an answer: ``findings``, each an object keyed by dimension, a category key
    (single-choice) or a list of distinct keys (multi-choice). Dimensions without ``applies_when`` are
    required; the others depend on the codebook's rule, checked by `check_answer`."""
    properties: dict[str, Any] = {}
    for d in codebook.dimensions:
        value: dict[str, Any] = {"type": "string", "enum": _keys(d)}
        if d.multiple:
            value = {"type": "array", "items": value, "uniqueItems": True}
        properties[d.key] = {**value, "description": d.name}
    finding = {
        "type": "object",
        "properties": properties,
        "required": [d.key for d in codebook.dimensions if d.applies_when is None],
        "additionalProperties": False,
    }
    return {
        "type": "object",
        "properties": {"findings": {"type": "array", "items": finding, "minItems": 1}},
        "required": ["findings"],
        "additionalProperties": False,
    }


def build_prompt(
    codebook: CodebookSpec, item: ItemText, template: str = "", *, budget: int = DEFAULT_BUDGET
) -> Prompt:
    """The chat messages asking for ``item``'s labels. ``template`` (default `DEFAULT_TEMPLATE`) may use
    ``$codebook_name``, ``$codebook``, ``$item`` and ``$schema``; an unknown ``$name`` raises KeyError."""
    schema = answer_schema(codebook)
    content = Template(template or DEFAULT_TEMPLATE).substitute(
        codebook_name=codebook.name,
        codebook=codebook_text(codebook),
        item=item_text(item, budget),
        schema=json.dumps(schema, indent=1, ensure_ascii=False),
    )
    return Prompt(
        ({"role": "system", "content": SYSTEM_MESSAGE}, {"role": "user", "content": content}), schema
    )


def prompt_hash(prompt: Prompt, *, model: str, params: Mapping[str, Any]) -> str:
    """SHA-256 of the messages, the schema, the model asked for and the parameters (sorted JSON)."""
    payload = {"messages": prompt.messages, "schema": prompt.schema, "model": model, "params": dict(params)}
    return hashlib.sha256(json.dumps(payload, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


# ------------------------------------------------------------------------------------------ answers
@dataclass(frozen=True)
class Refusal:
    reason: str


@dataclass(frozen=True)
class CheckedAnswer:
    """(finding number from 1, dimension key, category key) for every chosen category."""

    labels: tuple[tuple[int, str, str], ...] = field(default_factory=tuple)


_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL)


def _descendants(d: DimensionSpec, key: str) -> set[str]:
    """``key`` and every category below it."""
    out: set[str] = set()
    for w in walk_categories(d.categories):
        if w.category.key == key or (w.parent is not None and w.parent in out):
            out.add(w.category.key)
    return out


def applicable_dimensions(codebook: CodebookSpec, finding: Mapping[str, Sequence[str]]) -> set[str]:
    """The dimensions that apply to a finding given its labels (`applies_when`, in codebook order)."""
    by_key = {d.key: d for d in codebook.dimensions}
    applies: set[str] = set()
    for d in codebook.dimensions:  # in order; applies_when points to an earlier dimension or none
        if d.applies_when is None:
            applies.add(d.key)
            continue
        on, category = d.applies_when
        target = by_key.get(on)
        if target is not None and on in applies and set(finding.get(on, ())) & _descendants(target, category):
            applies.add(d.key)
    return applies


def check_answer(codebook: CodebookSpec, text: str) -> CheckedAnswer | Refusal:
    """The labels of a model's reply, or why it is refused (module docstring)."""
    fenced = _FENCE.match(text)
    try:
        data = json.loads(fenced.group(1) if fenced else text)
    except (json.JSONDecodeError, ValueError) as exc:
        return Refusal(f"malformed JSON: {exc}")
    if not isinstance(data, dict) or not isinstance(data.get("findings"), list) or not data["findings"]:
        return Refusal('not an object with a non-empty "findings" list')
    extra = sorted(set(data) - {"findings"})
    if extra:
        return Refusal(f"unexpected key(s) {', '.join(extra)} beside findings")
    by_key = {d.key: d for d in codebook.dimensions}
    labels: list[tuple[int, str, str]] = []
    for number, finding in enumerate(data["findings"], start=1):
        if not isinstance(finding, dict):
            return Refusal(f"finding {number} is not an object")
        chosen: dict[str, list[str]] = {}
        for key, value in finding.items():
            d = by_key.get(key)
            if d is None:
                return Refusal(f"finding {number}: unknown dimension {key!r}")
            values = value if isinstance(value, list) else [value]
            if not values or not all(isinstance(v, str) for v in values):
                return Refusal(f"finding {number}, {key}: expected category keys, got {json.dumps(value)}")
            if not d.multiple and (isinstance(value, list) and len(values) != 1):
                return Refusal(f"finding {number}, {key}: single-choice, got {len(values)} categories")
            known = set(_keys(d))
            unknown = [v for v in values if v not in known]
            if unknown:
                return Refusal(f"finding {number}, {key}: unknown category {unknown[0]!r}")
            chosen[key] = list(dict.fromkeys(values))
        applies = applicable_dimensions(codebook, chosen)
        stray = [k for k in chosen if k not in applies]
        if stray:
            return Refusal(f"finding {number}: dimension {stray[0]!r} does not apply given the other labels")
        missing = [d.key for d in codebook.dimensions if d.key in applies and d.key not in chosen]
        if missing:
            return Refusal(f"finding {number}: missing dimension {missing[0]!r}")
        labels += [(number, k, v) for k, values in chosen.items() for v in values]
    return CheckedAnswer(tuple(labels))
