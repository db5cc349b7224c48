from __future__ import annotations

import json

import pytest
from django.core.management import call_command

from apps.accounts.models import Study
from tests.factories import ItemFactory

pytestmark = pytest.mark.django_db


def test_study_status_json_has_the_contract_keys(study: Study, capsys: pytest.CaptureFixture[str]) -> None:
    ItemFactory.create_batch(3, study=study)
    call_command("study_status", study.slug, "--format", "json")
    status = json.loads(capsys.readouterr().out)
    assert status == {
        "items": 3,
        "rounds": 0,
        "assignments": {"open": 0, "submitted": 0},
        "decisions": {"unanimous": 0, "majority": 0, "discussed": 0, "adjudicated": 0, "imported": 0},
        "disagreements_open": 0,
        "codebook_version": 0,
    }
