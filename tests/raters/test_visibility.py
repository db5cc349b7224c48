"""Blindness is structural: until #20's phases land, every round is blind to model outputs."""

from __future__ import annotations

from apps.accounts.models import Study
from apps.annotation.models import Round
from apps.raters.visibility import round_is_blind


def test_every_round_is_blind_to_model_outputs_until_round_phases_exist(study: Study) -> None:
    first = Round.objects.create(study=study, number=1)
    second = Round.objects.create(study=study, number=2, params={"closed": True})
    assert round_is_blind(first) and round_is_blind(second)
