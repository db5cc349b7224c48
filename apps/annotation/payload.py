"""The labels of one annotation as plain data, and their validation against the codebook. No Django.

A *payload* is what the workbench submits, what a draft stores and what an import builds::

    {"findings": [{"values": {"<dimension_key>": ["<category_key>", ...] | "pending"}}], "memo": "..."}

:func:`parse_payload` checks the shape; :func:`validate_payload` checks it against a :class:`Schema`
(the codebook in plain structures, built by the caller from the database). A payload that breaks a rule
is refused whole with a :class:`PayloadError` listing every :class:`Problem`, each naming the finding
(1-based), the dimension and the value:

* a dimension or category that is not in the codebook, or that is retired, merged or rejected (the
  problem is ``stale``: a tab opened before a codebook change can send it; the caller tells the
  annotator to reload);
* another annotator's proposed code (only one's own open proposals are pickable);
* several categories on a single-choice dimension, or a category together with *pending*;
* a value for a dimension that does not apply given the finding's other values (docs/design.md §2: a
  dimension may apply only when another dimension has a given category, e.g. *symptom* only for
  faults). A dimension applies when the condition's dimension holds the condition's category or a
  category below it; when that dimension is *pending*, whether it applies is not known and a value is
  allowed but not required;
* with ``complete=True`` (a submission from the workbench): every applicable dimension of every finding
  needs a category or *pending*, and there is at least one finding.

The result is normalised: findings keep their order, values follow the codebook's dimension order,
repeated categories are dropped, dimensions without a value are left out. Two payloads that mean the
same labels have equal normal forms, which is how a second identical submission is recognised.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

PENDING: Literal["pending"] = "pending"
MAX_FINDINGS = 50
MAX_MEMO_LENGTH = 20_000

#: A dimension's value in one finding: chosen category keys (in the codebook's order) or *pending*.
Value = tuple[str, ...] | Literal["pending"]


# --- The codebook as the payload sees it -------------------------------------------------------------

ACTIVE = "active"
PROPOSED = "proposed"
RETIRED = "retired"
MERGED = "merged"
REJECTED = "rejected"


@dataclass(frozen=True)
class CategoryInfo:
    """One category. `lineage` holds the keys from the top-level category down to this one."""

    key: str
    name: str
    lineage: tuple[str, ...]
    status: str = ACTIVE
    proposed_by: int | None = None
    merged_into: str | None = None

    @property
    def path(self) -> tuple[str, ...]:
        return self.lineage


@dataclass(frozen=True)
class DimensionInfo:
    """One dimension. `applies_when` is (dimension key, category key) or None (always applies)."""

    key: str
    name: str
    multiple: bool
    categories: Mapping[str, CategoryInfo]
    applies_when: tuple[str, str] | None = None
    retired: bool = False


@dataclass(frozen=True)
class Schema:
    """The codebook at one version: dimensions in display order (retired ones included, flagged)."""

    version: int
    dimensions: tuple[DimensionInfo, ...]
    _by_key: dict[str, DimensionInfo] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_key", {d.key: d for d in self.dimensions})

    def dimension(self, key: str) -> DimensionInfo | None:
        return self._by_key.get(key)

    @property
    def active_dimensions(self) -> tuple[DimensionInfo, ...]:
        return tuple(d for d in self.dimensions if not d.retired)


# --- Payloads ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Payload:
    """A parsed payload: one mapping of dimension key → value per finding, and the memo."""

    findings: tuple[Mapping[str, Value], ...]
    memo: str = ""

    def to_json(self) -> dict[str, Any]:
        """The JSON form (`{"findings": [{"values": ...}], "memo": ...}`), lists for category keys."""
        return {
            "findings": [
                {"values": {dim: (value if value == PENDING else list(value)) for dim, value in f.items()}}
                for f in self.findings
            ],
            "memo": self.memo,
        }


@dataclass(frozen=True)
class Problem:
    """What is wrong, where: `finding` is 1-based (None for the payload as a whole). `str()` names the
    dimension and value by key (the API and the command line); `in_names` says it with the codebook's
    names, for the annotator. `named` is `message` in names when it quotes keys (else None)."""

    message: str
    finding: int | None = None
    dimension: str | None = None
    value: str | None = None
    stale: bool = False
    named: str | None = None

    def in_names(self, schema: Schema) -> str:
        """The problem as the workbench says it: "Finding 1, Symptom, 'Old symptom': is retired"."""
        where = []
        if self.finding is not None:
            where.append(f"Finding {self.finding}")
        info = schema.dimension(self.dimension) if self.dimension is not None else None
        if self.dimension is not None:
            where.append(info.name if info is not None else repr(self.dimension))
        if self.value is not None:
            names = [_category_name(info, key.strip()) for key in self.value.split(",")]
            where.append(", ".join(repr(name) for name in names))
        message = self.named or self.message
        text = f"{', '.join(where)}: {message}" if where else message
        return text[:1].upper() + text[1:]

    def __str__(self) -> str:
        where = []
        if self.finding is not None:
            where.append(f"finding {self.finding}")
        if self.dimension is not None:
            where.append(f"dimension {self.dimension!r}")
        if self.value is not None:
            where.append(f"value {self.value!r}")
        return f"{', '.join(where)}: {self.message}" if where else self.message


class PayloadError(ValueError):
    """A refused payload; `problems` lists every reason, in payload order."""

    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems = list(problems)
        super().__init__("; ".join(str(p) for p in self.problems))

    @property
    def stale(self) -> bool:
        """True when some problem comes from a codebook change (unknown, retired or merged code)."""
        return any(p.stale for p in self.problems)


def parse_payload(data: object) -> Payload:
    """Check the JSON shape of a payload and return it as a `Payload` (keys not yet checked against the
    codebook). Raises PayloadError naming each misshapen part."""
    problems: list[Problem] = []
    if not isinstance(data, Mapping):
        raise PayloadError([Problem(f"a payload is an object with 'findings' and 'memo', got {data!r}")])
    unknown = sorted(set(data) - {"findings", "memo"})
    if unknown:
        problems.append(Problem(f"unknown field(s) {', '.join(map(repr, unknown))}"))
    memo = data.get("memo", "")
    if memo is None:
        memo = ""
    if not isinstance(memo, str):
        problems.append(Problem(f"memo must be text, got {memo!r}"))
        memo = ""
    elif len(memo) > MAX_MEMO_LENGTH:
        problems.append(Problem(f"memo is {len(memo)} characters long; at most {MAX_MEMO_LENGTH} are kept"))
    raw_findings = data.get("findings", [])
    if not isinstance(raw_findings, list):
        problems.append(Problem(f"findings must be a list, got {raw_findings!r}"))
        raw_findings = []
    if len(raw_findings) > MAX_FINDINGS:
        problems.append(Problem(f"{len(raw_findings)} findings; at most {MAX_FINDINGS} per item"))
    findings: list[dict[str, Value]] = []
    for number, raw in enumerate(raw_findings, start=1):
        findings.append(_parse_finding(raw, number, problems))
    if problems:
        raise PayloadError(problems)
    return Payload(tuple(findings), memo.strip())


def _parse_finding(raw: object, number: int, problems: list[Problem]) -> dict[str, Value]:
    if not isinstance(raw, Mapping) or not isinstance(raw.get("values", {}), Mapping):
        problems.append(Problem(f"a finding is an object with 'values', got {raw!r}", finding=number))
        return {}
    values: dict[str, Value] = {}
    for dimension, value in raw.get("values", {}).items():
        if not isinstance(dimension, str) or not dimension:
            problems.append(Problem(f"dimension keys are text, got {dimension!r}", finding=number))
            continue
        if isinstance(value, str):
            if value.strip().casefold() == PENDING:
                values[dimension] = PENDING
            else:
                problems.append(
                    Problem("expected a list of category keys or 'pending'", number, dimension, value)
                )
        elif isinstance(value, list) and all(isinstance(v, str) for v in value):
            keys = tuple(dict.fromkeys(v.strip() for v in value if v.strip()))
            if any(k.casefold() == PENDING for k in keys):
                if len(keys) > 1:
                    problems.append(
                        Problem("is marked pending and has a category: choose one", number, dimension)
                    )
                else:
                    values[dimension] = PENDING
            elif keys:
                values[dimension] = keys
        else:
            problems.append(
                Problem(f"expected a list of category keys or 'pending', got {value!r}", number, dimension)
            )
    return values


def applies(dimension: DimensionInfo, values: Mapping[str, Value], schema: Schema) -> bool | None:
    """Whether `dimension` applies to a finding with `values`: True, False, or None when unknown (the
    condition's dimension is *pending*). Only the finding's own values count."""
    if dimension.applies_when is None:
        return True
    on_dimension, on_category = dimension.applies_when
    chosen = values.get(on_dimension)
    if chosen == PENDING:
        return None
    if not chosen:
        return False
    condition = schema.dimension(on_dimension)
    if condition is None:
        return False
    for key in chosen:
        category = condition.categories.get(key)
        if category is not None and on_category in category.lineage:
            return True
    return False


def validate_payload(
    payload: Payload,
    schema: Schema,
    *,
    user_id: int | None = None,
    complete: bool = False,
    allow_inactive: bool = False,
) -> Payload:
    """Check `payload` against the codebook `schema` (the rules of the module docstring) and return its
    normal form. `user_id` may pick their own proposed codes. `complete` asks every applicable dimension
    of every finding for a value. `allow_inactive` accepts retired categories and merged ones (imports of
    past labels; the caller maps a merged category to its target). Raises PayloadError."""
    problems: list[Problem] = []
    if complete and not payload.findings:
        problems.append(Problem("no finding: add at least one finding"))
    findings: list[dict[str, Value]] = []
    for number, values in enumerate(payload.findings, start=1):
        findings.append(
            _validate_finding(number, values, schema, user_id, complete, allow_inactive, problems)
        )
    if problems:
        raise PayloadError(problems)
    return Payload(tuple(findings), payload.memo)


def _validate_finding(
    number: int,
    values: Mapping[str, Value],
    schema: Schema,
    user_id: int | None,
    complete: bool,
    allow_inactive: bool,
    problems: list[Problem],
) -> dict[str, Value]:
    for key in values:
        dimension = schema.dimension(key)
        if dimension is None:
            problems.append(Problem("is not a dimension of the codebook", number, key, stale=True))
        elif dimension.retired:
            problems.append(Problem(f"dimension {dimension.name!r} is retired", number, key, stale=True))
    clean: dict[str, Value] = {}
    for dimension in schema.active_dimensions:
        value = values.get(dimension.key)
        if value is None:
            continue
        if value == PENDING:
            clean[dimension.key] = PENDING
            continue
        keys = [k for k in value if _category_ok(dimension, k, number, user_id, allow_inactive, problems)]
        if not dimension.multiple and len(value) > 1:
            problems.append(
                Problem(
                    f"{dimension.name!r} takes one category, got {len(value)}: {', '.join(value)}",
                    number,
                    dimension.key,
                    named="takes one category, got "
                    + ", ".join(repr(_category_name(dimension, k)) for k in value),
                )
            )
        order = {key: index for index, key in enumerate(dimension.categories)}
        clean[dimension.key] = tuple(sorted(keys, key=lambda k: order.get(k, len(order))))
    for dimension in schema.active_dimensions:
        applicable = applies(dimension, clean, schema)
        has_value = dimension.key in clean
        if has_value and applicable is False:
            on_dimension, on_category = dimension.applies_when or ("", "")
            on = schema.dimension(on_dimension)
            problems.append(
                Problem(
                    f"{dimension.name!r} applies only when {on_dimension!r} is {on_category!r}",
                    number,
                    dimension.key,
                    _describe(clean[dimension.key]),
                    named=f"applies only when {on.name if on else on_dimension!r} is "
                    f"{_category_name(on, on_category)!r}",
                )
            )
        elif complete and applicable is True and not has_value:
            problems.append(Problem("choose a category or mark it pending", number, dimension.key))
    if complete and not values:
        problems.append(Problem("the finding is empty", number))
    return clean


def _category_ok(
    dimension: DimensionInfo,
    key: str,
    number: int,
    user_id: int | None,
    allow_inactive: bool,
    problems: list[Problem],
) -> bool:
    category = dimension.categories.get(key)
    if category is None:
        problems.append(
            Problem(f"is not a category of {dimension.name!r}", number, dimension.key, key, stale=True)
        )
        return False
    if category.status == ACTIVE:
        return True
    if category.status == PROPOSED:
        if user_id is not None and category.proposed_by == user_id:
            return True
        problems.append(
            Problem("is another annotator's proposal, not yet in the codebook", number, dimension.key, key)
        )
        return False
    if category.status in (RETIRED, MERGED) and allow_inactive:
        return True
    if category.status == MERGED:
        target = f" into {category.merged_into!r}" if category.merged_into else ""
        problems.append(Problem(f"was merged{target}", number, dimension.key, key, stale=True))
    elif category.status == RETIRED:
        problems.append(Problem("is retired", number, dimension.key, key, stale=True))
    else:
        problems.append(
            Problem(f"is {category.status}, not pickable", number, dimension.key, key, stale=True)
        )
    return False


def _describe(value: Value) -> str:
    return PENDING if value == PENDING else ", ".join(value)


def _category_name(dimension: DimensionInfo | None, key: str) -> str:
    category = dimension.categories.get(key) if dimension is not None else None
    return category.name if category is not None else key


# --- The workbench form ------------------------------------------------------------------------------

FINDING_FIELD = "finding"


def value_field(finding: int, dimension: str) -> str:
    """Name of the form inputs that carry the categories of one dimension of one finding."""
    return f"v-{finding}-{dimension}"


def pending_field(finding: int, dimension: str) -> str:
    """Name of the checkbox that marks one dimension of one finding *pending*."""
    return f"p-{finding}-{dimension}"


def payload_from_form(fields: Mapping[str, Sequence[str]]) -> dict[str, Any]:
    """The payload JSON posted by the workbench form (`fields`: name → list of values, like a QueryDict).

    The form holds one hidden ``finding`` input per finding block (its number on the page) and inputs
    named by `value_field` / `pending_field`. Findings are renumbered 1, 2, ... in page order, so a
    finding removed in the middle leaves no gap. A dimension marked *pending* that also has categories
    is sent as its categories plus ``"pending"``, which `parse_payload` refuses by name. Unknown inputs
    are ignored.
    """
    numbers = [n.strip() for n in fields.get(FINDING_FIELD, []) if n.strip()]
    findings: list[dict[str, Any]] = []
    for number in dict.fromkeys(numbers):
        values: dict[str, Any] = {}
        value_prefix = f"v-{number}-"
        pending_prefix = f"p-{number}-"
        for name, posted in fields.items():
            if name.startswith(value_prefix):
                keys = [v for v in posted if v.strip()]
                if keys:
                    values.setdefault(name[len(value_prefix) :], []).extend(keys)
        for name, posted in fields.items():
            if name.startswith(pending_prefix) and any(v.strip() for v in posted):
                dimension = name[len(pending_prefix) :]
                values[dimension] = [*values[dimension], PENDING] if dimension in values else PENDING
        findings.append({"values": values})
    memo = fields.get("memo", [""])
    return {"findings": findings, "memo": memo[-1] if memo else ""}


def selections(data: Mapping[str, Any] | None) -> list[dict[str, Value]]:
    """The findings of a stored payload or draft as plain selections for redisplay, tolerating a draft of
    an older shape (anything unreadable is dropped, never raised): at least one (empty) finding."""
    out: list[dict[str, Value]] = []
    raw = (data or {}).get("findings", [])
    for finding in raw if isinstance(raw, list) else []:
        values: dict[str, Value] = {}
        if isinstance(finding, Mapping) and isinstance(finding.get("values"), Mapping):
            for dimension, value in finding["values"].items():
                if value == PENDING:
                    values[str(dimension)] = PENDING
                elif isinstance(value, list):
                    keys = tuple(str(v) for v in value if isinstance(v, str) and v != PENDING)
                    if keys:
                        values[str(dimension)] = keys
        out.append(values)
    return out or [{}]


def normal_form(findings: Iterable[Mapping[str, Value]], memo: str) -> dict[str, Any]:
    """The JSON of `Payload(findings, memo)`: how stored labels are compared with a new submission."""
    return Payload(tuple(findings), memo.strip()).to_json()
