"""The study's facts for the methods section (`methods.MethodsData`), and the paper folder that
``export_dataset --format paper`` writes and the replication package holds (docs/paper.md).

Numbers come from the package's own readers (`package.build.sampling_data`, `agreement_data`), so the
methods section states what ``sampling.json`` and ``agreement.json`` hold.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from functools import partial
from itertools import pairwise
from pathlib import Path
from typing import Any

from django.db.models import Count

from apps.accounts.models import Study
from apps.adjudication.models import Decision, DecisionFinding, Provenance
from apps.adjudication.outcomes import discussion_outcome_data
from apps.agreement.models_report import models_agreement
from apps.annotation.models import Annotation, Assignment, Cause, RoundKind
from apps.corpus.models import Item, Relevance
from apps.export.package.build import agreement_data, sampling_data
from apps.export.rows import gold_count_tables
from apps.export.services import source_labels
from apps.raters.package import has_models, raters_data
from apps.taxonomy.index import CodebookIndex
from apps.taxonomy.models import ChangeKind, CodebookChange

from . import artifacts, data, methods, methods_models
from . import crosstab as ct
from .figures import FORMATS

FIGURE_DIR = "figures"
TABLE_DIR = "tables"


def _interval(report: Mapping[str, Any], metric: str) -> tuple[float, float] | None:
    bounds = report.get(f"{metric}_ci")
    return (float(bounds[0]), float(bounds[1])) if bounds else None


def _agreement_facts(agreement: Mapping[str, Any], names: Mapping[str, str]) -> list[methods.AgreementFacts]:
    out = []
    periods = [(r["round"], r["dimensions"]) for r in agreement["rounds"]] + [(None, agreement["all_rounds"])]
    for number, reports in periods:
        for key, report in reports.items():
            if "error" in report:
                continue
            out.append(
                methods.AgreementFacts(
                    dimension=names.get(key, key),
                    round=number,
                    n=int(report.get("n_pairable", 0)),
                    cohen_kappa=report.get("cohen_kappa"),
                    fleiss_kappa=report.get("fleiss_kappa"),
                    alpha=report.get("krippendorff_alpha"),
                    alpha_ci=_interval(report, "krippendorff_alpha"),
                    ac1=report.get("gwet_ac1"),
                    cohen_kappa_ci=_interval(report, "cohen_kappa"),
                    ac1_ci=_interval(report, "gwet_ac1"),
                )
            )
    return out


def methods_data(
    study: Study,
    index: CodebookIndex,
    agreement: Mapping[str, Any],
    saturations: list[data.Saturation],
    *,
    figures: tuple[methods.Artifact, ...] = (),
    tables: tuple[methods.Artifact, ...] = (),
    models: Mapping[str, Any] | None = None,
) -> methods.MethodsData:
    """The facts of the methods section. ``models``: the package's ``models/agreement.json``
    (`models_agreement`), computed here when the study has model raters and it is not given."""
    labels = source_labels()
    items = Item.objects.filter(study=study)
    sources = [
        (labels.get(s, s), n)
        for s, n in items.values_list("source").annotate(n=Count("id")).order_by("source")
    ]
    relevance = dict(items.values_list("relevance").annotate(n=Count("id")).order_by())
    screening = [
        (str(label).lower(), relevance[value]) for value, label in Relevance.choices if relevance.get(value)
    ]
    reasons = Counter(
        items.filter(relevance=Relevance.IRRELEVANT)
        .exclude(relevance_reason="")
        .values_list("relevance_reason", flat=True)
    )
    submitted = Assignment.objects.reliability().filter(study=study, annotation__submitted_at__isnull=False)
    per_round = {
        number: (n_items, n_annotators)
        for number, n_items, n_annotators in submitted.values_list("round__number")
        .annotate(n_items=Count("item", distinct=True), n_annotators=Count("annotator", distinct=True))
        .values_list("round__number", "n_items", "n_annotators")
    }
    rounds = [
        methods.RoundFacts(
            r["number"], r["name"], r["method"], r["size"], *per_round.get(r["number"], (0, 0))
        )
        for r in sampling_data(study)["rounds"]
        if r["kind"] != RoundKind.TRAINING  # training rounds score annotators; they label nothing
    ]
    annotators = sorted(set(submitted.values_list("annotator__username", flat=True)))
    names = {d.key: d.name for d in index.dimensions}
    kinds = dict(ChangeKind.choices)
    # The changes that made the first version (loading the codebook) are its content, not changes.
    logged = CodebookChange.objects.filter(codebook__study=study)
    first = min(logged.values_list("version", flat=True), default=0)
    changes = logged.filter(version__gt=first).values_list("kind").annotate(n=Count("id")).order_by("kind")
    decisions = dict(
        Decision.objects.filter(study=study, is_current=True)
        .values_list("provenance")
        .annotate(n=Count("id"))
        .order_by()
    )
    return methods.MethodsData(
        study=study.name,
        items=items.count(),
        sources=tuple(sources),
        screening=tuple(screening),
        exclusion_reasons=tuple(reasons.most_common(5)),
        rounds=tuple(rounds),
        annotators=tuple(annotators),
        agreement=tuple(_agreement_facts(agreement, names)),
        bootstrap=int(agreement.get("bootstrap", 0)),
        seed=int(agreement.get("seed", 0)),
        codebook_version=index.version,
        dimensions=tuple((d.name, len(index.categories_of(d.key))) for d in index.dimensions),
        changes=tuple((str(kinds.get(kind, kind)).lower(), n) for kind, n in changes),
        saturation=tuple(
            methods.SaturationFacts(
                s.dimension_name,
                s.overall.items,
                s.overall.total_codes,
                s.overall.base,
                s.overall.run,
                s.overall.threshold,
                s.overall.codes_in_base,
                s.overall.saturation_item,
            )
            for s in saturations
            if s.overall.items
        ),
        decisions=tuple(
            (str(label).lower(), decisions[value])
            for value, label in Provenance.choices
            if decisions.get(value)
        ),
        findings=DecisionFinding.objects.filter(decision__study=study, decision__is_current=True).count(),
        figures=figures,
        tables=tables,
        extra_sections=tuple(
            section
            for section in (
                methods.discussion_section(_discussion_facts(study, agreement, names)),
                _models_section(study, index, models),
            )
            if section
        ),
    )


def _models_section(
    study: Study, index: CodebookIndex, report: Mapping[str, Any] | None
) -> methods.Section | None:
    if not has_models(study):
        return None
    report = report if report is not None else models_agreement(study, index)
    assisted = Annotation.objects.filter(assignment__study=study, suggestion_shown=True).count()
    return methods_models.models_section(model_facts(index, raters_data(study), report), assisted)


def model_facts(
    index: CodebookIndex, raters: Mapping[str, Any], report: Mapping[str, Any]
) -> list[methods_models.ModelFacts]:
    """Each model rater of ``models/raters.json`` with its figures of ``models/agreement.json``."""
    names = {d.key: d.name for d in index.dimensions}
    out = []
    for rater in raters["raters"]:
        figures = report["raters"].get(rater["name"], {})
        dimensions = [] if "error" in figures else [
            _model_dimension(names.get(key, key), value) for key, value in figures.items()
        ]  # fmt: skip
        out.append(
            methods_models.ModelFacts(
                name=rater["name"],
                kind=rater["kind"],
                model=rater["model"],
                model_ids=tuple(rater["model_ids"]),
                temperature=rater["temperature"],
                samples=rater["samples"],
                prompt_version=rater["prompt_version"],
                answers=rater["answers"],
                dimensions=tuple(d for d in dimensions if d is not None),
                error=figures.get("error"),
            )
        )
    return out


def _model_dimension(name: str, value: Mapping[str, Any]) -> methods_models.ModelDimensionFacts | None:
    people = value.get("with_people") or {}
    if "error" in people or not people.get("n_pairable"):
        return None
    gold = value.get("gold") or {}
    return methods_models.ModelDimensionFacts(
        dimension=name,
        n=int(people["n_pairable"]),
        alpha=people.get("krippendorff_alpha"),
        alpha_ci=_interval(people, "krippendorff_alpha"),
        accuracy=gold.get("accuracy"),
        accuracy_ci=(gold["accuracy_ci"][0], gold["accuracy_ci"][1]) if gold.get("accuracy_ci") else None,
        n_gold=int(gold.get("n") or 0),
        macro_f1=gold.get("macro_f1"),
        alt_test=value.get("alt_test"),
    )


def _discussion_facts(
    study: Study, agreement: Mapping[str, Any], names: Mapping[str, str]
) -> list[methods.DiscussionFacts]:
    """Each revealed round's outcomes (adjudication's `discussion_outcome_data`) and its kappa blind and
    after discussion (agreement.json's `dimensions` and `discussed`)."""
    rounds = {r["round"]: r for r in agreement.get("rounds", [])}
    causes = dict(Cause.objects.filter(study=study).values_list("key", "name"))
    facts = []
    for number, outcome in sorted(discussion_outcome_data(study.pk).items()):
        r = rounds.get(number, {})
        after = r.get("discussed", {})
        kappa = tuple(
            (names.get(key, key), report.get("cohen_kappa"), after[key].get("cohen_kappa"))
            for key, report in r.get("dimensions", {}).items()
            if key in after and "error" not in report and "error" not in after[key]
        )
        facts.append(
            methods.DiscussionFacts(
                number,
                outcome["resolved_by_discussion"],
                outcome["adjudicated"],
                outcome["unresolved"],
                tuple((causes.get(key, key).lower(), n) for key, n in outcome["causes"].items()),
                kappa,
            )
        )
    return facts


def _write(path: Path, content: bytes | str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, str):
        path.write_text(content, encoding="utf-8", newline="\n")
    else:
        path.write_bytes(content)


def _dimension_pairs(index: CodebookIndex) -> list[tuple[str, str]]:
    """The cross-tabs the paper folder holds: each dimension by the next one that applies on the same
    findings (e.g. symptom by fix pattern), at the top level of the rows."""
    keys = [d.key for d in index.dimensions]
    return list(pairwise(keys))


def write_paper(
    study: Study,
    directory: Path,
    *,
    agreement: Mapping[str, Any] | None = None,
    models: Mapping[str, Any] | None = None,
) -> list[str]:
    """Write the paper folder into `directory`: methods.md, methods.tex, references.bib, every figure as
    SVG and PDF under figures/, the cross-tabs as CSV, JSON, Markdown and LaTeX under tables/. Returns
    the written files' paths relative to `directory`, sorted. ``agreement`` and ``models``: the package's
    ``agreement.json`` and ``models/agreement.json`` when the caller has them (computed here otherwise)."""
    index = CodebookIndex.for_study(study)
    agreement = agreement if agreement is not None else agreement_data(study, index)
    written: list[str] = []

    def put(name: str, content: bytes | str) -> None:
        _write(directory / name, content)
        written.append(name)

    figure_list: list[methods.Artifact] = []
    table_list: list[methods.Artifact] = []
    saturations = []
    count_tables = gold_count_tables(study, index, source_labels())
    for dimension in index.dimensions:
        key = dimension.key
        saturation = data.saturation(study, key, index=index)
        saturations.append(saturation)
        name = dimension.name
        draws: list[tuple[str, str, Callable[[str], bytes]]] = [
            (
                "saturation",
                f"Saturation of {name}: distinct categories over the items in order of first submission.",
                partial(artifacts.saturation_figure, study, saturation),
            ),
            (
                "agreement",
                f"{name}: agreement by round (Krippendorff's alpha, Cohen's kappa and Gwet's AC1, "
                "with 95% bootstrap intervals).",
                partial(artifacts.agreement_figure, study, key, agreement=agreement),
            ),
            (
                "distribution",
                f"{name}: findings per category of the final decisions.",
                partial(artifacts.distribution_figure, study, key, tables=count_tables),
            ),
        ]
        for kind, caption, draw in draws:
            try:
                files = {fmt: draw(fmt) for fmt in FORMATS}
            except data.PaperError:
                continue  # nothing to draw for this dimension yet (no labels, no rounds, no decisions)
            stem = f"{FIGURE_DIR}/{kind}-{key}"
            for fmt, content in files.items():
                put(f"{stem}.{fmt}", content)
            figure_list.append(methods.Artifact(stem, caption, f"fig:{kind}-{key}"))
    for rows, cols in _dimension_pairs(index):
        table = data.crosstab(study, rows=rows, rows_level=1, cols=cols, index=index)
        if not table.total:
            continue
        stem = f"{TABLE_DIR}/crosstab-{rows}-{cols}"
        caption = f"{table.row_label} by {table.col_label}: findings of the final decisions"
        put(f"{stem}.csv", ct.to_csv(table))
        put(f"{stem}.json", ct.dump_json(table))
        put(f"{stem}.md", ct.to_markdown(table, title=caption))
        put(f"{stem}.tex", ct.to_latex(table, caption=caption, label=f"tab:crosstab-{rows}-{cols}"))
        table_list.append(methods.Artifact(stem, caption, f"tab:crosstab-{rows}-{cols}"))
        try:
            heat = {fmt: artifacts.crosstab_figure(table, fmt) for fmt in FORMATS}
        except data.PaperError:
            continue
        for fmt, content in heat.items():
            put(f"{FIGURE_DIR}/crosstab-{rows}-{cols}.{fmt}", content)
        figure_list.append(
            methods.Artifact(f"{FIGURE_DIR}/crosstab-{rows}-{cols}", caption, f"fig:crosstab-{rows}-{cols}")
        )
    facts = methods_data(
        study,
        index,
        agreement,
        saturations,
        figures=tuple(figure_list),
        tables=tuple(table_list),
        models=models,
    )
    put("methods.md", methods.to_markdown(facts))
    put("methods.tex", methods.to_latex(facts))
    put("references.bib", methods.BIBTEX)
    return sorted(written)
