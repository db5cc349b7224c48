"""The agreement dashboard as the page shows it: the levels to choose from, the figures of a snapshot
(overall, per category, per pair, over rounds, the charts) and the confusion matrix, built from the
tested presenter (`presenter.py`) for `views.dashboard`. No request handling of its own beyond reading
the page's query parameters; moved out of `views.py` so that each view stays a short read (issue #19)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from django.urls import reverse
from django.utils.safestring import mark_safe

from apps.accounts.models import Study
from apps.annotation.outcomes import discussion_outcomes
from apps.core.http import HtmxHttpRequest
from apps.taxonomy.index import CodebookIndex

from . import services
from .charts import Series, Threshold, line_chart
from .models import AgreementSnapshot
from .presenter import Coefficient, overall, present, scope_figures
from .services import ALL_ROUNDS, RatingsError
from .tables import TABLES

METRICS = (
    ("percent_agreement", "Percent agreement", "#7a8580"),
    ("cohen_kappa", "Cohen's kappa", "#2f5d50"),
    ("fleiss_kappa", "Fleiss' kappa", "#8a3f94"),
    ("krippendorff_alpha", "Krippendorff's alpha", "#b4582a"),
    ("gwet_ac1", "Gwet's AC1", "#1f4f8f"),
    ("krippendorff_alpha_masi", "alpha (MASI)", "#6b7d2a"),
    ("krippendorff_alpha_jaccard", "alpha (Jaccard)", "#3d7f91"),
)
THRESHOLDS = (Threshold(0.667, "\u03b1 0.667 tentative"), Threshold(0.8, "\u03b1 0.800 reliable"))


@dataclass(frozen=True)
class Figure:
    """A coefficient as shown: its value, or n/a with the reason (and a footnote number in tables)."""

    value: float | None
    reason: str | None = None
    note: int | None = None


class Notes:
    """Footnotes for the n/a cells of one table: each distinct reason once, numbered in order."""

    def __init__(self) -> None:
        self.reasons: list[str] = []

    def figure(self, coefficient: Coefficient) -> Figure:
        value, reason = coefficient.value, coefficient.reason
        if value is not None or reason is None:
            return Figure(value)
        if reason not in self.reasons:
            self.reasons.append(reason)
        return Figure(None, reason, self.reasons.index(reason) + 1)


def round_param(text: str | None) -> int | None:
    return int(text) if text and text.isdigit() else None


def level_param(text: str | None) -> int | None:
    """``?level=N`` (N ≥ 1); anything else means full depth."""
    return int(text) if text and text.isdigit() and int(text) >= 1 else None


def dashboard_url(slug: str, **params: Any) -> str:
    query = urlencode({k: v for k, v in params.items() if v is not None and v != ""})
    return reverse("agreement:dashboard", args=[slug]) + (f"?{query}" if query else "")


def tree_depth(index: CodebookIndex) -> int:
    """The depth of the deepest active category of any dimension (1 for flat codebooks)."""
    return max((index.depth(c) for d in index.dimensions for c in index.tree(d.key)), default=1)


def levels(index: CodebookIndex, slug: str) -> list[dict[str, Any]]:
    depth = tree_depth(index)
    if depth <= 1:
        return []
    names = {1: "Top level (1)"}
    choices: list[dict[str, Any]] = [
        {"level": n, "label": names.get(n, f"Level {n}"), "url": dashboard_url(slug, level=n)}
        for n in range(1, depth)
    ]
    return [*choices, {"level": None, "label": "Full depth (leaf)", "url": dashboard_url(slug)}]


def figures(
    request: HtmxHttpRequest,
    study: Study,
    snapshot: AgreementSnapshot,
    level: int | None,
    index: CodebookIndex,
    *,
    defer_confusion: bool = False,
) -> dict[str, Any]:
    slug = study.slug
    result = snapshot.result
    rounds = result["rounds"]
    scopes = [(str(r["number"]), r["label"]) for r in rounds] + [(ALL_ROUNDS, "All rounds")]
    dimensions = result["dimensions"]
    by_key = {d["key"]: d for d in dimensions}
    chosen = by_key.get(request.GET.get("dimension", ""), dimensions[0])
    scope = request.GET.get("round", ALL_ROUNDS)
    if scope not in chosen["reports"]:
        scope = ALL_ROUNDS
    report = chosen["reports"][scope]
    rows = present(report)

    summary_notes = Notes()
    summary = [
        {
            "dimension": d,
            "cells": [
                {
                    "scope": key,
                    "report": d["reports"][key],
                    "figures": scope_figures(d["reports"][key]),
                    "alpha": summary_notes.figure(overall(d["reports"][key], "krippendorff_alpha")),
                    "kappa": summary_notes.figure(overall(d["reports"][key], "cohen_kappa")),
                    "url": dashboard_url(slug, level=level, dimension=d["key"], round=key),
                    "selected": d is chosen and key == scope,
                }
                for key, _ in scopes
            ],
        }
        for d in dimensions
    ]
    headline = [
        {
            "key": key,
            "label": label,
            "figure": Figure(rows.overall[key].value, rows.overall[key].reason),
            "interval": rows.intervals.get(key),
        }
        for key, label, _ in METRICS
        if key in rows.overall
    ]

    round_keys = [str(r["number"]) for r in rounds]
    series = []
    for key, label, color in METRICS:
        values = [chosen["reports"][k].get(key) for k in round_keys]
        if key not in report or all(v is None for v in values):
            continue
        series.append(Series(label, values, color, dashed=key == "percent_agreement"))
    chart = (
        mark_safe(  # charts.line_chart escapes every text it writes
            line_chart(
                [r["label"] for r in rounds],
                series,
                title=f"{chosen['name']}: agreement by round",
                chart_id="rounds-chart",
                thresholds=THRESHOLDS,
            )
        )
        if rounds
        else None
    )

    names = category_names(index, chosen["key"])
    category_notes = Notes()
    # A revealed round chosen: each category's kappa after discussion beside its blind one.
    after = (result.get("discussed") or {}).get(chosen["key"], {}).get(scope)
    after_rows = {row.key: row for row in present(after).categories} if after else {}
    categories: list[dict[str, Any]] = [
        {
            "key": row.key,
            "label": names.get(row.key, row.key),
            "count": row.count,
            "kappa": category_notes.figure(row.cohen_kappa),
            "fleiss": category_notes.figure(row.fleiss_kappa),
            "alpha": category_notes.figure(row.krippendorff_alpha),
            "after_kappa": category_notes.figure(after_rows[row.key].cohen_kappa)
            if row.key in after_rows
            else None,
        }
        for row in rows.categories
    ]
    # Worst first: lowest alpha at the top, undefined ones last (they are not "worst", just unknown).
    categories.sort(key=lambda c: (c["alpha"].value is None, c["alpha"].value or 0.0, c["label"]))
    pair_notes = Notes()
    pairs = [
        {
            "a": pair.a,
            "b": pair.b,
            "n": pair.n,
            "agreement": pair_notes.figure(pair.percent_agreement),
            "kappa": pair_notes.figure(pair.cohen_kappa),
        }
        for pair in rows.pairs
    ]
    annotators = rows.annotators
    phase_notes = Notes()
    ctx: dict[str, Any] = {
        "before_after": _before_after(result, dict(scopes), phase_notes),
        "after_categories": bool(after_rows),
        "outcomes": _outcomes(study, result, dict(scopes)),
        "phase_notes": phase_notes.reasons,
        "scopes": scopes,
        "summary": summary,
        "summary_notes": summary_notes.reasons,
        "chosen": chosen,
        "scope": scope,
        "scope_label": dict(scopes)[scope],
        "report": report,
        "figures": scope_figures(report),
        "downloads": _downloads(slug, chosen["key"], scope, level),
        "headline": headline,
        "chart": chart,
        "categories": categories,
        "category_notes": category_notes.reasons,
        "pairs": pairs,
        "pair_notes": pair_notes.reasons,
        "annotators": annotators,
    }
    if defer_confusion and len(annotators) >= 2:  # counted from the current labels: asked for once shown
        a, b = request.GET.get("a") or annotators[0], request.GET.get("b") or annotators[1]
        ctx.update(confusion_deferred=True, confusion_a=a, confusion_b=b)
    else:
        ctx.update(_confusion(request, study, chosen["key"], scope, level, annotators))
    return ctx


def _before_after(result: dict[str, Any], labels: dict[str, str], notes: Notes) -> list[dict[str, Any]]:
    """Each revealed round's blind and after-discussion kappa and alpha, per dimension."""
    discussed = result.get("discussed") or {}
    rows = []
    for d in result["dimensions"]:
        for number, after in discussed.get(d["key"], {}).items():
            blind = d["reports"].get(number)
            if blind is None:
                continue
            rows.append(
                {
                    "dimension": d["key"],
                    "name": d["name"],
                    "round": number,
                    "label": labels.get(number, number),
                    **{
                        f"{phase}_{short}": notes.figure(overall(report, metric))
                        for phase, report in (("blind", blind), ("discussed", after))
                        for short, metric in (("kappa", "cohen_kappa"), ("alpha", "krippendorff_alpha"))
                    },
                }
            )
    return rows


def _outcomes(study: Study, result: dict[str, Any], labels: dict[str, str]) -> list[dict[str, Any]]:
    """What each revealed round's discussion resolved, read now (decisions and causes change after the
    snapshot was computed): adjudication's fact, through `annotation/outcomes.py`."""
    if not result.get("discussed"):
        return []
    return [
        {
            "round": number,
            "label": labels.get(str(number), str(number)),
            **outcome,
            "causes": sorted(
                outcome["causes"].items()
            ),  # pairs: a cause keyed "items" must not shadow .items
        }
        for number, outcome in sorted(discussion_outcomes(study.pk).items())
    ]


def _downloads(slug: str, dimension: str, scope: str, level: int | None) -> dict[str, dict[str, str]]:
    """Table name → format → the URL that downloads it for the chosen dimension, round and level."""
    query = urlencode(
        {k: v for k, v in {"dimension": dimension, "round": scope, "level": level}.items() if v}
    )
    return {
        table: {
            fmt: reverse("agreement:table", args=[slug, table, fmt]) + f"?{query}"
            for fmt in ("csv", "md", "tex")
        }
        for table in TABLES
    }


def category_names(index: CodebookIndex, dimension_key: str) -> dict[str, str]:
    """Category key → path of names in the current codebook (keys of deleted categories stay keys)."""
    try:
        return {c.key: index.path(c.id) for c in index.categories_of(dimension_key, active_only=False)}
    except LookupError:
        return {}


def _confusion(
    request: HtmxHttpRequest,
    study: Study,
    dimension: str,
    scope: str,
    level: int | None,
    annotators: list[str],
) -> dict[str, Any]:
    if len(annotators) < 2:
        return {"confusion": None}
    a = request.GET.get("a") or annotators[0]
    b = request.GET.get("b") or annotators[1]
    round_number = round_param(scope)
    base = {"confusion_a": a, "confusion_b": b}
    if a == b:
        return {**base, "confusion": None, "confusion_error": "Pick two different annotators."}
    try:
        matrix = services.confusion_counts(study, dimension, round_number=round_number, level=level, a=a, b=b)
    except RatingsError as exc:
        return {**base, "confusion": None, "confusion_error": str(exc)}
    cell_url = reverse("agreement:cell-items", args=[study.slug])
    rows = []
    for r, row_name in enumerate(matrix.names):
        cells = []
        for c, column_name in enumerate(matrix.names):
            count = matrix.counts[r][c]
            query = urlencode(
                {
                    "dimension": dimension,
                    "round": scope,
                    "level": level or "",
                    "a": a,
                    "b": b,
                    "row": row_name,
                    "col": column_name,
                }
            )
            cells.append(
                {"count": count, "diagonal": r == c, "url": f"{cell_url}?{query}" if count else None}
            )
        rows.append({"label": matrix.labels[r], "cells": cells})
    return {
        **base,
        "confusion": {
            "columns": list(matrix.labels),
            "rows": rows,
            "total": sum(map(sum, matrix.counts)),
            "agreeing": sum(matrix.counts[k][k] for k in range(len(matrix.names))),
            "sets": matrix.sets,
            "version": matrix.version,
            "downloads": {
                fmt: reverse("agreement:table", args=[study.slug, "confusion", fmt])
                + "?"
                + urlencode({"dimension": dimension, "round": scope, "level": level or "", "a": a, "b": b})
                for fmt in ("csv", "md", "tex")
            },
            # the Paper screen draws it as a figure (SVG, PDF) from the same query
            "figure_query": urlencode(
                {
                    "dimension": dimension,
                    "round": "" if scope == ALL_ROUNDS else scope,
                    "level": level or "",
                    "a": a,
                    "b": b,
                }
            ),
        },
    }
