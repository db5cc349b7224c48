"""Payload validation against a codebook, without a database."""

from __future__ import annotations

import pytest

from apps.annotation.payload import (
    PENDING,
    CategoryInfo,
    DimensionInfo,
    Payload,
    PayloadError,
    Schema,
    applies,
    parse_payload,
    payload_from_form,
    validate_payload,
)


def _dim(
    key: str,
    cats: list[tuple[str, ...]],
    *,
    multiple: bool = False,
    when: tuple[str, str] | None = None,
    status: dict[str, str] | None = None,
) -> DimensionInfo:
    infos = {
        lineage[-1]: CategoryInfo(
            lineage[-1], lineage[-1].title(), lineage, (status or {}).get(lineage[-1], "active")
        )
        for lineage in cats
    }
    return DimensionInfo(key, key.title(), multiple, infos, when)


SCHEMA = Schema(
    7,
    (
        _dim("type", [("fault",), ("howto",)]),
        _dim(
            "symptom",
            [("training",), ("training", "hang"), ("old",)],
            when=("type", "fault"),
            status={"old": "retired"},
        ),
        _dim("fix", [("config",), ("version",)], multiple=True, when=("type", "fault")),
        _dim("topic", [("parallel",)], when=("type", "howto")),
    ),
)


def _check(values: dict[str, object], **kwargs: object) -> Payload:
    return validate_payload(parse_payload({"findings": [{"values": values}]}), SCHEMA, **kwargs)  # type: ignore[arg-type]


def test_a_valid_payload_is_normalised_in_codebook_order() -> None:
    clean = _check(
        {"fix": ["version", "config", "config"], "symptom": ["hang"], "type": ["fault"]}, complete=True
    )
    assert clean.findings == ({"type": ("fault",), "symptom": ("hang",), "fix": ("config", "version")},)
    assert list(clean.findings[0]) == ["type", "symptom", "fix"]


def test_reordering_findings_values_gives_the_same_normal_form_within_a_finding() -> None:
    a = _check({"type": ["fault"], "fix": ["config", "version"], "symptom": "pending"})
    b = _check({"symptom": "PENDING", "fix": ["version", "config"], "type": ["fault"]})
    assert a.to_json() == b.to_json()


def test_a_dimension_applies_below_its_condition_category_and_is_unknown_when_pending() -> None:
    symptom = SCHEMA.dimension("symptom")
    assert symptom is not None
    assert applies(symptom, {"type": ("fault",)}, SCHEMA) is True
    assert applies(symptom, {"type": ("howto",)}, SCHEMA) is False
    assert applies(symptom, {"type": PENDING}, SCHEMA) is None
    assert applies(symptom, {}, SCHEMA) is False


def test_with_the_condition_pending_a_value_is_allowed_but_not_required() -> None:
    assert _check({"type": "pending"}, complete=True).findings == ({"type": PENDING},)
    assert _check({"type": "pending", "symptom": ["hang"]}, complete=True).findings[0]["symptom"] == ("hang",)


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ({"type": ["bug"]}, "finding 1, dimension 'type', value 'bug': is not a category of 'Type'"),
        (
            {"type": ["fault", "howto"]},
            "finding 1, dimension 'type': 'Type' takes one category, got 2: fault, howto",
        ),
        (
            {"type": ["howto"], "topic": ["parallel"], "fix": ["config"]},
            "finding 1, dimension 'fix', value 'config': 'Fix' applies only when 'type' is 'fault'",
        ),
        (
            {"type": ["fault"], "symptom": ["old"], "fix": "pending"},
            "finding 1, dimension 'symptom', value 'old': is retired",
        ),
        (
            {"type": ["fault"], "symptom": ["hang"]},
            "finding 1, dimension 'fix': choose a category or mark it pending",
        ),
        ({"type": ["fault", "pending"]}, "finding 1, dimension 'type': is marked pending and has a category"),
        (
            {"type": "maybe"},
            "finding 1, dimension 'type', value 'maybe': expected a list of category keys or 'pending'",
        ),
    ],
)
def test_a_refusal_names_finding_dimension_and_value(values: dict[str, object], expected: str) -> None:
    with pytest.raises(PayloadError) as caught:
        _check(values, complete=True)
    assert expected in str(caught.value)


def test_unknown_and_retired_codes_are_stale_but_a_wrong_cardinality_is_not() -> None:
    with pytest.raises(PayloadError) as stale:
        _check({"type": ["fault"], "symptom": ["old"]})
    assert stale.value.stale
    with pytest.raises(PayloadError) as not_stale:
        _check({"type": ["fault", "howto"]})
    assert not not_stale.value.stale


def test_retired_codes_are_accepted_for_imports() -> None:
    assert _check({"type": ["fault"], "symptom": ["old"]}, allow_inactive=True).findings[0]["symptom"] == (
        "old",
    )


def test_a_complete_submission_needs_a_finding() -> None:
    with pytest.raises(PayloadError, match="no finding"):
        validate_payload(parse_payload({"findings": [], "memo": ""}), SCHEMA, complete=True)


@pytest.mark.parametrize(
    "data", [[], {"findings": "x"}, {"findings": [], "memo": 3}, {"findings": [], "extra": 1}]
)
def test_a_misshapen_payload_is_refused(data: object) -> None:
    with pytest.raises(PayloadError):
        parse_payload(data)


def test_the_workbench_form_becomes_a_payload_with_findings_renumbered() -> None:
    fields = {
        "finding": ["1", "3"],
        "v-1-type": ["fault"],
        "v-1-fix": ["config", "version"],
        "p-1-symptom": ["on"],
        "v-3-type": ["howto"],
        "v-3-topic": ["parallel"],
        "memo": ["note"],
        "v-2-type": ["ignored: finding 2 was removed"],
    }
    data = payload_from_form(fields)
    assert data == {
        "findings": [
            {"values": {"type": ["fault"], "fix": ["config", "version"], "symptom": "pending"}},
            {"values": {"type": ["howto"], "topic": ["parallel"]}},
        ],
        "memo": "note",
    }
    assert validate_payload(parse_payload(data), SCHEMA, complete=True).findings[1] == {
        "type": ("howto",),
        "topic": ("parallel",),
    }


def test_a_form_with_pending_and_a_category_is_refused_by_name() -> None:
    data = payload_from_form({"finding": ["1"], "v-1-type": ["fault"], "p-1-type": ["on"]})
    with pytest.raises(PayloadError, match="dimension 'type': is marked pending and has a category"):
        parse_payload(data)


@pytest.mark.parametrize(
    ("values", "in_names"),
    [
        ({"type": ["fault"], "fix": ["config"]}, "Finding 1, Symptom: choose a category or mark it pending"),
        ({"type": ["fault"], "symptom": ["old"], "fix": ["config"]}, "Finding 1, Symptom, 'Old': is retired"),
        (
            {"type": ["howto"], "fix": ["config"]},
            "Finding 1, Fix, 'Config': applies only when 'Type' is 'Fault'",
        ),
        ({"type": ["fault", "howto"]}, "Finding 1, Type: takes one category, got 'Fault', 'Howto'"),
        ({"colour": ["red"]}, "Finding 1, 'colour': is not a dimension of the codebook"),
    ],
)
def test_a_problem_in_names_says_the_dimension_and_category_by_their_names_for_the_annotator(
    values: dict[str, object], in_names: str
) -> None:
    with pytest.raises(PayloadError) as refused:
        _check(values, complete=True)
    assert in_names in [p.in_names(SCHEMA) for p in refused.value.problems]
    assert all("dimension '" in str(p) for p in refused.value.problems)  # the API and the CLI keep keys
