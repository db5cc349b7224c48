"""Agreement computations on a study, each recorded as an `AgreementSnapshot`
(docs/design.md §2 step 5, §4, §6).

Two kinds of snapshot, each with its typed parameters (`params.py`: ``CommandParams``, ``DashboardParams``):

* ``"command"``: what ``manage.py agreement STUDY`` prints: one dimension's report, or an object keyed by
  dimension, for one round or all rounds, at one level (`command_snapshot`);
* ``"dashboard"``: what the dashboard shows at one level: every active dimension, for each round and for
  all rounds together, with a bootstrap interval for alpha (`request_dashboard`).

A snapshot stores who asked (``created_by``), the parameters, the codebook version the figures were
computed on, and the result as JSON. A study with more than `sync_max_ratings()` submitted label values
is computed in the background by `tasks.compute_agreement_task`; smaller ones on request. Both run through
`run_snapshot`, inside `core.jobs.run_job`, so the row records its status and progress the same way
whichever way it ran. Computing reads only; the one write is the snapshot row itself.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.conf import settings
from django.db import transaction

from apps.accounts.models import Study, User
from apps.annotation.models import Round
from apps.annotation.outcomes import discussion_outcomes
from apps.core.jobs import JobFailed, JobProgress, enqueue, is_stalled, run_job
from apps.core.models import JobStatus
from apps.corpus.models import Item
from apps.raters import alt_test

from . import freshness
from .alt_test_report import alt_test_ratings, alt_test_report
from .fingerprints import codebook_of, count_fingerprint_soon, fingerprint, known_fingerprint
from .metrics import ConfusionMatrix, RatingTable, agreement_report, confusion_matrix
from .model_gold import models_against_gold
from .models import AgreementSnapshot
from .params import AltTestParams, CommandParams, DashboardParams, SnapshotParamsError, snapshot_params
from .ratings import (
    BLIND,
    DISCUSSED,
    PENDING,
    DimensionTable,
    RatingsError,
    StudyRatings,
    build_table,
    load_study_ratings,
)

DASHBOARD_BOOTSTRAP = 1000
DASHBOARD_SEED = 0
DEFAULT_SYNC_MAX_RATINGS = 20_000
ALL_ROUNDS = "all"

__all__ = [
    "ALL_ROUNDS",
    "DASHBOARD_BOOTSTRAP",
    "DASHBOARD_SEED",
    "ConfusionCounts",
    "DashboardState",
    "RatingsError",
    "alt_test_report",
    "cell_items",
    "command_snapshot",
    "confusion",
    "confusion_counts",
    "count_fingerprint_soon",
    "dashboard_state",
    "dimension_report",
    "fingerprint",
    "known_fingerprint",
    "request_dashboard",
    "run_snapshot",
    "sync_max_ratings",
    "value_label",
]


def sync_max_ratings() -> int:
    """Above this many submitted label values a dashboard computation runs in the background
    (``settings.AGREEMENT_SYNC_MAX_RATINGS``, default 20,000)."""
    return int(getattr(settings, "AGREEMENT_SYNC_MAX_RATINGS", DEFAULT_SYNC_MAX_RATINGS))


# ------------------------------------------------------------------------------------------- reports
def dimension_report(
    ratings: StudyRatings,
    dimension_key: str,
    *,
    round_number: int | None = None,
    level: int | None = None,
    bootstrap: int | None = None,
    seed: int | None = None,
) -> dict[str, Any]:
    """One dimension's report: ``dimension``, ``round`` (None = all), ``level`` (None = full depth),
    ``codebook_version`` and ``values`` (``"single"`` or ``"sets"``, see `ratings`), then the §6 keys of
    `metrics.agreement_report`, then ``n_pairable`` (items with two or more ratings) and
    ``category_counts`` (ratings choosing each declared category). Raises RatingsError."""
    table = build_table(ratings, dimension_key, round_number=round_number, level=level)
    return {
        "dimension": table.dimension.key,
        "round": round_number,
        "level": level,
        "codebook_version": ratings.codebook_version,
        "values": "sets" if table.is_multi else "single",
        "phase": ratings.phase,
        **agreement_report(table.table, bootstrap=bootstrap, seed=seed),
        "n_pairable": table.n_pairable,
        "category_counts": table.counts,
    }


def _check_request(
    ratings: StudyRatings, dimension: str | None, round_number: int | None, level: int | None
) -> list[str]:
    """The dimension keys to report on; RatingsError for an unknown dimension or round or a bad level."""
    keys = (
        [ratings.dimension(dimension).key]
        if dimension is not None
        else [d.key for d in ratings.index.dimensions]
    )
    if not keys:
        raise RatingsError("the study has no codebook dimensions yet; load a codebook first")
    if round_number is not None:
        ratings.check_round(round_number)
    if level is not None and level < 1:
        raise RatingsError(f"the level must be 1 (the top of the tree) or more, got {level}")
    return keys


def command_snapshot(
    study: Study,
    *,
    dimension: str | None = None,
    round_number: int | None = None,
    level: int | None = None,
    bootstrap: int | None = None,
    seed: int | None = None,
    raters: Sequence[str] | None = None,
    alt_test_rater: str | None = None,
    epsilon: float = alt_test.DEFAULT_EPSILON,
    q: float = alt_test.DEFAULT_Q,
    phase: str = BLIND,
    include_assisted: bool = False,
    actor: User | None = None,
    echo: Callable[[str], None] | None = None,
) -> AgreementSnapshot:
    """Compute ``agreement STUDY`` in the foreground and record it; ``snapshot.result`` is the output.

    The result is one `dimension_report` when ``dimension`` is given, else an object keyed by dimension
    (every active dimension, in codebook order). ``raters`` narrows the table to those raters, people and
    models alike (default: every annotator, no model). ``alt_test_rater`` adds each report's
    ``alt_test``: that model rater against the people of the table (`alt_test_report`); with a model in
    the table, each report's ``gold`` compares each model with the decisions (`model_gold`), and the
    people's assisted labels are left out unless ``include_assisted`` (`load_study_ratings`). Bad input
    (unknown dimension, round or rater, level below 1, no codebook) raises RatingsError before anything
    is written.
    """
    ratings = load_study_ratings(
        study, dimension=dimension, raters=raters, phase=phase, include_assisted=include_assisted
    )
    _check_request(ratings, dimension, round_number, level)
    if bootstrap is not None and bootstrap < 1:
        raise RatingsError(f"--bootstrap must be a positive number of replicates, got {bootstrap}")
    alt_ratings = None
    if alt_test_rater is not None:
        alt_ratings = alt_test_ratings(study, ratings, dimension, alt_test_rater, include_assisted)
        if not 0 < q < 1 or not 0 <= epsilon < 1:
            raise RatingsError(f"--q must lie in (0, 1) and --epsilon in [0, 1), got {q} and {epsilon}")
    snapshot = AgreementSnapshot.objects.create(
        study=study,
        round_id=ratings.check_round(round_number).id if round_number is not None else None,
        dimension_id=ratings.dimension(dimension).id if dimension is not None else None,
        level=level,
        codebook_version=ratings.codebook_version,
        params=CommandParams(
            phase=phase,
            dimension=dimension,
            round=round_number,
            level=level,
            bootstrap=bootstrap,
            seed=seed,
            raters=tuple(raters) if raters is not None else None,
            alt_test=None if alt_test_rater is None else AltTestParams(alt_test_rater, epsilon, q),
            include_assisted=include_assisted,
        ).to_json(),
        created_by=actor,
    )
    return run_snapshot(snapshot, echo=echo, ratings=ratings, alt_ratings=alt_ratings)


# ----------------------------------------------------------------------------------------- dashboard
@dataclass(frozen=True)
class DashboardState:
    """What the dashboard can show at one level: the latest finished snapshot (``fresh`` when the labels
    and codebook have not changed since), a snapshot still queued or running, and the latest attempt if
    it failed after that success (``failed``)."""

    snapshot: AgreementSnapshot | None
    running: AgreementSnapshot | None
    failed: AgreementSnapshot | None
    fresh: bool
    # None while the labels' fingerprint of a large study is being counted in the background (`checking`)
    fingerprint: dict[str, Any] | None

    @property
    def checking(self) -> bool:
        return self.fingerprint is None

    @property
    def large(self) -> bool:
        return self.fingerprint is None or _large(self.fingerprint)

    @property
    def should_compute(self) -> bool:
        """Compute on this request (a large study in the background): the labels are known, nothing is
        running, the last attempt on these labels did not fail, and there is no snapshot yet or it is
        stale."""
        if self.fingerprint is None or self.running is not None:
            return False
        if self.failed is not None and _fingerprint_of(self.failed) == self.fingerprint:
            return False
        return self.snapshot is None or not self.fresh


def dashboard_state(study: Study, level: int | None, *, wait: bool = True) -> DashboardState:
    """The dashboard's state at `level`. ``wait=False``: when the labels of a study whose last figures
    were large changed since their fingerprint was counted (a second at 100,000 items), the state is
    `checking` instead of counting it now (`count_fingerprint_soon` counts it in the background)."""
    snapshots = AgreementSnapshot.objects.filter(study=study, level=level, params__kind="dashboard")
    latest = snapshots.filter(status=JobStatus.SUCCEEDED).select_related("created_by").order_by("-pk").first()
    failed = snapshots.filter(status=JobStatus.FAILED).order_by("-pk").first()
    if failed is not None and latest is not None and failed.pk < latest.pk:
        failed = None
    unfinished = snapshots.filter(status__in=[JobStatus.QUEUED, JobStatus.RUNNING]).order_by("-pk")[:5]
    running = next((s for s in unfinished if not is_stalled(s)), None)
    counted = _fingerprint_of(latest) if latest is not None else None
    # Large as the last figures counted it, or, before any, as the computation still running counted it
    # (else the first view of a large study whose first figures are on their way counted its labels on
    # the request: 313 ms at 100,000 items).
    basis = counted if latest is not None or running is None else _fingerprint_of(running)
    was_large = basis is not None and _large(basis)
    current = fingerprint(study) if wait or not was_large else known_fingerprint(study)
    fresh = counted is not None and counted == current
    return DashboardState(latest, running, failed, fresh, current)


def _large(counted: dict[str, Any]) -> bool:
    """Labels this many are computed in the background (`sync_max_ratings`)."""
    return int(counted.get("ratings", 0)) > sync_max_ratings()


def _fingerprint_of(snapshot: AgreementSnapshot) -> dict[str, Any] | None:
    """The labels a dashboard snapshot was computed on (None for a row whose parameters do not parse:
    never fresh, so it is computed again)."""
    try:
        params = snapshot_params(snapshot.params)
    except SnapshotParamsError:
        return None
    return dict(params.fingerprint) if isinstance(params, DashboardParams) else None


def request_dashboard(study: Study, level: int | None, *, actor: User | None) -> AgreementSnapshot:
    """Record a dashboard computation at ``level`` and run it: now when the study is small, else in the
    background (`tasks.compute_agreement_task`, enqueued once the snapshot row is committed)."""
    if level is not None and level < 1:
        raise RatingsError(f"the level must be 1 (the top of the tree) or more, got {level}")
    current = fingerprint(study)
    snapshot = AgreementSnapshot.objects.create(
        study=study,
        level=level,
        codebook_version=current["codebook_version"],
        params=DashboardParams(
            level=level, bootstrap=DASHBOARD_BOOTSTRAP, seed=DASHBOARD_SEED, fingerprint=current
        ).to_json(),
        created_by=actor,
    )
    if int(current["ratings"]) > sync_max_ratings():
        from .tasks import compute_agreement_task  # tasks import this module

        # The shared enqueue: with the broker down the snapshot stays queued, to be resent, never a 500.
        transaction.on_commit(lambda: enqueue(compute_agreement_task, snapshot))
        return snapshot
    return run_snapshot(snapshot)


def _dashboard_result(
    ratings: StudyRatings, level: int | None, bootstrap: int, seed: int, progress: JobProgress
) -> dict[str, Any]:
    scopes: list[int | None] = [*ratings.round_numbers, None]
    dimensions = ratings.index.dimensions
    progress.set_total(len(dimensions) * len(scopes))
    out = []
    for dimension in dimensions:
        reports: dict[str, dict[str, Any]] = {}
        for scope in scopes:
            if scope is None and len(scopes) == 2:
                # One round: all rounds are that round, the same units and the same bootstrap draws.
                reports[ALL_ROUNDS] = {**reports[str(scopes[0])], "round": None}
            else:
                reports[ALL_ROUNDS if scope is None else str(scope)] = dimension_report(
                    ratings, dimension.key, round_number=scope, level=level, bootstrap=bootstrap, seed=seed
                )
            progress.advance(1, f"{dimension.name}, {'all rounds' if scope is None else f'round {scope}'}")
        out.append(
            {
                "key": dimension.key,
                "name": dimension.name,
                "multiple": dimension.multiple,
                "max_depth": max(
                    (ratings.index.depth(c) for c in ratings.index.tree(dimension.key)), default=0
                ),
                "reports": reports,
            }
        )
    return {
        "rounds": [{"number": r.number, "name": r.name, "label": r.label} for r in ratings.rounds],
        "dimensions": out,
    }


def _revealed_rounds(study: Study) -> list[int]:
    """The numbers of the study's revealed rounds: those with figures after discussion."""
    return list(
        Round.objects.filter(study=study, revealed_at__isnull=False)
        .order_by("number")
        .values_list("number", flat=True)
    )


def _discussed_result(
    ratings: StudyRatings, revealed: Sequence[int], level: int | None, bootstrap: int, seed: int
) -> dict[str, dict[str, dict[str, Any]]]:
    """The after-discussion reports of each revealed round, by dimension key then round number; the
    blind ones stay in the dashboard result's ``dimensions``, read from the frozen blind record."""
    return {
        dimension.key: {
            str(number): dimension_report(
                ratings, dimension.key, round_number=number, level=level, bootstrap=bootstrap, seed=seed
            )
            for number in revealed
        }
        for dimension in ratings.index.dimensions
    }


# --------------------------------------------------------------------------------------- running one
def run_snapshot(
    snapshot: AgreementSnapshot,
    *,
    echo: Callable[[str], None] | None = None,
    ratings: StudyRatings | None = None,
    alt_ratings: StudyRatings | None = None,
) -> AgreementSnapshot:
    """Compute a queued (or claimed) snapshot and store its result and codebook version.

    Bad parameters (a dimension or round deleted since) end the snapshot *failed* with the message;
    any other error too, and is raised again (`core.jobs.run_job`).
    """

    def work(progress: JobProgress) -> str:
        nonlocal ratings, alt_ratings
        try:
            params = snapshot_params(snapshot.params)
            if ratings is None:
                ratings = (
                    load_study_ratings(snapshot.study)
                    if isinstance(params, DashboardParams)
                    else load_study_ratings(
                        snapshot.study,
                        dimension=params.dimension,
                        raters=params.raters,
                        phase=params.phase,
                        include_assisted=params.include_assisted,
                    )
                )
            if alt_ratings is None and isinstance(params, CommandParams) and params.alt_test is not None:
                alt_ratings = alt_test_ratings(
                    snapshot.study, ratings, params.dimension, params.alt_test.rater, params.include_assisted
                )
            progress.note("Computing agreement")
            if isinstance(params, DashboardParams):
                result: dict[str, Any] = _dashboard_result(
                    ratings, snapshot.level, params.bootstrap, params.seed, progress
                )
                revealed = _revealed_rounds(snapshot.study)
                if revealed:
                    discussed = load_study_ratings(snapshot.study, phase=DISCUSSED)
                    result["discussed"] = _discussed_result(
                        discussed, revealed, snapshot.level, params.bootstrap, params.seed
                    )
                message = f"Agreement on {len(result['dimensions'])} dimension(s)"
            else:
                result, message = _command_result(ratings, params, progress, alt_ratings)
        except (RatingsError, SnapshotParamsError) as exc:
            raise JobFailed(str(exc)) from exc
        snapshot.result = result
        snapshot.codebook_version = ratings.codebook_version
        AgreementSnapshot.objects.filter(pk=snapshot.pk).update(
            result=result, codebook_version=ratings.codebook_version
        )
        return message

    return run_job(snapshot, work, echo=echo)


def _command_result(
    ratings: StudyRatings,
    params: CommandParams,
    progress: JobProgress,
    alt_ratings: StudyRatings | None = None,
) -> tuple[dict[str, Any], str]:
    dimension, round_number, level = params.dimension, params.round, params.level
    keys = _check_request(ratings, dimension, round_number, level)
    progress.set_total(len(keys))
    reports = {}
    for key in keys:
        reports[key] = dimension_report(
            ratings,
            key,
            round_number=round_number,
            level=level,
            bootstrap=params.bootstrap,
            seed=params.seed,
        )
        test = params.alt_test
        if test is not None and alt_ratings is not None:
            reports[key]["alt_test"] = alt_test_report(
                alt_ratings,
                key,
                test.rater,
                round_number=round_number,
                level=level,
                epsilon=test.epsilon,
                q=test.q,
            )
        progress.advance(1, f"dimension {key}")
    models = [name for pk, name in ratings.annotators.items() if pk < 0]
    if models:  # each model (its sample 0) against the gold decisions, on the same round and level
        gold = models_against_gold(
            ratings.study_id, ratings.index, models, keys, round_number=round_number, level=level
        )
        for key in keys:
            reports[key]["gold"] = gold.get(key, {})
    if params.phase == DISCUSSED:
        # What the revealed rounds' discussions resolved, and why items were disagreed on (the rounds asked)
        outcomes = {
            str(number): outcome
            for number, outcome in discussion_outcomes(ratings.study_id).items()
            if round_number is None or number == round_number
        }
        for report in reports.values():
            report["discussion"] = outcomes
    result = reports[keys[0]] if dimension is not None else reports
    return result, f"Agreement on {len(keys)} dimension(s)"


# ----------------------------------------------------------------------------- drill-down, on request
def confusion(
    study: Study, dimension_key: str, *, round_number: int | None, level: int | None, a: str, b: str
) -> tuple[StudyRatings, DimensionTable, ConfusionMatrix]:
    """Annotator ``a``'s values (rows) against ``b``'s (columns) for one dimension on the items both
    rated, from the current labels; set tables compare whole sets. RatingsError for unknown names."""
    ratings = load_study_ratings(study, dimension=dimension_key)
    table = build_table(ratings, dimension_key, round_number=round_number, level=level)
    nominal = table.table if isinstance(table.table, RatingTable) else table.table.as_nominal()
    try:
        matrix = confusion_matrix(nominal, a, b)
    except ValueError as exc:
        raise RatingsError(str(exc)) from None
    return ratings, table, matrix


@dataclass(frozen=True)
class ConfusionCounts:
    """A confusion matrix as the dashboard shows it: only the values ``a`` or ``b`` used, by ``names``
    (as in `ConfusionMatrix.labels`) and as a person reads them (``labels``, `value_label`)."""

    names: tuple[str, ...]
    labels: tuple[str, ...]
    counts: tuple[tuple[int, ...], ...]
    sets: bool
    version: int


def confusion_counts(
    study: Study, dimension_key: str, *, round_number: int | None, level: int | None, a: str, b: str
) -> ConfusionCounts:
    """`confusion` reduced to what the dashboard shows, kept until the labels or the codebook change
    (`freshness.cached`); RatingsError as `confusion` (not kept)."""
    codebook_id, version = codebook_of(study)

    def compute() -> ConfusionCounts:
        ratings, table, matrix = confusion(
            study, dimension_key, round_number=round_number, level=level, a=a, b=b
        )
        # Values neither annotator used would be all-zero rows and columns: leave them out.
        used = np.flatnonzero(matrix.counts.any(axis=0) | matrix.counts.any(axis=1)).tolist()
        return ConfusionCounts(
            names=tuple(matrix.labels[k] for k in used),
            labels=tuple(value_label(ratings, table.labels, matrix.labels[k]) for k in used),
            counts=tuple(tuple(int(matrix.counts[r, c]) for c in used) for r in used),
            sets=table.is_multi,
            version=ratings.codebook_version,
        )

    key = json.dumps(["confusion", version, dimension_key, round_number, level, a, b])
    return freshness.cached(study, codebook_id, key, compute)


def cell_items(
    study: Study,
    dimension_key: str,
    *,
    round_number: int | None,
    level: int | None,
    a: str,
    b: str,
    row: str,
    column: str,
) -> tuple[StudyRatings, DimensionTable, ConfusionMatrix, list[tuple[int, Item]]]:
    """The items behind one confusion-matrix cell, as (round number, item) in table order."""
    ratings, table, matrix = confusion(study, dimension_key, round_number=round_number, level=level, a=a, b=b)
    labels = list(matrix.labels)
    for name, value in (("row", row), ("column", column)):
        if value not in labels:
            raise RatingsError(f"unknown {name} value {value!r} for dimension {dimension_key!r}")
    units = [table.unit_of(name) for name in matrix.items[labels.index(row)][labels.index(column)]]
    items = Item.objects.filter(study=study).in_bulk([item_id for _, item_id in units])
    return ratings, table, matrix, [(r, items[i]) for r, i in units if i in items]


def value_label(ratings: StudyRatings, table_labels: dict[str, int | None], name: str) -> str:
    """How a person reads a value name: a category's path of names, ``pending``, or for a set (a JSON
    array of names) its members' paths joined by `` + `` (``no category`` for the empty set)."""
    if name in table_labels:
        category_id = table_labels[name]
        return PENDING if category_id is None else ratings.index.path(category_id)
    if name.startswith("["):
        members: Sequence[str] = json.loads(name)
        if not members:
            return "no category"
        return " + ".join(value_label(ratings, table_labels, member) for member in members)
    return name
