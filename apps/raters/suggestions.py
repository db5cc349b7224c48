"""A model's labels as suggestions in a labelling round's workbench (docs/models.md, "Suggestions").

A lead switches one rater on for one labelling round (`switch_suggestions`, the one writer of
`RoundSuggestions`); the workbench asks `apps.annotation.suggestions.suggestion_for`, which first checks
that the round and the item allow any model output (never in a reliability round, never on an item of a
reliability round still blind), then calls `suggestion` here (provided in `RatersConfig.ready()`).

The suggestion is the rater's valid answers on the item, one per sample (the round's own answer, else
one made for the item wherever it is; the latest of each), as each chosen category with the share of
the samples that chose it: with k samples, the share is the model's confidence.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from django.db import transaction
from django.db.models import Q

from apps.accounts.models import Study, User
from apps.annotation.models import Round, RoundKind
from apps.annotation.suggestions import SuggestedValue, Suggestion

from .models import AnswerStatus, ModelAnswer, ModelLabel, ModelRater, RoundSuggestions

__all__ = ["SuggestionError", "SwitchResult", "round_switches", "suggestion", "switch_suggestions"]


class SuggestionError(ValueError):
    """A switch that cannot be made; the message names the problem."""


@dataclass(frozen=True)
class SwitchResult:
    round: Round
    rater: ModelRater | None
    """The rater now suggesting, None when switched off."""


def switch_suggestions(study: Study, round_number: int, rater_name: str | None, actor: User) -> SwitchResult:
    """Show `rater_name`'s labels as suggestions in the round's workbench (None: show none)."""
    with transaction.atomic():
        round_ = Round.objects.filter(study=study, number=round_number).first()
        if round_ is None:
            raise SuggestionError(f"study {study.slug} has no round {round_number}")
        if rater_name is None:
            RoundSuggestions.objects.filter(round=round_).delete()
            return SwitchResult(round_, None)
        if round_.kind != RoundKind.LABELLING:
            raise SuggestionError(
                f"{round_} is a reliability round: a model's suggestions would shift its labels toward "
                "the model and inflate the agreement measured with it. Make it a labelling round first "
                "(on its round page)."
            )
        rater = ModelRater.objects.of_study(study).filter(name=rater_name).first()
        if rater is None:
            raise SuggestionError(f"study {study.slug} has no model rater {rater_name!r}")
        RoundSuggestions.objects.update_or_create(
            round=round_, defaults={"rater": rater, "switched_on_by": actor}
        )
        return SwitchResult(round_, rater)


def round_switches(study: Study) -> dict[int, str]:
    """The rater switched on per round number."""
    return dict(
        RoundSuggestions.objects.filter(round__study=study).values_list("round__number", "rater__name")
    )


def suggestion(round_: Round, item_id: int) -> Suggestion | None:
    """The switched-on rater's labels on the item, or None (no switch, or no valid answer yet)."""
    switch = RoundSuggestions.objects.filter(round=round_).select_related("rater").first()
    if switch is None:
        return None
    rater = switch.rater
    latest: dict[int, tuple[bool, int]] = {}  # sample → (the round's own answer, answer id)
    for pk, sample, own in (
        ModelAnswer.objects.filter(rater=rater, item_id=item_id, status=AnswerStatus.VALID)
        .filter(Q(round=round_) | Q(round__isnull=True))
        .order_by("created_at", "pk")
        .values_list("pk", "sample", "round_id")
    ):
        key = (own is not None, pk)
        if sample not in latest or key[0] >= latest[sample][0]:
            latest[sample] = key
    if not latest:
        return None
    chosen: Counter[tuple[int, int]] = Counter()
    names: dict[tuple[int, int], tuple[str, str, int]] = {}
    for _answer, dimension_id, category_id, dimension, category, parent, position in (
        ModelLabel.objects.filter(answer_id__in=[pk for _, pk in latest.values()])
        .values_list(
            "answer_id",
            "dimension_id",
            "category_id",
            "dimension__name",
            "category__name",
            "category__parent__name",
            "dimension__position",
        )
        .distinct()
    ):
        chosen[(dimension_id, category_id)] += 1
        label = f"{parent} > {category}" if parent else category
        names[(dimension_id, category_id)] = (dimension, label, position)
    samples = len(latest)
    values = sorted(
        (
            (
                names[key][2],
                -count,
                names[key][1],
                SuggestedValue(names[key][0], names[key][1], count / samples),
            )
            for key, count in chosen.items()
        ),
        key=lambda row: row[:3],
    )
    return Suggestion(
        rater.name, rater.model or rater.get_kind_display(), samples, tuple(v[-1] for v in values)
    )
