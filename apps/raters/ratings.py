"""Model raters' labels as rating rows for agreement (docs/models.md "Measured like a rater"). Reads only.

A model rater is a column of agreement's tables like an annotator: ``NAME`` is its sample 0, ``NAME#k``
its sample k (the k samples of one model compared with each other measure its self-consistency). A
column's id in the rows is negative (`column_id`), so it can never be taken for a user's id.

Only valid answers count (a refusal has no labels: the model did not rate the item). Of several answers
for one (item, round, sample), made with different prompts, the latest counts. An answer without a round
applies to the item in every round the item is in; an item in no round is in no table.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from apps.accounts.models import Study
from apps.annotation.models import RoundItem

from .models import AnswerStatus, ModelAnswer, ModelLabel, ModelRater

SAMPLE_SEPARATOR = "#"
_SAMPLES_PER_RATER = 1000

__all__ = ["ModelColumn", "column_id", "item_labels", "model_columns", "model_label_rows", "rater_names"]


@dataclass(frozen=True)
class ModelColumn:
    name: str
    rater_id: int
    sample: int

    @property
    def id(self) -> int:
        return column_id(self.rater_id, self.sample)


def column_id(rater_id: int, sample: int) -> int:
    """The negative id of a rater's sample among agreement's annotator ids."""
    return -(rater_id * _SAMPLES_PER_RATER + sample) - 1


def rater_names(study: Study) -> list[str]:
    return list(ModelRater.objects.of_study(study).values_list("name", flat=True))


def model_columns(study: Study, names: Iterable[str]) -> dict[str, ModelColumn]:
    """The names among ``names`` that are the study's model raters (``NAME`` or ``NAME#k`` with k below
    the rater's samples), each as its column; other names are left out for the caller to report."""
    raters = dict(ModelRater.objects.of_study(study).values_list("name", "pk"))
    out: dict[str, ModelColumn] = {}
    for name in names:
        base, _, sample = name.partition(SAMPLE_SEPARATOR)
        if base in raters and (not sample or (sample.isdigit() and int(sample) < _SAMPLES_PER_RATER)):
            out[name] = ModelColumn(name, raters[base], int(sample or 0))
    return out


def model_label_rows(
    study: Study, columns: Sequence[ModelColumn], dimension_ids: Sequence[int]
) -> list[tuple[int, int, int, int, int, int]]:
    """(round number, item id, column id, finding, dimension id, category id) for every label of the
    columns' valid answers in these dimensions (module docstring)."""
    if not columns or not dimension_ids:
        return []
    wanted = {(c.rater_id, c.sample): c.id for c in columns}
    answers = (
        ModelAnswer.objects.filter(
            rater__study=study,
            rater_id__in={c.rater_id for c in columns},
            sample__in={c.sample for c in columns},
            status=AnswerStatus.VALID,
        )
        .order_by("created_at", "pk")
        .values_list("pk", "rater_id", "sample", "item_id", "round__number")
    )
    latest: dict[tuple[int, int, int, int | None], int] = {}
    for pk, rater_id, sample, item_id, round_number in answers:
        if (rater_id, sample) in wanted:
            latest[(rater_id, sample, item_id, round_number)] = pk  # later answers win
    if not latest:
        return []
    by_answer = {pk: key for key, pk in latest.items()}
    item_rounds: dict[int, list[int]] = {}
    unrounded = {item for (_, _, item, number) in latest if number is None}
    for item_id, number in RoundItem.objects.filter(round__study=study, item_id__in=unrounded).values_list(
        "item_id", "round__number"
    ):
        item_rounds.setdefault(item_id, []).append(number)
    rows: list[tuple[int, int, int, int, int, int]] = []
    labels = ModelLabel.objects.filter(
        answer__rater_id__in={c.rater_id for c in columns},
        answer__status=AnswerStatus.VALID,
        dimension_id__in=list(dimension_ids),
    )
    for answer_id, finding, dimension_id, category_id in labels.values_list(
        "answer_id", "finding", "dimension_id", "category_id"
    ):
        if answer_id not in by_answer:
            continue  # another sample, or an earlier answer
        rater_id, sample, item_id, answer_round = by_answer[answer_id]
        column = wanted[(rater_id, sample)]
        if answer_round is not None:
            rows.append((answer_round, item_id, column, finding, dimension_id, category_id))
            continue
        for round_number in item_rounds.get(item_id, []):
            if (rater_id, sample, item_id, round_number) not in latest:  # a round's own answer wins
                rows.append((round_number, item_id, column, finding, dimension_id, category_id))
    return rows


def item_labels(rater: ModelRater) -> dict[int, dict[str, frozenset[str]]]:
    """The rater's labels per item as one judgement, for a comparison with the gold decisions: its sample
    0, the latest valid answer of each item whatever the round, category keys per dimension key (all
    findings together)."""
    latest: dict[int, int] = {}
    for answer_id, item_id in (
        ModelAnswer.objects.filter(rater=rater, sample=0, status=AnswerStatus.VALID)
        .order_by("item_id", "created_at", "pk")
        .values_list("pk", "item_id")
    ):
        latest[item_id] = answer_id  # ordered: the last one seen is the latest
    by_answer = {answer_id: item_id for item_id, answer_id in latest.items()}
    out: dict[int, dict[str, set[str]]] = {}
    labels = ModelLabel.objects.filter(
        answer__rater=rater, answer__sample=0, answer__status=AnswerStatus.VALID
    )
    for answer_id, dimension, category in labels.values_list("answer_id", "dimension__key", "category__key"):
        if answer_id in by_answer:  # an older answer of the item is not its judgement
            out.setdefault(by_answer[answer_id], {}).setdefault(dimension, set()).add(category)
    return {item: {d: frozenset(keys) for d, keys in dims.items()} for item, dims in out.items()}
