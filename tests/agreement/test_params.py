"""The typed parameters of agreement snapshots (apps/agreement/params.py): what the row stores reads
back equal, rows written before the classes load, and malformed ones are refused by name."""

from __future__ import annotations

import pytest

from apps.agreement.params import (
    AltTestParams,
    CommandParams,
    DashboardParams,
    SnapshotParamsError,
    snapshot_params,
)


def test_command_parameters_read_back_equal() -> None:
    params = CommandParams(
        phase="discussed",
        dimension="symptom",
        round=2,
        level=1,
        bootstrap=500,
        seed=7,
        raters=("ann", "gpt"),
        alt_test=AltTestParams("gpt", 0.2, 0.05),
    )
    stored = params.to_json()
    assert stored["kind"] == "command" and stored["raters"] == ["ann", "gpt"]
    assert stored["alt_test"] == {"rater": "gpt", "epsilon": 0.2, "q": 0.05}
    assert snapshot_params(stored) == params


def test_dashboard_parameters_read_back_equal() -> None:
    params = DashboardParams(
        level=None, bootstrap=1000, seed=0, fingerprint={"ratings": 12, "codebook_version": 3}
    )
    assert snapshot_params(params.to_json()) == params


def test_a_dashboard_row_without_its_fingerprint_computes_but_describes_no_labels() -> None:
    params = snapshot_params({"kind": "dashboard", "level": None, "bootstrap": 10, "seed": 0})
    assert params == DashboardParams(level=None, bootstrap=10, seed=0, fingerprint={})


def test_a_row_written_before_the_classes_loads() -> None:
    old = {
        "kind": "command",
        "phase": "blind",
        "dimension": None,
        "round": None,
        "level": 2,
        "bootstrap": None,
        "seed": None,
        "raters": None,
        "alt_test": None,
    }
    assert snapshot_params(old) == CommandParams(phase="blind", level=2)
    # The oldest rows had no kind and no phase: a command's, blind.
    assert snapshot_params({"dimension": "symptom"}) == CommandParams(phase="blind", dimension="symptom")


@pytest.mark.parametrize(
    ("stored", "named"),
    [
        ({"kind": "weekly"}, "'weekly'"),
        ({"kind": "command", "round": "two"}, "'round'"),
        ({"kind": "command", "level": True}, "'level'"),
        ({"kind": "command", "raters": "ann"}, "'raters'"),
        ({"kind": "command", "alt_test": {"rater": "gpt"}}, "'alt_test'"),
        ({"kind": "dashboard", "level": 1, "bootstrap": 10, "seed": 0, "fingerprint": 3}, "'fingerprint'"),
    ],
)
def test_malformed_parameters_are_refused_by_name(stored: dict[str, object], named: str) -> None:
    with pytest.raises(SnapshotParamsError, match=named):
        snapshot_params(stored)
