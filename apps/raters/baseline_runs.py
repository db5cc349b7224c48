"""A run of the local baseline rater (docs/models.md "The local baseline"): the same scopes, counts,
answers and labels as a run against a server, computed in this process by `baseline.predict`.

The predictions of a run's items are written as the answer an LLM would give (``{"findings": [{...}]}``),
dimensions that do not apply given the others left out, and read back through `prompts.check_answer`,
so a baseline's labels pass the same checks as a model's. Each answer's prompt hash is the baseline's
fingerprint (its version, the training labels, the codebook version, folds and seed): a rerun on the
same decisions reuses the answers, a rerun after new decisions computes again.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING

from apps.core.jobs import JobFailed, JobProgress

from . import client
from .gold import gold_labels
from .models import ModelAnswer
from .prompts import Prompt, applicable_dimensions

if TYPE_CHECKING:
    from .runs import _Run

BASELINE_SEED = 0


def _text(title: str, body: str, comments: tuple[str, ...]) -> str:
    return "\n".join([title, body, *comments])


def baseline_work(state: _Run, progress: JobProgress, cancelled: Callable[[], bool]) -> str:
    """The work of a baseline run (`core.jobs.run_job`): `state` holds the run, its codebook and `store`.
    A cancel request (`cancelled()`) is honoured before the fitting and before anything is stored: the
    fitting itself (seconds, in scikit-learn) is not interrupted."""
    from . import baseline  # scikit-learn takes a second to import: only a baseline run pays for it
    from .runs import _Ask, _item_texts, run_item_ids  # runs imports this module

    run, spec = state.run, state.spec
    gold = gold_labels(run.study_id)
    targets = run_item_ids(run)
    progress.set_total(len(targets))
    progress.note(f"Fitting the baseline on {len(gold)} decided item(s) for {len(targets)} item(s)")
    key = baseline.fingerprint(gold, state.index.version, baseline.DEFAULT_FOLDS, BASELINE_SEED)
    answers = ModelAnswer.objects.filter(rater_id=run.rater_id, prompt_hash=key)
    answers = (
        answers.filter(round__isnull=True) if run.round_id is None else answers.filter(round_id=run.round_id)
    )
    have = set(answers.values_list("item_id", flat=True))
    todo = [t for t in targets if t not in have]
    run.reused += len(targets) - len(todo)
    progress.advance(len(targets) - len(todo))
    if not todo:
        return f"0 answered, {run.reused} already there"
    if cancelled():
        return f"0 answered, {run.reused} already there (cancelled before fitting)"
    texts = {i: _text(t.title, t.body, t.comments) for i, t in _item_texts(sorted(set(gold) | set(todo)))}
    dimensions = [baseline.Dimension(d.key, d.multiple) for d in spec.dimensions]
    try:
        predicted = baseline.predict(
            texts,
            {i: g for i, g in gold.items() if i in texts},
            [t for t in todo if t in texts],
            dimensions,
            folds=baseline.DEFAULT_FOLDS,
            seed=BASELINE_SEED,
        )
    except baseline.BaselineError as exc:
        raise JobFailed(str(exc)) from exc
    if cancelled():
        return f"0 answered, {run.reused} already there (cancelled after fitting: nothing stored)"
    empty = Prompt(messages=({"role": "user", "content": ""},), schema={})
    for item_id, chosen in predicted.items():
        applies = applicable_dimensions(spec, chosen)
        finding = {
            d.key: _value(chosen[d.key], d.multiple)
            for d in spec.dimensions
            if d.key in applies and d.key in chosen
        }
        reply = client.Reply(
            text=json.dumps({"findings": [finding]}, ensure_ascii=False),
            model_id=baseline.MODEL_ID,
            input_tokens=0,
            output_tokens=0,
            structured=False,
            retries=0,
        )
        state.store(_Ask(item_id, 0, empty, key), reply)
        progress.advance(1, f"{run.asked} answered, {run.refused} refused")
    return f"{run.asked} answered ({run.refused} refused), {run.reused} already there"


def _value(keys: tuple[str, ...], multiple: bool) -> str | list[str]:
    return list(keys) if multiple else keys[0]
