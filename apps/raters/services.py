"""Model raters' workflows: adding a rater, importing a model's labels made elsewhere (docs/models.md).

The one writer of `ModelRater`, `ModelAnswer` and `ModelLabel`. Each workflow checks all its input first
and raises `RaterError` (or `LabelFileError`, every problem with row, field and value) before it writes;
the writes run in one transaction.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings as django_settings
from django.db import transaction

from apps.accounts.models import Study, User
from apps.annotation.label_file import LabelFileError, LabelProblem
from apps.annotation.models import Round
from apps.corpus.models import Item
from apps.corpus.records import canonical_url
from apps.taxonomy.index import CodebookIndex, UnknownDimensionError
from apps.taxonomy.models import CategoryStatus
from apps.taxonomy.tree import LabelError, UnknownLabelError

from .label_file import ModelAnswerRows
from .models import AnswerStatus, ModelAnswer, ModelLabel, ModelRater, RaterKind

__all__ = ["ImportResult", "RaterError", "RaterSettings", "add_model_rater", "import_model_labels"]

NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
ENV_PATTERN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,99}$")
MAX_SAMPLES = 50
MAX_CONCURRENCY = 64


class RaterError(ValueError):
    """A request about model raters that cannot be carried out; the message names the problem."""


@dataclass(frozen=True)
class RaterSettings:
    """What a lead sets when adding a rater (module docstring of `models`)."""

    kind: str
    base_url: str = ""
    model: str = ""
    api_key_env: str = ""
    temperature: float = 0.0
    samples: int = 1
    concurrency: int = 4
    timeout: float = 60.0
    prompt_template: str = ""

    def problems(self) -> list[str]:
        out: list[str] = []
        if self.kind not in RaterKind.values:
            out.append(f"unknown kind {self.kind!r} (expected {', '.join(RaterKind.values)})")
        if self.kind == RaterKind.OPENAI:
            if not re.match(r"^https?://[^/\s]+", self.base_url):
                out.append(f"the base URL must be an http:// or https:// URL, got {self.base_url!r}")
            if not self.model.strip():
                out.append("an OpenAI-compatible rater needs a model")
        elif self.base_url or self.model or self.api_key_env:
            out.append(f"a {self.kind} rater has no base URL, model or API key variable")
        if self.kind == RaterKind.BASELINE and self.samples != 1:
            out.append(f"the local baseline gives one answer per item (samples 1), got {self.samples}")
        if self.api_key_env and not ENV_PATTERN.match(self.api_key_env):
            out.append(
                f"the API key variable must be the *name* of an environment variable (letters, digits, "
                f"underscores), got {_masked(self.api_key_env)}"
            )
        if not 0.0 <= self.temperature <= 2.0:
            out.append(f"the temperature must lie in [0, 2], got {self.temperature}")
        if not 1 <= self.samples <= MAX_SAMPLES:
            out.append(f"the samples per item must be 1 to {MAX_SAMPLES}, got {self.samples}")
        if not 1 <= self.concurrency <= MAX_CONCURRENCY:
            out.append(f"the concurrency must be 1 to {MAX_CONCURRENCY}, got {self.concurrency}")
        if not 0 < self.timeout <= 3600:
            out.append(f"the timeout must be more than 0 and at most 3600 seconds, got {self.timeout}")
        return out


def _masked(text: str) -> str:
    """A value that may be a pasted key, shown without its content."""
    return f"a value of {len(text)} characters" if len(text) > 8 else repr(text)


def key_env_allowed(name: str) -> bool:
    """Whether a lead may name this environment variable as a rater's API key from the browser: one the
    operator listed (`MODEL_API_KEY_ENVS`) or named ``MODEL_KEY_...``. Never any other variable: the
    worker sends the key to the rater's server, so a variable such as SECRET_KEY or DATABASE_URL would
    go to a server the lead chose."""
    return not name or name in django_settings.MODEL_API_KEY_ENVS or name.startswith("MODEL_KEY_")


def base_url_allowed(url: str) -> bool:
    """Whether a lead may point a rater at this server from the browser: `MODEL_BASE_URLS` holds ``*``, or
    an entry with the same scheme, host and port whose path the URL's path starts with (at a ``/``)."""
    allowed = django_settings.MODEL_BASE_URLS
    if "*" in allowed:
        return True
    try:
        asked = urlsplit(url.strip())
        port = asked.port
    except ValueError:
        return False
    for entry in allowed:
        prefix = urlsplit(entry.strip())
        if (asked.scheme, asked.hostname, port) != (prefix.scheme, prefix.hostname, prefix.port):
            continue
        base, path = prefix.path.rstrip("/"), asked.path.rstrip("/")
        if path == base or path.startswith(base + "/"):
            return True
    return False


def add_model_rater(
    study: Study, name: str, settings: RaterSettings, *, actor: User | None, from_browser: bool = False
) -> ModelRater:
    """Add a model rater to the study. Raises RaterError for a bad name (taken by another rater or by a
    user, whose labels it would be confused with) or bad settings. An API key variable that is not set
    in this process is accepted (the worker may have it), never read here. `from_browser`: a lead, not
    the operator of the server, asks, so the key variable must be one `key_env_allowed` accepts and the
    server one `base_url_allowed` accepts (the command line and the operator's own scripts may name any)."""
    problems = [] if NAME_PATTERN.match(name) else [
        f"the name must be 1 to 64 letters, digits, '.', '_' or '-', from a letter or digit, got {name!r}"
    ]  # fmt: skip
    problems += settings.problems()
    if from_browser and not key_env_allowed(settings.api_key_env):
        allowed = ", ".join(django_settings.MODEL_API_KEY_ENVS)
        problems.append(
            f"the API key variable {settings.api_key_env!r} is not one this server lets a study use: name "
            f"one of {allowed} or a variable starting with MODEL_KEY_ (the operator sets MODEL_API_KEY_ENVS)"
        )
    if from_browser and settings.base_url.strip() and not base_url_allowed(settings.base_url):
        problems.append(
            f"the base URL {settings.base_url.strip()!r} is not a server this installation lets a study use: "
            f"name one of {', '.join(django_settings.MODEL_BASE_URLS)} (the operator sets MODEL_BASE_URLS)"
        )
    if ModelRater.objects.filter(study=study, name=name).exists():
        problems.append(f"study {study.slug} already has a model rater named {name!r}")
    if User.objects.filter(username=name).exists():
        problems.append(f"{name!r} is a user's name; a model rater needs a name of its own")
    if problems:
        raise RaterError("; ".join(problems))
    return ModelRater.objects.create(
        study=study,
        name=name,
        kind=settings.kind,
        base_url=settings.base_url.strip(),
        model=settings.model.strip(),
        api_key_env=settings.api_key_env,
        temperature=settings.temperature,
        samples=settings.samples,
        concurrency=settings.concurrency,
        timeout=settings.timeout,
        prompt_template=settings.prompt_template,
        created_by=actor,
    )


def api_key_of(rater: ModelRater) -> str | None:
    """The key the rater's variable holds in this process, for the client only (never stored)."""
    return os.environ.get(rater.api_key_env) if rater.api_key_env else None


# ------------------------------------------------------------------------------------ imported labels
@dataclass(frozen=True)
class ImportResult:
    rater: ModelRater
    created_rater: bool
    answers: int
    labels: int
    replaced: int

    def summary(self) -> str:
        made = " (created as an imported rater)" if self.created_rater else ""
        return (
            f"{self.rater.name}{made}: {self.answers} answer(s) with {self.labels} label(s), "
            f"{self.replaced} replacing an earlier import."
        )


def _item_ids(study: Study, texts: Sequence[str]) -> dict[str, int | str]:
    """Item id per URL as written, or the problem."""
    spelled: dict[str, str] = {}
    out: dict[str, int | str] = {}
    for text in texts:
        try:
            spelled[text] = canonical_url(text)
        except ValueError:
            out[text] = "not an absolute http(s) URL"
    wanted = sorted(set(spelled) | set(spelled.values()))
    found: dict[str, int] = {}
    for start in range(0, len(wanted), 500):
        found.update(
            Item.objects.filter(study=study, url__in=wanted[start : start + 500]).values_list("url", "pk")
        )
    for text, canonical in spelled.items():
        hit = found.get(text, found.get(canonical))
        out[text] = hit if hit is not None else f"no item of study {study.slug} has this URL"
    return out


def _category(index: CodebookIndex, dimension: str, text: str) -> int | str:
    """The category id a label names (active first, then any status; a merged one followed), or the
    problem."""
    try:
        try:
            category_id = index.resolve(dimension, text)
        except UnknownLabelError as unknown:
            try:
                category_id = index.resolve(dimension, text, active_only=False)
            except LabelError:
                raise unknown from None
    except (LabelError, UnknownDimensionError) as exc:
        return str(exc)
    info = index.categories[category_id]
    seen = {category_id}
    while info.status == CategoryStatus.MERGED and info.merged_into_id in index.categories:
        if info.merged_into_id in seen:
            break
        seen.add(info.merged_into_id)
        info = index.categories[info.merged_into_id]
    if info.status in (CategoryStatus.PROPOSED, CategoryStatus.REJECTED, CategoryStatus.MERGED):
        return f"{index.path(category_id)!r} is a {info.status} code, not a codebook category"
    return info.id


@dataclass
class _Planned:
    rows: ModelAnswerRows
    item_id: int
    round_id: int | None
    labels: list[tuple[int, int, int]]  # (finding, dimension id, category id)


def _plan(
    study: Study, index: CodebookIndex, answers: Sequence[ModelAnswerRows]
) -> tuple[list[_Planned], list[LabelProblem]]:
    problems: list[LabelProblem] = []
    items = _item_ids(study, sorted({a.item for a in answers}))
    rounds = dict(Round.objects.filter(study=study).values_list("number", "pk"))
    planned: list[_Planned] = []
    for answer in answers:
        row = answer.first_row
        item = items[answer.item]
        if isinstance(item, str):
            problems.append(LabelProblem(row, "item", answer.item, item))
        if answer.round is not None and answer.round not in rounds:
            known = ", ".join(map(str, sorted(rounds))) or "none"
            problems.append(LabelProblem(row, "round", str(answer.round), f"no such round (rounds: {known})"))
        labels: list[tuple[int, int, int]] = []
        chosen: dict[int, dict[str, list[int]]] = {}
        for (finding, dimension_key), texts in answer.labels.items():
            try:
                dimension = index.dimension(dimension_key)
            except UnknownDimensionError:
                known = ", ".join(d.key for d in index.dimensions) or "none"
                problems.append(
                    LabelProblem(
                        texts[0][1], "dimension", dimension_key, f"unknown dimension (known: {known})"
                    )
                )
                continue
            if not dimension.multiple and len(texts) > 1:
                problems.append(
                    LabelProblem(
                        texts[1][1], "label", texts[1][0],
                        f"dimension {dimension.key!r} is single-choice and finding {finding} already has "
                        f"{texts[0][0]!r} (row {texts[0][1]})",
                    )
                )  # fmt: skip
                continue
            for text, text_row in texts:
                if text.casefold() == "pending":
                    problems.append(LabelProblem(text_row, "label", text, "a model has no pending value"))
                    continue
                category = _category(index, dimension.key, text)
                if isinstance(category, str):
                    problems.append(LabelProblem(text_row, "label", text, category))
                else:
                    labels.append((finding, dimension.id, category))
                    chosen.setdefault(finding, {}).setdefault(dimension.key, []).append(category)
        for finding, values in chosen.items():
            applies = {d.key for d in index.applicable_dimensions(values)}
            for key in values:
                if key not in applies:
                    texts = answer.labels[(finding, key)]
                    problems.append(
                        LabelProblem(
                            texts[0][1], "dimension", key,
                            f"does not apply to finding {finding} of this item given its other labels "
                            "(the codebook's applies_when)",
                        )
                    )  # fmt: skip
        if not isinstance(item, str):
            round_id = rounds.get(answer.round) if answer.round is not None else None
            planned.append(_Planned(answer, item, round_id, labels))
    return planned, problems


def import_model_labels(
    study: Study, answers: Sequence[ModelAnswerRows], rater_name: str, *, actor: User | None
) -> ImportResult:
    """Store a model's labels made elsewhere as valid answers of the rater ``rater_name`` (created as an
    imported rater when missing). All or nothing: every problem of the file raises LabelFileError before
    anything is written. Importing again replaces the rater's earlier answer for the same item, round
    and sample, so the same file twice changes nothing."""
    index = CodebookIndex.for_study(study)
    planned, problems = _plan(study, index, answers)
    if problems:
        raise LabelFileError(problems)
    with transaction.atomic():
        rater = ModelRater.objects.filter(study=study, name=rater_name).select_for_update().first()
        created = rater is None
        if rater is None:
            rater = add_model_rater(study, rater_name, RaterSettings(kind=RaterKind.IMPORTED), actor=actor)
        elif rater.kind != RaterKind.IMPORTED:
            raise RaterError(
                f"{rater_name!r} is a {rater.get_kind_display()} rater; its answers come from its runs. "
                "Import the labels under another name (an imported rater is created for it)."
            )
        replaced = 0
        params: dict[str, Any] = {"source": "import_model_labels"}
        labels: list[ModelLabel] = []
        for plan in planned:
            same = ModelAnswer.objects.filter(
                rater=rater, item_id=plan.item_id, sample=plan.rows.sample, prompt_hash=""
            )
            if plan.round_id is None:
                same = same.filter(round__isnull=True)
            else:
                same = same.filter(round_id=plan.round_id)
            deleted, _ = same.delete()
            replaced += 1 if deleted else 0
            answer = ModelAnswer.objects.create(
                rater=rater,
                item_id=plan.item_id,
                round_id=plan.round_id,
                sample=plan.rows.sample,
                codebook_version=index.version,
                params=params,
                status=AnswerStatus.VALID,
            )
            labels += [
                ModelLabel(answer=answer, finding=f, dimension_id=d, category_id=c) for f, d, c in plan.labels
            ]
        ModelLabel.objects.bulk_create(labels, ignore_conflicts=True)
    return ImportResult(rater, created, len(planned), len(labels), replaced)


def delete_study_model_labels(study: Study) -> None:
    """Every model label of the study, before the study's deletion cascades (a model label protects its
    category and dimension, which the codebook's deletion must be able to remove)."""
    ModelLabel.objects.filter(answer__rater__study=study).delete()
