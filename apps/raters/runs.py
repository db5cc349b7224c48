"""A model rater's run: ask the server about every item of a round, a seeded sample, or the items nobody
labelled yet, and store each answer (docs/models.md "Runs").

`create_model_run` checks the request and records a `ModelRun`; `execute_model_run` runs it inside
`core.jobs.run_job` (a command in the foreground, `tasks.run_model_task` in a worker), so the row shows
its progress the same way. Requests go out `rater.concurrency` at a time from a thread pool; the answers
are stored by this thread, each as it arrives, so a run killed half-way keeps what it got, and a rerun
skips every (item, round, sample) that already has an answer for the same prompt hash (the prompt, the
model asked for and its parameters). A lead cancels with `cancel_model_run`: no new request is sent,
the ones under way are stored, and the run ends *cancelled*.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from decimal import Decimal
from functools import partial

import openai
from django.db import IntegrityError, transaction
from django.db.models import Exists, OuterRef

from apps.accounts.models import Study, User
from apps.annotation.models import Annotation, Round, RoundItem
from apps.annotation.sampling import SamplingError, draw_sample
from apps.core.jobs import JobFailed, JobProgress, enqueue, run_job
from apps.core.models import JobStatus
from apps.corpus.models import Item, ItemComment
from apps.taxonomy.codebook_spec import CodebookSpec
from apps.taxonomy.index import CodebookIndex

from . import client
from .baseline_runs import baseline_work
from .models import AnswerStatus, ModelAnswer, ModelLabel, ModelRater, ModelRun, RaterKind, RunScope
from .prompts import PROMPT_VERSION, CheckedAnswer, ItemText, Prompt, build_prompt, check_answer, prompt_hash
from .services import RaterError, api_key_of

CANCEL_CHECK_SECONDS = 0.5
ITEM_CHUNK = 200
_COUNTS = ("asked", "reused", "refused", "failed", "input_tokens", "output_tokens", "cost", "model_ids")

__all__ = ["cancel_model_run", "create_model_run", "execute_model_run", "request_model_run", "run_item_ids"]


def create_model_run(
    study: Study,
    rater: ModelRater,
    *,
    round_number: int | None = None,
    sample_size: int | None = None,
    seed: int | None = None,
    unlabelled: bool = False,
    limit: int | None = None,
    actor: User | None,
) -> ModelRun:
    """Record a run of ``rater`` over exactly one scope. Raises RaterError for a rater of another study,
    an imported rater (its labels come from a file), no scope or several, an unknown round, a sample
    without a seed or larger than the study, a limit below 1, or a study without a codebook."""
    if rater.study_id != study.pk:
        raise RaterError(f"{rater.name!r} is not a model rater of study {study.slug}")
    if rater.kind == RaterKind.IMPORTED:
        raise RaterError(
            f"{rater.name!r} is an imported rater: its labels come from a file, it has nothing to run"
        )
    scopes = [round_number is not None, sample_size is not None, unlabelled]
    if sum(scopes) != 1:
        raise RaterError("give exactly one of a round, a sample with its seed, or the unlabelled items")
    if limit is not None and limit < 1:
        raise RaterError(f"the limit must be a positive whole number, got {limit}")
    if not CodebookIndex.for_study(study).dimensions:
        raise RaterError(f"study {study.slug} has no codebook dimensions yet; load a codebook first")
    round_ = None
    if round_number is not None:
        round_ = Round.objects.filter(study=study, number=round_number).first()
        if round_ is None:
            known = ", ".join(map(str, Round.objects.filter(study=study).values_list("number", flat=True)))
            raise RaterError(f"study {study.slug} has no round {round_number} (rounds: {known or 'none'})")
    if sample_size is not None:
        if seed is None:
            raise RaterError("a sample needs its seed, so that it can be drawn again")
        total = Item.objects.filter(study=study).count()
        if not 1 <= sample_size <= total:
            raise RaterError(f"cannot draw a sample of {sample_size} from the study's {total} items")
    scope = RunScope.ROUND if round_ else RunScope.SAMPLE if sample_size is not None else RunScope.UNLABELLED
    return ModelRun.objects.create(
        study=study,
        rater=rater,
        scope=scope,
        round=round_,
        sample_size=sample_size,
        seed=seed,
        limit=limit,
        created_by=actor,
    )


def request_model_run(run: ModelRun) -> ModelRun:
    """Send a recorded run to a worker once its row is committed (the browser's and the API's way)."""
    from .tasks import run_model_task  # tasks import this module

    transaction.on_commit(lambda: enqueue(run_model_task, run))
    return run


def cancel_model_run(run: ModelRun) -> bool:
    """Ask a queued or running run to stop; True when it was still unfinished. A queued run ends
    cancelled at once; a running one after the requests under way."""
    updated = ModelRun.objects.filter(pk=run.pk, status__in=[JobStatus.QUEUED, JobStatus.RUNNING]).update(
        cancel_requested=True
    )
    ModelRun.objects.filter(pk=run.pk, status=JobStatus.QUEUED).update(
        status=JobStatus.CANCELLED, message="Cancelled before it started."
    )
    return bool(updated)


def run_item_ids(run: ModelRun) -> list[int]:
    """The items of the run's scope, in a stable order (a round's own, a sample's drawn order, the
    unlabelled by id), cut to its limit."""
    if run.scope == RunScope.ROUND:
        ids = list(
            RoundItem.objects.filter(round=run.round)
            .order_by("position", "pk")
            .values_list("item_id", flat=True)
        )
    elif run.scope == RunScope.SAMPLE:
        population = list(Item.objects.filter(study=run.study).values_list("pk", flat=True))
        try:
            ids = draw_sample(population, int(run.sample_size or 0), int(run.seed or 0))
        except SamplingError as exc:
            raise JobFailed(str(exc)) from exc
    else:
        labelled = Annotation.objects.filter(
            assignment__item=OuterRef("pk"), assignment__study=run.study, submitted_at__isnull=False
        )
        ids = list(
            Item.objects.filter(study=run.study)
            .filter(~Exists(labelled))
            .order_by("pk")
            .values_list("pk", flat=True)
        )
    return ids[: run.limit] if run.limit else ids


def _item_texts(item_ids: list[int]) -> Iterator[tuple[int, ItemText]]:
    for start in range(0, len(item_ids), ITEM_CHUNK):
        chunk = item_ids[start : start + ITEM_CHUNK]
        items = Item.objects.in_bulk(chunk)
        comments: dict[int, list[str]] = {}
        for item_id, body in (
            ItemComment.objects.filter(item_id__in=chunk)
            .order_by("item_id", "position")
            .values_list("item_id", "body")
        ):
            comments.setdefault(item_id, []).append(body)
        for item_id in chunk:
            item = items.get(item_id)
            if item is not None:
                yield item_id, ItemText(item.title, item.body, tuple(comments.get(item_id, ())), item.url)


@dataclass(frozen=True)
class _Ask:
    item_id: int
    sample: int
    prompt: Prompt
    hash: str


@dataclass
class _Run:
    """What one execution keeps while it goes."""

    run: ModelRun
    rater: ModelRater
    index: CodebookIndex
    spec: CodebookSpec
    structured: bool = True

    @property
    def params(self) -> dict[str, object]:
        return {
            "temperature": self.rater.temperature,
            "samples": self.rater.samples,
            "prompt_version": PROMPT_VERSION,
            "template_version": self.rater.prompt_version,
        }

    def asks(self, item_ids: list[int], progress: JobProgress) -> Iterator[_Ask]:
        round_id = self.run.round_id
        for item_id, text in _item_texts(item_ids):
            prompt = build_prompt(self.spec, text, self.rater.prompt_template)
            key = prompt_hash(prompt, model=self.rater.model, params=self.params)
            answers = ModelAnswer.objects.filter(rater=self.rater, item_id=item_id, prompt_hash=key)
            if round_id is None:
                answers = answers.filter(round__isnull=True)
            else:
                answers = answers.filter(round_id=round_id)
            have = set(answers.values_list("sample", flat=True))
            for sample in range(self.rater.samples):
                if sample in have:
                    self.run.reused += 1
                    progress.advance(1)
                else:
                    yield _Ask(item_id, sample, prompt, key)

    def call(self, ask: _Ask, openai_client: openai.OpenAI) -> client.Reply:
        return client.complete(
            openai_client,
            model=self.rater.model,
            messages=ask.prompt.messages,
            schema=ask.prompt.schema if self.structured else None,
            temperature=self.rater.temperature,
        )

    def store(self, ask: _Ask, reply: client.Reply) -> None:
        run = self.run
        self.structured = self.structured and reply.structured
        checked = check_answer(self.spec, reply.text)
        valid = isinstance(checked, CheckedAnswer)
        try:
            with transaction.atomic():
                answer = ModelAnswer.objects.create(
                    rater=self.rater,
                    item_id=ask.item_id,
                    round_id=run.round_id,
                    sample=ask.sample,
                    prompt_hash=ask.hash,
                    codebook_version=self.index.version,
                    model_id=reply.model_id[:200],
                    params={**self.params, "structured_output": reply.structured, "run": run.pk},
                    status=AnswerStatus.VALID if valid else AnswerStatus.REFUSED,
                    reason="" if isinstance(checked, CheckedAnswer) else checked.reason,
                    raw_text=reply.text,
                    input_tokens=reply.input_tokens,
                    output_tokens=reply.output_tokens,
                )
                if isinstance(checked, CheckedAnswer):
                    ModelLabel.objects.bulk_create(
                        [
                            ModelLabel(
                                answer=answer,
                                finding=finding,
                                dimension_id=self.index.dimension(dimension).id,
                                category_id=self.index.category_by_key(dimension, category).id,
                            )
                            for finding, dimension, category in checked.labels
                        ]
                    )
        except IntegrityError:  # another run of this rater stored the same answer first
            run.reused += 1
            return
        run.asked += 1
        run.refused += 0 if valid else 1
        run.input_tokens += reply.input_tokens
        run.output_tokens += reply.output_tokens
        if reply.model_id and reply.model_id not in run.model_ids:
            run.model_ids = [*run.model_ids, reply.model_id]
        run.cost = _cost(self.rater, run.input_tokens, run.output_tokens)


def _cost(rater: ModelRater, input_tokens: int, output_tokens: int) -> Decimal | None:
    if rater.price_input is None and rater.price_output is None:
        return None
    million = Decimal(1_000_000)
    spent = (rater.price_input or 0) * input_tokens + (rater.price_output or 0) * output_tokens
    return Decimal(spent) / million


def _cancelled(run: ModelRun) -> bool:
    return bool(ModelRun.objects.filter(pk=run.pk).values_list("cancel_requested", flat=True).first())


def execute_model_run(run: ModelRun, *, echo: Callable[[str], None] | None = None) -> ModelRun:
    """Run a recorded (queued or claimed) run to its end (module docstring); the run's counts say what
    it did. A rater whose server refuses every request (a wrong key, an unknown model) fails the run with
    the server's message."""
    rater = ModelRater.objects.get(pk=run.rater_id)
    index = CodebookIndex.for_study(run.study)
    state = _Run(run, rater, index, index.spec())
    if rater.kind == RaterKind.BASELINE:
        stop = partial(_cancelled, run)
        run_job(run, lambda progress: baseline_work(state, progress, stop), fields=_COUNTS, echo=echo)
        return _end_cancelled(run)
    openai_client = client.make_client(
        base_url=rater.base_url,
        api_key=api_key_of(rater),
        timeout=rater.timeout,
        concurrency=rater.concurrency,
    )

    def work(progress: JobProgress) -> str:
        item_ids = run_item_ids(run)
        progress.set_total(len(item_ids) * rater.samples)
        progress.note(f"Asking {rater.model} at {rater.host} about {len(item_ids)} item(s)")
        asks = state.asks(item_ids, progress)
        in_flight: dict[Future[client.Reply], _Ask] = {}
        refusal: str | None = None
        last_check = time.monotonic()
        stopping = False
        with ThreadPoolExecutor(max_workers=rater.concurrency, thread_name_prefix="model-run") as pool:
            while True:
                while not stopping and len(in_flight) < rater.concurrency * 2:
                    ask = next(asks, None)
                    if ask is None:
                        break
                    in_flight[pool.submit(state.call, ask, openai_client)] = ask
                if not in_flight:
                    break
                done, _ = wait(in_flight, return_when=FIRST_COMPLETED)
                for future in done:
                    ask = in_flight.pop(future)
                    try:
                        state.store(ask, future.result())
                    except client.TransportError as exc:
                        run.failed += 1
                        refusal = str(exc)
                        if "refused the request" in refusal and run.asked == 0:
                            stopping = True  # every request would be refused the same way
                    progress.advance(1, f"{run.asked} answered, {run.refused} refused, {run.failed} failed")
                if time.monotonic() - last_check >= CANCEL_CHECK_SECONDS:
                    last_check = time.monotonic()
                    stopping = stopping or _cancelled(run)
        if run.failed and run.asked == 0 and refusal and "refused the request" in refusal:
            raise JobFailed(refusal)
        changed = " (the server reported several model ids)" if len(run.model_ids) > 1 else ""
        why = f" (last: {refusal})" if run.failed and refusal else ""
        return (
            f"{run.asked} answered ({run.refused} refused), {run.reused} already there, "
            f"{run.failed} without an answer{why}{changed}"
        )

    try:
        run_job(run, work, fields=_COUNTS, echo=echo)
    finally:
        openai_client.close()
    return _end_cancelled(run)


def _end_cancelled(run: ModelRun) -> ModelRun:
    """A run that finished its work after a cancel request ends *cancelled* (what it stored is kept)."""
    if _cancelled(run) and run.status == JobStatus.SUCCEEDED:
        run.status = JobStatus.CANCELLED
        run.message = f"Cancelled: {run.message}"[:500]
        ModelRun.objects.filter(pk=run.pk).update(status=run.status, message=run.message)
    return run
