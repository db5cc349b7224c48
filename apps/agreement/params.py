"""The parameters of an agreement snapshot, one frozen dataclass per kind. Pure: no Django.

`services.command_snapshot` and `services.request_dashboard` build one of these; the snapshot row keeps
it in its JSON field (:meth:`to_json`) and `services.run_snapshot`, in the request or in the worker, reads
it back with :func:`snapshot_params`, so a key misspelt on either side is an error, not a silent ``None``.
The JSON keys are those snapshots have always stored: a row written before these classes loads unchanged
(a row with no ``kind`` is a command's, as the serializer always read it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any, Final, Literal

COMMAND: Final = "command"
DASHBOARD: Final = "dashboard"


class SnapshotParamsError(ValueError):
    """Stored parameters that no snapshot kind accepts: the message names the key and the value."""


@dataclass(frozen=True)
class AltTestParams:
    """The alternative-annotator test of one model rater against the table's people."""

    rater: str
    epsilon: float
    q: float


@dataclass(frozen=True)
class CommandParams:
    """`manage.py agreement STUDY ...` (and the API's agreement request): one dimension or all."""

    phase: str
    dimension: str | None = None
    round: int | None = None
    level: int | None = None
    bootstrap: int | None = None
    seed: int | None = None
    raters: tuple[str, ...] | None = None
    alt_test: AltTestParams | None = None
    include_assisted: bool = False
    """Keep the people's labels made with a model's suggestion shown when a model is compared."""
    kind: Literal["command"] = COMMAND

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["raters"] = list(self.raters) if self.raters is not None else None
        return out


@dataclass(frozen=True)
class DashboardParams:
    """The dashboard at one level: every dimension, each round and all rounds, computed on the labels
    that `fingerprint` describes (it tells a fresh snapshot from a stale one)."""

    level: int | None
    bootstrap: int
    seed: int
    fingerprint: Mapping[str, Any]
    kind: Literal["dashboard"] = DASHBOARD

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "level": self.level,
            "bootstrap": self.bootstrap,
            "seed": self.seed,
            "fingerprint": dict(self.fingerprint),
        }


SnapshotParams = CommandParams | DashboardParams


def _optional_int(data: Mapping[str, Any], key: str) -> int | None:
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise SnapshotParamsError(f"snapshot parameter {key!r} must be a whole number, got {value!r}")
    return value


def _optional_text(data: Mapping[str, Any], key: str) -> str | None:
    value = data.get(key)
    if value is not None and not isinstance(value, str):
        raise SnapshotParamsError(f"snapshot parameter {key!r} must be text, got {value!r}")
    return value


def snapshot_params(data: Mapping[str, Any]) -> SnapshotParams:
    """The parameters a snapshot row stored, typed; unknown kinds and badly typed values are refused."""
    kind = data.get("kind", COMMAND)
    if kind == DASHBOARD:
        fingerprint = data.get("fingerprint", {})  # none: the figures compute, but never count as fresh
        if not isinstance(fingerprint, Mapping):
            raise SnapshotParamsError(
                f"snapshot parameter 'fingerprint' must be an object, got {fingerprint!r}"
            )
        return DashboardParams(
            level=_optional_int(data, "level"),
            bootstrap=_optional_int(data, "bootstrap") or 0,
            seed=_optional_int(data, "seed") or 0,
            fingerprint=dict(fingerprint),
        )
    if kind != COMMAND:
        raise SnapshotParamsError(f"unknown snapshot kind {kind!r}: expected {COMMAND!r} or {DASHBOARD!r}")
    raters = data.get("raters")
    if raters is not None and not (isinstance(raters, list) and all(isinstance(r, str) for r in raters)):
        raise SnapshotParamsError(f"snapshot parameter 'raters' must be a list of names, got {raters!r}")
    test = data.get("alt_test")
    alt: AltTestParams | None = None
    if test is not None:
        if not isinstance(test, Mapping) or not isinstance(test.get("rater"), str):
            raise SnapshotParamsError(f"snapshot parameter 'alt_test' must name a rater, got {test!r}")
        try:
            alt = AltTestParams(rater=test["rater"], epsilon=float(test["epsilon"]), q=float(test["q"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise SnapshotParamsError(
                f"snapshot parameter 'alt_test' needs epsilon and q, got {test!r}"
            ) from exc
    return CommandParams(
        phase=_optional_text(data, "phase") or "blind",
        dimension=_optional_text(data, "dimension"),
        round=_optional_int(data, "round"),
        level=_optional_int(data, "level"),
        bootstrap=_optional_int(data, "bootstrap"),
        seed=_optional_int(data, "seed"),
        raters=tuple(raters) if raters is not None else None,
        alt_test=alt,
        include_assisted=data.get("include_assisted") is True,
    )
