"""Agreement snapshots: what they store, when they compute now or in the background, drill-downs."""

from __future__ import annotations

import pytest
from pytest_django import DjangoCaptureOnCommitCallbacks, Settings

from apps.accounts.models import Study, User
from apps.agreement import freshness, services
from apps.agreement.metrics import agreement_report
from apps.agreement.models import AgreementSnapshot
from apps.agreement.ratings import PENDING, RatingsError, build_table, load_study_ratings
from apps.agreement.tasks import compute_agreement_task
from apps.core.models import JobStatus
from apps.corpus.models import Item
from apps.taxonomy.models import Codebook
from tests.agreement.conftest import Annotate

pytestmark = pytest.mark.django_db

SIX_KEYS = [
    "n_items",
    "n_annotators",
    "n_ratings",
    "percent_agreement",
    "cohen_kappa",
    "fleiss_kappa",
    "krippendorff_alpha",
    "gwet_ac1",
    "per_category",
    "pairwise",
    "undefined",
]


@pytest.fixture
def labelled(
    study: Study,
    codebook: Codebook,
    annotate: Annotate,
    items: list[Item],
    annotator_a: User,
    annotator_b: User,
) -> Study:
    """Two rounds of three items, alice and bob, disagreeing on a few values."""
    alice = [("bug", "segfault", ["code"]), ("bug", "oom", ["config"]), ("question", None, None)]
    bob = [("bug", "oom", ["code"]), ("bug", "oom", ["config", "docs"]), ("question", None, None)]
    for round_number, chunk in ((1, items[:3]), (2, items[3:])):
        for item, mine, theirs in zip(chunk, alice, bob, strict=True):
            for user, (kind, symptom, fix) in ((annotator_a, mine), (annotator_b, theirs)):
                values: dict[str, list[str] | str] = {"kind": [kind]}
                if symptom:
                    values["symptom"] = [symptom]
                if fix:
                    values["fix"] = fix
                annotate(round_number, item, user, [values])
    return study


def test_a_dimension_report_has_the_design_keys_and_the_codebook_version(labelled: Study) -> None:
    ratings = load_study_ratings(labelled)
    report = services.dimension_report(ratings, "symptom", round_number=1, level=1)
    assert list(report)[:5] == ["dimension", "round", "level", "codebook_version", "values"]
    assert set(SIX_KEYS) <= set(report)
    assert (report["dimension"], report["round"], report["level"], report["codebook_version"]) == (
        "symptom",
        1,
        1,
        3,
    )
    assert report["values"] == "single"
    assert report["percent_agreement"] == 1.0  # segfault and oom are both crashes
    # The §6 part is exactly the metrics report of the table.
    table = build_table(ratings, "symptom", round_number=1, level=1)
    expected = agreement_report(table.table)
    assert {key: report[key] for key in expected} == expected
    assert report["category_counts"] == {"crash": 4, "hang": 0, "slow": 0, PENDING: 0}
    assert services.dimension_report(ratings, "fix")["values"] == "sets"


def test_the_command_snapshot_records_who_what_and_on_which_codebook_version(
    labelled: Study, lead: User
) -> None:
    snapshot = services.command_snapshot(labelled, dimension="kind", round_number=2, level=1, actor=lead)
    snapshot.refresh_from_db()
    assert snapshot.status == JobStatus.SUCCEEDED
    assert snapshot.codebook_version == 3
    assert snapshot.created_by == lead
    assert snapshot.round is not None and snapshot.round.number == 2
    assert snapshot.dimension is not None and snapshot.dimension.key == "kind"
    assert snapshot.level == 1
    assert snapshot.params == {
        "kind": "command",
        "phase": "blind",
        "dimension": "kind",
        "round": 2,
        "level": 1,
        "bootstrap": None,
        "seed": None,
        "raters": None,
        "alt_test": None,
        "include_assisted": False,
    }
    assert snapshot.result["dimension"] == "kind" and snapshot.result["codebook_version"] == 3
    assert snapshot.progress_done == snapshot.progress_total == 1


def test_every_dimension_is_reported_keyed_by_dimension(labelled: Study) -> None:
    snapshot = services.command_snapshot(labelled, bootstrap=50, seed=7)
    assert list(snapshot.result) == ["kind", "symptom", "fix"]
    assert all(r["codebook_version"] == 3 and r["round"] is None for r in snapshot.result.values())
    assert all("krippendorff_alpha_ci" in r for r in snapshot.result.values())
    again = services.command_snapshot(labelled, bootstrap=50, seed=7)
    assert again.result == snapshot.result


def test_bad_requests_write_nothing(labelled: Study) -> None:
    for kwargs, message in (
        ({"dimension": "colour"}, "valid dimensions: kind, symptom, fix"),
        ({"round_number": 9}, "valid rounds: 1, 2"),
        ({"level": 0}, "level must be 1"),
        ({"bootstrap": 0}, "positive number"),
    ):
        with pytest.raises(RatingsError, match=message):
            services.command_snapshot(labelled, **kwargs)  # type: ignore[arg-type]
    assert not AgreementSnapshot.objects.exists()


def test_a_study_without_a_codebook_is_a_clear_error(study: Study) -> None:
    with pytest.raises(RatingsError, match="no codebook dimensions"):
        services.command_snapshot(study)


def test_a_small_study_is_computed_on_request_with_bootstrap_intervals(labelled: Study, lead: User) -> None:
    snapshot = services.request_dashboard(labelled, None, actor=lead)
    assert snapshot.status == JobStatus.SUCCEEDED
    assert snapshot.codebook_version == 3 and snapshot.created_by == lead
    assert snapshot.params["kind"] == "dashboard"
    assert snapshot.params["fingerprint"] == services.fingerprint(labelled)
    result = snapshot.result
    assert result["rounds"] == [
        {"number": 1, "name": "", "label": "Round 1"},
        {"number": 2, "name": "", "label": "Round 2"},
    ]
    assert [d["key"] for d in result["dimensions"]] == ["kind", "symptom", "fix"]
    kind = result["dimensions"][0]
    assert list(kind["reports"]) == ["1", "2", "all"]
    assert kind["reports"]["all"]["n_items"] == 6
    assert "krippendorff_alpha_ci" in kind["reports"]["1"]
    assert result["dimensions"][1]["max_depth"] == 2


def test_the_dashboard_state_goes_stale_when_labels_or_the_codebook_change(
    labelled: Study, annotate: Annotate, annotator_a: User, lead: User
) -> None:
    assert services.dashboard_state(labelled, None).should_compute
    services.request_dashboard(labelled, None, actor=lead)
    state = services.dashboard_state(labelled, None)
    assert state.fresh and not state.should_compute and state.snapshot is not None
    assert services.dashboard_state(labelled, 1).snapshot is None  # another level has its own snapshots

    annotate(
        3,
        Item.objects.create(study=labelled, url="https://example.org/new"),
        annotator_a,
        [{"kind": ["bug"]}],
    )
    assert not services.dashboard_state(labelled, None).fresh
    services.request_dashboard(labelled, None, actor=lead)
    assert services.dashboard_state(labelled, None).fresh

    Codebook.objects.filter(study=labelled).update(version=4)
    state = services.dashboard_state(labelled, None)
    assert not state.fresh and state.should_compute


def test_a_large_study_is_computed_in_the_background(
    labelled: Study,
    lead: User,
    settings: Settings,
    django_capture_on_commit_callbacks: DjangoCaptureOnCommitCallbacks,
) -> None:
    settings.AGREEMENT_SYNC_MAX_RATINGS = 5
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        snapshot = services.request_dashboard(labelled, 1, actor=lead)
    assert snapshot.status == JobStatus.QUEUED
    state = services.dashboard_state(labelled, 1)
    assert state.large and state.running == snapshot and not state.should_compute
    assert len(callbacks) == 1

    callbacks[0]()  # the task runs (eagerly in tests) once the snapshot is committed
    snapshot.refresh_from_db()
    assert snapshot.status == JobStatus.SUCCEEDED
    assert snapshot.progress_done == snapshot.progress_total == 9  # 3 dimensions x (2 rounds + all)
    assert snapshot.result["dimensions"][1]["reports"]["all"]["level"] == 1
    assert services.dashboard_state(labelled, 1).fresh


def test_a_stale_large_study_is_recomputed_in_the_background_with_its_last_figures_shown(
    labelled: Study,
    lead: User,
    settings: Settings,
    django_capture_on_commit_callbacks: DjangoCaptureOnCommitCallbacks,
) -> None:
    first = services.request_dashboard(labelled, None, actor=lead)
    Codebook.objects.filter(study=labelled).update(version=9)
    settings.AGREEMENT_SYNC_MAX_RATINGS = 5
    state = services.dashboard_state(labelled, None)
    assert not state.fresh and state.should_compute and state.snapshot == first
    with django_capture_on_commit_callbacks(execute=False):
        again = services.request_dashboard(labelled, None, actor=lead)
    assert again.status == JobStatus.QUEUED  # in the background, not on the request
    state = services.dashboard_state(labelled, None)
    assert state.snapshot == first and state.running == again and not state.should_compute


def test_a_large_studys_changed_labels_are_counted_in_the_background_not_on_the_view(
    labelled: Study,
    lead: User,
    settings: Settings,
    django_capture_on_commit_callbacks: DjangoCaptureOnCommitCallbacks,
) -> None:
    first = services.request_dashboard(labelled, None, actor=lead)
    settings.AGREEMENT_SYNC_MAX_RATINGS = 5
    freshness.labels_changed(study_id=labelled.pk)
    state = services.dashboard_state(labelled, None, wait=False)
    assert state.checking and state.snapshot == first and not state.fresh and not state.should_compute
    assert services.known_fingerprint(labelled) is None
    with django_capture_on_commit_callbacks(execute=True) as sent:
        services.count_fingerprint_soon(labelled)
        services.count_fingerprint_soon(labelled)  # a second viewer: asked once
    assert len(sent) == 1
    assert services.known_fingerprint(labelled) == services.fingerprint(labelled)
    state = services.dashboard_state(labelled, None, wait=False)
    assert not state.checking and state.fresh  # the labels were changed back: nothing to recompute

    settings.AGREEMENT_SYNC_MAX_RATINGS = 10_000  # a small study's view counts its labels itself
    freshness.labels_changed(study_id=labelled.pk)
    assert not services.dashboard_state(labelled, None, wait=False).checking


def test_a_large_studys_first_figures_on_their_way_are_not_recounted_on_the_view(
    labelled: Study,
    lead: User,
    settings: Settings,
    django_capture_on_commit_callbacks: DjangoCaptureOnCommitCallbacks,
) -> None:
    """No figures yet, the first computation queued: a label change is counted in the background, as for
    a study with figures, not on the view (313 ms at 100,000 items)."""
    settings.AGREEMENT_SYNC_MAX_RATINGS = 5
    with django_capture_on_commit_callbacks(execute=False):
        queued = services.request_dashboard(labelled, None, actor=lead)
    freshness.labels_changed(study_id=labelled.pk)
    state = services.dashboard_state(labelled, None, wait=False)
    assert state.snapshot is None and state.running == queued
    assert state.checking and not state.should_compute
    assert services.known_fingerprint(labelled) is None  # nothing was counted


def test_the_task_does_nothing_for_a_finished_snapshot(labelled: Study, lead: User) -> None:
    snapshot = services.request_dashboard(labelled, None, actor=lead)
    finished_at = snapshot.finished_at
    compute_agreement_task.delay(snapshot.pk)
    snapshot.refresh_from_db()
    assert snapshot.finished_at == finished_at


def test_a_snapshot_whose_dimension_disappeared_fails_with_its_reason(labelled: Study) -> None:
    snapshot = AgreementSnapshot.objects.create(
        study=labelled, params={"kind": "command", "dimension": "gone", "round": None, "level": None}
    )
    compute_agreement_task.delay(snapshot.pk)
    snapshot.refresh_from_db()
    assert snapshot.status == JobStatus.FAILED
    assert "unknown dimension 'gone'" in snapshot.error
    state_failed = services.dashboard_state(labelled, None)
    assert state_failed.failed is None  # a command snapshot is not the dashboard's


def test_a_failed_dashboard_computation_is_not_retried_on_the_same_labels(
    labelled: Study, lead: User
) -> None:
    snapshot = AgreementSnapshot.objects.create(
        study=labelled,
        params={"kind": "dashboard", "level": None, "bootstrap": 10, "seed": 0, "fingerprint": {}},
        status=JobStatus.FAILED,
    )
    state = services.dashboard_state(labelled, None)
    assert state.failed == snapshot and state.should_compute  # another fingerprint: try again
    AgreementSnapshot.objects.filter(pk=snapshot.pk).update(
        params={**snapshot.params, "fingerprint": state.fingerprint}
    )
    assert not services.dashboard_state(labelled, None).should_compute


def test_the_items_behind_a_confusion_cell(labelled: Study, items: list[Item]) -> None:
    ratings, table, matrix = services.confusion(
        labelled, "symptom", round_number=None, level=None, a="alice", b="bob"
    )
    assert matrix.a == "alice" and matrix.b == "bob"
    _, _, _, found = services.cell_items(
        labelled, "symptom", round_number=None, level=None, a="alice", b="bob", row="segfault", column="oom"
    )
    assert found == [(1, items[0]), (2, items[3])]
    assert services.value_label(ratings, table.labels, "segfault") == "Crash > Segfault"
    assert services.value_label(ratings, table.labels, PENDING) == PENDING
    _, _, _, on_level = services.cell_items(
        labelled, "symptom", round_number=2, level=1, a="alice", b="bob", row="crash", column="crash"
    )
    assert [item for _, item in on_level] == [items[3], items[4]]


def test_a_set_valued_confusion_names_sets_by_their_members(labelled: Study, items: list[Item]) -> None:
    ratings, table, matrix = services.confusion(
        labelled, "fix", round_number=1, level=None, a="alice", b="bob"
    )
    assert '["config", "docs"]' in matrix.labels
    assert services.value_label(ratings, table.labels, '["config", "docs"]') == "Config + Docs"
    assert services.value_label(ratings, table.labels, "[]") == "no category"
    _, _, _, found = services.cell_items(
        labelled,
        "fix",
        round_number=1,
        level=None,
        a="alice",
        b="bob",
        row='["config"]',
        column='["config", "docs"]',
    )
    assert found == [(1, items[1])]


def test_a_confusion_needs_known_annotators_and_values(labelled: Study) -> None:
    with pytest.raises(RatingsError, match="unknown annotator 'zoe'"):
        services.confusion(labelled, "kind", round_number=None, level=None, a="alice", b="zoe")
    with pytest.raises(RatingsError, match="unknown row value 'nope'"):
        services.cell_items(
            labelled, "kind", round_number=None, level=None, a="alice", b="bob", row="nope", column="bug"
        )


def test_with_a_single_round_all_rounds_is_that_round(
    study: Study,
    codebook: Codebook,
    annotate: Annotate,
    items: list[Item],
    annotator_a: User,
    annotator_b: User,
) -> None:
    for n, item in enumerate(items):
        annotate(1, item, annotator_a, [{"kind": ["bug"]}])
        annotate(1, item, annotator_b, [{"kind": ["bug" if n % 3 else "question"]}])
    snapshot = services.request_dashboard(study, None, actor=None)
    reports = snapshot.result["dimensions"][0]["reports"]
    assert reports["all"]["round"] is None and reports["1"]["round"] == 1
    assert {**reports["all"], "round": 1} == reports["1"]
    computed = services.dimension_report(
        load_study_ratings(study),
        "kind",
        bootstrap=services.DASHBOARD_BOOTSTRAP,
        seed=services.DASHBOARD_SEED,
    )
    assert computed == reports["all"]
