"""Model outputs follow the round's phase: hidden from annotators until a lead reveals the round."""

from __future__ import annotations

from typing import Any

import pytest

from apps.annotation import services
from apps.annotation.models import Round
from apps.raters.visibility import round_is_blind
from tests.api.world import World, build_world

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(study: Any, owner: Any, lead: Any, annotator_a: Any, annotator_b: Any, outsider: Any) -> World:
    return build_world(study, owner, lead, annotator_a, annotator_b, outsider)


def test_model_outputs_stay_hidden_until_the_round_is_revealed(world: World) -> None:
    assert round_is_blind(world.round)
    services.reveal_round(world.study, 1, force=True, actor=world.lead)
    assert not round_is_blind(Round.objects.get(pk=world.round.pk))
