"""A study's model raters in its replication package (docs/export.md "models/"), and their restore.

Two files, written only when the study has a model rater:

* ``models/raters.json``: ``{"raters": [...]}``, each rater's name, kind, the server's host and base URL
  (without user, password, query or fragment: never a key), the model asked for and the model ids its
  servers reported, the *name* of the API key's variable, temperature, samples, concurrency, timeout,
  the prompt template (empty: the default of `prompts.PROMPT_VERSION`) and its version, its creation date
  and its number of answers;
* ``models/answers.jsonl``: one line per answer, valid or refused, in (rater, item, round, sample) order:
  the rater, the item's URL, the round number (null: labels that apply wherever the item is), the
  sample, the prompt hash, the codebook version, the model id, the parameters, the status, the reason
  and raw text of a refusal (the raw text of every answer), tokens, the time, and the labels as
  (finding, dimension key, category key).

`export/package/models.py` writes them and the models' agreement beside them; `check_models` reads them
back with every problem named by file, line and field, before anything is written, and
`restore_models` writes what was checked into the new study.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from django.db.models import Count
from django.utils.dateparse import parse_datetime

from apps.accounts.models import Study
from apps.taxonomy.index import CodebookIndex

from .models import AnswerStatus, ModelAnswer, ModelLabel, ModelRater, RaterKind, public_netloc

MODELS_DIR = "models"
RATERS_FILE = f"{MODELS_DIR}/raters.json"
ANSWERS_FILE = f"{MODELS_DIR}/answers.jsonl"
ANSWER_CHUNK = 2000

Problem = tuple[str, str]
"""(where, what is wrong): the package's problems are named this way."""


def safe_base_url(url: str) -> str:
    """A base URL as the package may show it: scheme, host, port and path; no user, password, query or
    fragment (where a key could hide)."""
    if not url:
        return ""
    return urlunsplit((urlsplit(url).scheme, public_netloc(url), urlsplit(url).path, "", ""))


def _iso(at: datetime | None) -> str | None:
    return at.isoformat() if at is not None else None


def has_models(study: Study) -> bool:
    return ModelRater.objects.filter(study=study).exists()


def raters_data(study: Study) -> dict[str, Any]:
    raters = ModelRater.objects.of_study(study).annotate(n_answers=Count("answers"))
    model_ids: dict[int, list[str]] = {}
    for rater_id, model_id in (
        ModelAnswer.objects.filter(rater__study=study)
        .exclude(model_id="")
        .order_by()
        .values_list("rater_id", "model_id")
        .distinct()
    ):
        model_ids.setdefault(rater_id, []).append(model_id)
    return {
        "raters": [
            {
                "name": r.name,
                "kind": r.kind,
                "host": r.host,
                "base_url": safe_base_url(r.base_url),
                "model": r.model,
                "model_ids": sorted(model_ids.get(r.pk, [])),
                "api_key_env": r.api_key_env,
                "temperature": r.temperature,
                "samples": r.samples,
                "concurrency": r.concurrency,
                "timeout": r.timeout,
                "prompt_template": r.prompt_template,
                "prompt_version": r.prompt_version,
                "created_at": _iso(r.created_at),
                "answers": r.n_answers,  # type: ignore[attr-defined]
            }
            for r in raters
        ]
    }


_ANSWER_COLUMNS = (
    "pk", "rater__name", "item__url", "round__number", "sample", "prompt_hash", "codebook_version",
    "model_id", "params", "status", "reason", "raw_text", "input_tokens", "output_tokens", "created_at",
)  # fmt: skip
_ANSWER_KEYS = (
    "rater", "item", "round", "sample", "prompt_hash", "codebook_version", "model_id", "params", "status",
    "reason", "raw_text", "input_tokens", "output_tokens", "created_at",
)  # fmt: skip


def answer_lines(study: Study) -> Iterator[dict[str, Any]]:
    """Every answer of the study's raters, with its labels, in a stable order, read in chunks."""
    answers = (
        ModelAnswer.objects.filter(rater__study=study)
        .order_by("rater__name", "item__url", "round__number", "sample", "prompt_hash", "pk")
        .values_list(*_ANSWER_COLUMNS)
    )
    last = 0
    rows = list(answers[:ANSWER_CHUNK])
    while rows:
        labels: dict[int, list[list[Any]]] = {}
        for answer_id, finding, dimension, category in (
            ModelLabel.objects.filter(answer_id__in=[r[0] for r in rows])
            .order_by("answer_id", "finding", "dimension__position", "category__key")
            .values_list("answer_id", "finding", "dimension__key", "category__key")
        ):
            labels.setdefault(answer_id, []).append([finding, dimension, category])
        for pk, *values in rows:
            line = dict(zip(_ANSWER_KEYS, values, strict=True))
            line["created_at"] = _iso(line["created_at"])
            line["labels"] = labels.get(pk, [])
            yield line
        last += len(rows)
        rows = list(answers[last : last + ANSWER_CHUNK])


# ------------------------------------------------------------------------------------------- restore
@dataclass(frozen=True)
class PlannedAnswer:
    rater: str
    item: str
    round: int | None
    fields: dict[str, Any]
    labels: tuple[tuple[int, str, str], ...]


_RATER_TEXT = ("name", "kind", "base_url", "model", "api_key_env", "prompt_template")
_NUMBERS = {"temperature": (0.0, 2.0), "samples": (1, 50), "concurrency": (1, 64), "timeout": (0.001, 3600)}
"""A rater's numeric settings and the range a package's value must lie in (the model's own checks)."""


def _check_rater(raw: Any, at: str, seen: set[str], problems: list[Problem]) -> dict[str, Any] | None:
    if not isinstance(raw, dict):
        problems.append((at, f"expected an object, got {type(raw).__name__}"))
        return None
    bad = [field for field in _RATER_TEXT if not isinstance(raw.get(field, ""), str)]
    for field in bad:
        problems.append((f"{at}.{field}", f"expected text, got {raw.get(field)!r}"[:200]))
    name = raw.get("name")
    kind = raw.get("kind")
    if not name or name in seen:
        problems.append((f"{at}.name", f"expected a new rater name, got {name!r}"))
    if kind not in RaterKind.values:
        problems.append((f"{at}.kind", f"expected one of {', '.join(RaterKind.values)}, got {kind!r}"))
    if kind == RaterKind.OPENAI and not (raw.get("base_url") and raw.get("model")):
        problems.append((at, "an OpenAI-compatible rater needs its base_url and model"))
    for field, (low, high) in _NUMBERS.items():
        value = raw.get(field, low)
        if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
            problems.append((f"{at}.{field}", f"expected a number in [{low}, {high}], got {value!r}"))
    if bad or not isinstance(name, str):
        return None
    seen.add(name)
    return raw


def check_models(
    raters_json: Any,
    lines: Iterable[str],
    urls: Collection[str],
    round_numbers: Collection[int],
    index: CodebookIndex,
) -> tuple[list[dict[str, Any]], list[PlannedAnswer], list[Problem]]:
    """The raters and answers of a package's ``models/`` files, checked against its items, rounds and
    codebook; every problem named (file, line, field), nothing written."""
    problems: list[Problem] = []
    raters: list[dict[str, Any]] = []
    if not isinstance(raters_json, dict) or not isinstance(raters_json.get("raters"), list):
        problems.append((RATERS_FILE, 'expected an object with a "raters" list'))
    else:
        seen: set[str] = set()
        for position, raw in enumerate(raters_json["raters"]):
            rater = _check_rater(raw, f"{RATERS_FILE}.raters[{position}]", seen, problems)
            if rater is not None:
                raters.append(rater)
    names = {r["name"] for r in raters}
    answers: list[PlannedAnswer] = []
    keys: set[tuple[str, str, int | None, int, str]] = set()
    for number, line in enumerate(lines, start=1):
        at = f"{ANSWERS_FILE} line {number}"
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
        except ValueError as exc:
            problems.append((at, f"not valid JSON ({exc})"))
            continue
        answer = _check_answer(raw, at, names, urls, round_numbers, index, problems)
        if answer is None:
            continue
        key = (answer.rater, answer.item, answer.round, answer.fields["sample"], answer.fields["prompt_hash"])
        if key in keys:
            problems.append(
                (at, f"a second answer of {answer.rater} for the same item, round, sample and prompt")
            )
            continue
        keys.add(key)
        answers.append(answer)
    return raters, answers, problems


def _check_answer(
    raw: Any,
    at: str,
    raters: Collection[str],
    urls: Collection[str],
    round_numbers: Collection[int],
    index: CodebookIndex,
    problems: list[Problem],
) -> PlannedAnswer | None:
    before = len(problems)
    if not isinstance(raw, dict):
        problems.append((at, f"expected an object, got {type(raw).__name__}"))
        return None
    if raw.get("rater") not in raters:
        problems.append((f"{at}.rater", f"not a rater of {RATERS_FILE}: {raw.get('rater')!r}"))
    if raw.get("item") not in urls:
        problems.append((f"{at}.item", f"not an item of items.jsonl: {raw.get('item')!r}"[:300]))
    round_number = raw.get("round")
    if round_number is not None and round_number not in round_numbers:
        problems.append((f"{at}.round", f"not a round of sampling.json: {round_number!r}"))
    if raw.get("status") not in AnswerStatus.values:
        problems.append((f"{at}.status", f"expected valid or refused, got {raw.get('status')!r}"))
    elif raw["status"] == AnswerStatus.REFUSED and not raw.get("reason"):
        problems.append((f"{at}.reason", "a refused answer needs its reason"))
    for field in ("sample", "codebook_version", "input_tokens", "output_tokens"):
        value = raw.get(field, 0)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            problems.append((f"{at}.{field}", f"expected a whole number ≥ 0, got {value!r}"))
    for field in ("prompt_hash", "model_id", "reason", "raw_text"):
        if not isinstance(raw.get(field, ""), str):
            problems.append((f"{at}.{field}", f"expected text, got {raw.get(field)!r}"[:200]))
    created = raw.get("created_at")
    if created is not None and (not isinstance(created, str) or parse_datetime(created) is None):
        problems.append((f"{at}.created_at", f"expected an ISO 8601 time, got {created!r}"))
    labels: list[tuple[int, str, str]] = []
    for position, label in enumerate(raw.get("labels") or []):
        where = f"{at}.labels[{position}]"
        if not (isinstance(label, list) and len(label) == 3 and isinstance(label[0], int)):
            problems.append((where, f"expected [finding, dimension, category], got {label!r}"[:200]))
            continue
        finding, dimension, category = label
        try:
            index.category_by_key(str(dimension), str(category))
        except LookupError as exc:
            problems.append((where, str(exc)))
            continue
        labels.append((finding, dimension, category))
    if len(problems) > before:
        return None
    fields = {
        "sample": raw.get("sample", 0),
        "prompt_hash": raw.get("prompt_hash", ""),
        "codebook_version": raw.get("codebook_version", 0),
        "model_id": raw.get("model_id", ""),
        "params": raw.get("params") if isinstance(raw.get("params"), dict) else {},
        "status": raw["status"],
        "reason": raw.get("reason", ""),
        "raw_text": raw.get("raw_text", ""),
        "input_tokens": raw.get("input_tokens", 0),
        "output_tokens": raw.get("output_tokens", 0),
        "created_at": parse_datetime(created) if created else None,
    }
    return PlannedAnswer(raw["rater"], raw["item"], round_number, fields, tuple(labels))


def restore_models(
    study: Study,
    raters: Iterable[Mapping[str, Any]],
    answers: Iterable[PlannedAnswer],
    item_ids: Mapping[str, int],
    round_ids: Mapping[int, int],
) -> int:
    """Write the checked raters and answers into the new study (its codebook already written); returns
    the number of answers. In the caller's transaction."""
    by_name = {}
    for raw in raters:
        fields = {name: raw.get(name, "") for name in _RATER_TEXT}
        numbers = {name: raw[name] for name in _NUMBERS if name in raw}
        rater = ModelRater(
            study=study, prompt_version=int(raw.get("prompt_version") or 1), **fields, **numbers
        )
        if created := parse_datetime(str(raw.get("created_at") or "")):
            rater.created_at = created
        rater.save()
        by_name[rater.name] = rater
    index = CodebookIndex.for_study(study)
    written = 0
    pending: list[tuple[ModelAnswer, tuple[tuple[int, str, str], ...]]] = []
    for planned in answers:
        fields = {k: v for k, v in planned.fields.items() if not (k == "created_at" and v is None)}
        pending.append(
            (
                ModelAnswer(
                    rater=by_name[planned.rater],
                    item_id=item_ids[planned.item],
                    round_id=round_ids[planned.round] if planned.round is not None else None,
                    **fields,
                ),
                planned.labels,
            )
        )
        if len(pending) >= ANSWER_CHUNK:
            written += _write_answers(pending, index)
            pending = []
    return written + _write_answers(pending, index)


def _write_answers(
    pending: list[tuple[ModelAnswer, tuple[tuple[int, str, str], ...]]], index: CodebookIndex
) -> int:
    created = ModelAnswer.objects.bulk_create([answer for answer, _ in pending])
    ModelLabel.objects.bulk_create(
        ModelLabel(
            answer=answer,
            finding=finding,
            dimension_id=index.dimension(dimension).id,
            category_id=index.category_by_key(dimension, category).id,
        )
        for answer, (_, labels) in zip(created, pending, strict=True)
        for finding, dimension, category in labels
    )
    return len(created)
