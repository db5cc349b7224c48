"""Writing the replication package (the file list and formats: `report.readme_text`, docs/export.md).

Deterministic: JSON with sorted keys, rows in a stable order (items by primary key, which an import
recreates), and every zip entry with the same fixed timestamp (1980-01-01), permissions and compression,
in a fixed order. Two exports of the same data give byte-identical files; only ``manifest.json`` says
when and from which study slug it was made.

Memory is bounded: each file is written to a temporary directory next to the target, chunk by chunk, in
one pass over the items for the dataset files (`rows.StudyReader`, rows written with the csv module and
`json_text.ItemJson`, no DataFrames), then copied into the zip. The agreement report, whose ratings are
the largest thing held at once, is computed first, while the process holds least (at 100,000 items the
peak went from 243 MB to 209 MB by that order alone).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
import zipfile
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from django.utils import timezone

from apps.accounts.models import Membership, Study
from apps.adjudication.outcomes import discussion_outcome_data
from apps.agreement.ratings import DISCUSSED, RatingsError, StudyRatings, load_study_ratings
from apps.agreement.services import DASHBOARD_BOOTSTRAP, DASHBOARD_SEED, dimension_report
from apps.annotation.models import GoldItem, Round, RoundItem
from apps.annotation.services.package import discussion_data
from apps.core.jobs import JobProgress
from apps.corpus.models import Item, ItemComment
from apps.taxonomy.index import CodebookIndex
from apps.taxonomy.models import Category, Codebook, CodebookChange, CodebookVersion, Dimension

from .. import tables
from ..counts import CountAccumulator, counts_latex, counts_markdown
from ..json_text import ItemJson
from ..rows import ExportOptions, StudyReader, count_item, dimension_trees, iso
from ..services import Written, source_labels
from .guidelines import guidelines_data
from .models import models_report, write_models
from .report import agreement_markdown, readme_text

PACKAGE_FORMAT = "taxonomist-replication-package"
PACKAGE_VERSION = 1
MANIFEST = "manifest.json"
README = "README.md"
PAPER_DIR = "paper"
"""The paper folder (`paper.facts.write_paper`): methods section, figures and cross-tabs."""
DATASET_FILES = (
    "agreement.json",
    "agreement.md",
    "annotations.csv",
    "codebook.json",
    "dataset.csv",
    "dataset.json",
    "discussion.json",
    "items.jsonl",
    "sampling.json",
    "study.json",
    "taxonomy_counts.md",
    "taxonomy_counts.tex",
)
"""Every file but the manifest and README: byte-identical across exports of the same data."""

ZIP_DATE = (1980, 1, 1, 0, 0, 0)
ZIP_LEVEL = 4
"""The deflate level of every entry. Level 6 (zlib's default, which packages used before) took 10 s of CPU for
the 420 MB of a 100,000-item package and gave 52 MB; level 4 takes 3.3 s and gives 64 MB; level 1 2.0 s
and 74 MB."""
ITEM_CHUNK = 1000


def dump_json(data: Any) -> str:
    """Pretty, deterministic JSON (sorted keys, two-space indent, UTF-8 kept), ending in a newline."""
    return json.dumps(data, ensure_ascii=False, sort_keys=True, indent=2) + "\n"


def _write_text(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8", newline="")


# --- The files ----------------------------------------------------------------------------------------


def study_data(study: Study) -> dict[str, Any]:
    """study.json: the settings a new study takes over, and the members (slug and dates left out)."""
    members = (
        Membership.objects.filter(study=study)
        .order_by("user__username")
        .values_list("user__username", "role")
    )
    return {
        "name": study.name,
        "description": study.description,
        "overlap": study.overlap,
        "consolidation_rule": study.consolidation_rule,
        "show_annotator_names": study.show_annotator_names,
        "require_rationale_on_override": study.require_rationale_on_override,
        "reveal_labels_after_decision": study.reveal_labels_after_decision,
        "discuss_after_reveal": study.discuss_after_reveal,
        "require_guidelines": study.require_guidelines,
        "members": [{"username": username, "role": role} for username, role in members],
        "guidelines": guidelines_data(study),
    }


def codebook_data(study: Study, index: CodebookIndex) -> dict[str, Any]:
    """codebook.json: ``codebook`` (the active codebook, docs/design.md §5), ``name``, ``version``, every
    dimension and category whatever its status (tree order), the stored ``versions`` and ``changes``."""
    book = Codebook.objects.filter(study=study).first()
    keys = {c.id: c.key for c in index.categories.values()}
    dimension_keys = {d.id: d.key for d in index.all_dimensions}
    # What the index does not hold: who proposed a category, why, and when each was created.
    extra: dict[int, tuple[str, str, str]] = {}
    retired: dict[int, datetime | None] = {}
    if book is not None:
        extra = {
            pk: (username or "", reason, iso(at))
            for pk, username, reason, at in Category.objects.filter(dimension__codebook=book).values_list(
                "id", "proposed_by__username", "proposal_reason", "created_at"
            )
        }
        retired = dict(Dimension.objects.filter(codebook=book).values_list("id", "retired_at"))
    categories: list[dict[str, Any]] = []
    for dimension in index.all_dimensions:
        for category_id in index.tree(dimension.key, active_only=False):
            c = index.categories[category_id]
            proposer, reason, created_at = extra.get(c.id, ("", "", ""))
            categories.append(
                {
                    "dimension": dimension.key,
                    "key": c.key,
                    "parent": keys[c.parent_id] if c.parent_id is not None else None,
                    "name": c.name,
                    "definition": c.definition,
                    "include": c.include,
                    "exclude": c.exclude,
                    "examples": list(c.examples),
                    "position": c.position,
                    "status": c.status,
                    "merged_into": keys.get(c.merged_into_id) if c.merged_into_id is not None else None,
                    "proposed_by": proposer or None,
                    "proposal_reason": reason,
                    "created_at": created_at,
                }
            )
    dimensions = [
        {
            "key": d.key,
            "name": d.name,
            "description": d.description,
            "multiple": d.multiple,
            "position": d.position,
            "applies_when": {"dimension": d.applies_when[0], "category": d.applies_when[1]}
            if d.applies_when is not None
            else None,
            "retired_at": iso(retired.get(d.id)) or None,
        }
        for d in index.all_dimensions
    ]
    versions: list[dict[str, Any]] = []
    changes: list[dict[str, Any]] = []
    if book is not None:
        versions = [
            {"number": number, "created_at": iso(at), "created_by": username or None, "snapshot": snapshot}
            for number, at, username, snapshot in CodebookVersion.objects.filter(codebook=book)
            .order_by("number")
            .values_list("number", "created_at", "created_by__username", "snapshot")
        ]
        for row in (
            CodebookChange.objects.filter(codebook=book)
            .order_by("version", "id")
            .values_list(
                "version",
                "kind",
                "actor__username",
                "at",
                "dimension_id",
                "category_id",
                "category__dimension_id",
                "before",
                "after",
                "note",
            )
        ):
            version, kind, actor, at, dimension_id, category_id, category_dimension, before, after, note = row
            changes.append(
                {
                    "version": version,
                    "kind": kind,
                    "actor": actor or None,
                    "at": iso(at),
                    "dimension": dimension_keys.get(dimension_id) if dimension_id is not None else None,
                    "category": {"dimension": dimension_keys[category_dimension], "key": keys[category_id]}
                    if category_id is not None and category_id in keys
                    else None,
                    "before": before,
                    "after": after,
                    "note": note,
                }
            )
    return {
        "name": index.name,
        "version": index.version,
        "codebook": index.snapshot(),
        "dimensions": dimensions,
        "categories": categories,
        "versions": versions,
        "changes": changes,
    }


def sampling_data(study: Study) -> dict[str, Any]:
    """sampling.json: every round (number, name, kind, pass mark, method, seed, requested size, actual
    size, stratify field, parameters, who and when) with its items' URLs in the round's order, and the
    study's gold items (URL, who marked it and when). The answers annotators gave to gold checks are not
    labels and stay out of the package (`annotations.csv` holds reliability labels only)."""
    members: dict[int, list[str]] = {}
    for round_id, url in (
        RoundItem.objects.filter(round__study=study)
        .order_by("round_id", "position", "id")
        .values_list("round_id", "item__url")
    ):
        members.setdefault(round_id, []).append(url)
    rounds = []
    for row in (
        Round.objects.filter(study=study)
        .order_by("number")
        .values_list(
            "id",
            "number",
            "name",
            "kind",
            "pass_mark",
            "method",
            "seed",
            "requested_size",
            "stratify_field",
            "params",
            "created_at",
            "created_by__username",
        )
    ):
        pk, number, name, kind, pass_mark, method, seed, requested, stratify, params, at, username = row
        urls = members.get(pk, [])
        rounds.append(
            {
                "number": number,
                "name": name,
                "kind": kind,
                "pass_mark": pass_mark,
                "method": method,
                "seed": seed,
                "requested_size": requested,
                "size": len(urls),
                "stratify_field": stratify,
                "params": params,
                "created_at": iso(at),
                "created_by": username or None,
                "items": urls,
            }
        )
    gold_items = [
        {"url": url, "marked_by": username or None, "marked_at": iso(at)}
        for url, username, at in GoldItem.objects.filter(study=study)
        .order_by("item__url")
        .values_list("item__url", "marked_by__username", "marked_at")
    ]
    return {"rounds": rounds, "gold_items": gold_items}


def item_lines(study: Study, *, chunk_size: int = ITEM_CHUNK) -> Iterator[dict[str, Any]]:
    """items.jsonl: every item in primary-key order with its comments or answers (two queries per
    chunk). Rendered HTML is left out: an import renders the bodies again through the sanitizer."""
    last = 0
    while True:
        rows = list(
            Item.objects.filter(study=study, id__gt=last)
            .order_by("id")
            .values_list(
                "id",
                "url",
                "source",
                "external_id",
                "title",
                "body",
                "body_format",
                "created_at",
                "tags",
                "metadata",
                "raw",
                "relevance",
                "relevance_reason",
                "screened_by__username",
            )[:chunk_size]
        )
        if not rows:
            return
        last = rows[-1][0]
        comments: dict[int, list[dict[str, Any]]] = {}
        for c in (
            ItemComment.objects.filter(item_id__in=[r[0] for r in rows])
            .order_by("item_id", "position")
            .values_list(
                "item_id",
                "external_id",
                "author",
                "body",
                "body_format",
                "created_at",
                "is_answer",
                "is_accepted",
                "score",
            )
        ):
            comments.setdefault(c[0], []).append(
                {
                    "external_id": c[1],
                    "author": c[2],
                    "body": c[3],
                    "body_format": c[4],
                    "created_at": iso(c[5]) or None,
                    "is_answer": c[6],
                    "is_accepted": c[7],
                    "score": c[8],
                }
            )
        for pk, url, source, ext, title, body, fmt, at, tags, meta, raw, relevance, reason, screener in rows:
            yield {
                "url": url,
                "source": source,
                "external_id": ext,
                "title": title,
                "body": body,
                "body_format": fmt,
                "created_at": iso(at) or None,
                "tags": tags,
                "metadata": meta,
                "raw": raw,
                "relevance": relevance,
                "relevance_reason": reason,
                "screened_by": screener or None,
                "comments": comments.get(pk, []),
            }


def _report(ratings: StudyRatings, key: str, number: int | None) -> dict[str, Any]:
    try:
        return dimension_report(
            ratings, key, round_number=number, bootstrap=DASHBOARD_BOOTSTRAP, seed=DASHBOARD_SEED
        )
    except (RatingsError, ValueError) as exc:
        return {"error": str(exc)}


def agreement_data(study: Study, index: CodebookIndex) -> dict[str, Any]:
    """agreement.json: `agreement.services.dimension_report` for every active dimension, per round and for
    all rounds together, at full depth, with the dashboard's bootstrap (replicates and seed), so that every
    figure equals the full-depth dashboard's. A report the data cannot give holds ``{"error": reason}``.

    The ratings are read one dimension at a time, so that memory holds one dimension's labels, not all."""
    keys = [d.key for d in index.dimensions]
    reports: dict[str, dict[int | None, dict[str, Any]]] = {}
    rounds: list[tuple[int, str]] = []
    n_ratings = 0
    version = index.version
    revealed = list(
        Round.objects.filter(study=study, revealed_at__isnull=False).values_list("number", flat=True)
    )
    discussed: dict[int, dict[str, dict[str, Any]]] = {number: {} for number in revealed}
    outcomes = discussion_outcome_data(study.pk) if revealed else {}
    for key in keys:
        ratings = load_study_ratings(study, dimension=key)
        rounds = [(r.number, r.name) for r in ratings.rounds]
        version = ratings.codebook_version
        n_ratings += len(ratings.rows)
        reports[key] = {}
        numbers = [n for n, _ in rounds]
        for number in [*numbers, None]:
            if number is None and len(numbers) == 1:
                # As the dashboard does: one round is all rounds (same units, same bootstrap draws).
                reports[key][None] = {**reports[key][numbers[0]], "round": None}
                continue
            reports[key][number] = _report(ratings, key, number)
        del ratings
        if revealed:
            after = load_study_ratings(study, dimension=key, phase=DISCUSSED)
            for number in revealed:
                discussed[number][key] = _report(after, key, number)
            del after
    return {
        "codebook_version": version,
        "level": None,
        "bootstrap": DASHBOARD_BOOTSTRAP,
        "seed": DASHBOARD_SEED,
        "n_ratings": n_ratings,
        "rounds": [
            {
                "round": number,
                "name": name,
                "dimensions": {k: reports[k][number] for k in keys},
                # a revealed round: `dimensions` are its blind figures (frozen at the reveal), these the
                # figures after discussion
                **({"discussed": discussed[number]} if number in discussed else {}),
                # what discussion resolved and what the lead did, and why items were disagreed on
                **({"discussion": outcomes[number]} if number in outcomes else {}),
            }
            for number, name in rounds
        ],
        "all_rounds": {k: reports[k][None] for k in keys},
    }


# --- The zip ------------------------------------------------------------------------------------------


def _hash_file(path: Path) -> tuple[str, int]:
    digest = hashlib.sha256()
    size = 0
    with path.open("rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
            size += len(block)
    return digest.hexdigest(), size


def _zip_info(name: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, date_time=ZIP_DATE)
    info.compress_type = zipfile.ZIP_DEFLATED
    # ZipFile's compresslevel applies only to entries it names itself, not to a ZipInfo passed in.
    # Python 3.13 calls the attribute compress_level (and keeps _compresslevel as an alias).
    info._compresslevel = ZIP_LEVEL  # type: ignore[attr-defined]
    info.create_system = 3  # unix, whatever the exporting machine
    info.external_attr = 0o100644 << 16
    return info


def write_zip(directory: Path, names: list[str], target: Path) -> None:
    """Zip `names` (files in `directory`) into `target`, in that order, deterministically."""
    with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=ZIP_LEVEL) as archive:
        for name in names:
            with (
                (directory / name).open("rb") as source,
                archive.open(_zip_info(name), "w", force_zip64=True) as out,
            ):
                shutil.copyfileobj(source, out, 1 << 20)


def build_package(
    study: Study,
    path: Path,
    *,
    index: CodebookIndex | None = None,
    progress: JobProgress | None = None,
) -> Written:
    """Write the replication package of `study` to `path` (overwritten). Returns the dataset rows (CSV
    rows of dataset.csv) and the decided items."""
    index = index or CodebookIndex.for_study(study)
    note = progress.note if progress is not None else (lambda message: None)
    dimensions = [d.key for d in index.all_dimensions]
    trees = dimension_trees(index)
    counted = {tree.key for tree in trees}
    accumulator = CountAccumulator(trees)
    with tempfile.TemporaryDirectory(dir=path.parent, prefix=".package-") as temporary:
        directory = Path(temporary)
        # Agreement first, while the process holds least: its ratings are the largest thing read at once,
        # and memory the dataset pass leaves behind would add to their peak.
        note("Computing agreement…")
        names = {d.key: d.name for d in index.dimensions}
        agreement = agreement_data(study, index)
        _write_text(directory / "agreement.json", dump_json(agreement))
        _write_text(directory / "agreement.md", agreement_markdown(agreement, names))
        note("Drawing the paper's figures and tables…")
        # Imported here: the paper folder reads this module's agreement and sampling data.
        from apps.export.paper.facts import write_paper

        note("Comparing the model raters…")
        compared = models_report(study, index)
        paper = [
            f"{PAPER_DIR}/{name}"
            for name in write_paper(study, directory / PAPER_DIR, agreement=agreement, models=compared)
        ]
        del agreement
        note("Writing the study, codebook and rounds…")
        _write_text(directory / "study.json", dump_json(study_data(study)))
        _write_text(directory / "codebook.json", dump_json(codebook_data(study, index)))
        _write_text(directory / "sampling.json", dump_json(sampling_data(study)))
        _write_text(directory / "discussion.json", dump_json(discussion_data(study)))
        note("Writing the model raters…")
        models = write_models(study, directory, index, dump_json, compared)
        del compared
        n_items = 0
        with (directory / "items.jsonl").open("w", encoding="utf-8", newline="") as handle:
            for line in item_lines(study):
                handle.write(tables.json_line(line) + "\n")
                n_items += 1
        reader = StudyReader(study, index, ExportOptions(format="zip"), include_open=True)
        if progress is not None:
            progress.job.progress_done = 0
            progress.set_total(reader.count())
        note("Writing the dataset and the annotators' labels…")
        rows = decided = findings = annotations = 0
        json_line = ItemJson().line
        with (
            (directory / "dataset.csv").open("w", encoding="utf-8", newline="") as csv_out,
            (directory / "dataset.json").open("w", encoding="utf-8", newline="") as json_out,
            (directory / "annotations.csv").open("w", encoding="utf-8", newline="") as raw_out,
        ):
            gold_csv, raw_csv = tables.csv_writer(csv_out), tables.csv_writer(raw_out)
            gold_csv.writerow(tables.dataset_columns(dimensions))
            raw_csv.writerow(tables.ANNOTATION_COLUMNS)
            json_out.write("[")
            cells = tables.DimensionCells(dimensions, escape=True)
            for chunk in reader.chunks():
                gold = [item for item in chunk if item.decision is not None]
                lines = list(tables.dataset_rows(gold, dimensions, escape=True, cells=cells))
                gold_csv.writerows(lines)
                raw_csv.writerows(tables.annotation_rows(chunk, dimensions, escape=True))
                for item in gold:
                    json_out.write(("\n" if decided == 0 else ",\n") + json_line(item))
                    decided += 1
                    count_item(accumulator, item, counted)
                    assert item.decision is not None
                    findings += len(item.decision.findings)
                annotations += sum(1 for item in chunk for a in item.annotations if a.submitted)
                rows += len(lines)
                if progress is not None:
                    progress.advance(len(chunk))
            json_out.write("\n]\n" if decided else "]\n")
        note("Writing the taxonomy counts…")
        count_tables = accumulator.tables(source_labels())
        title = f"Taxonomy counts: {study.name}"
        intro = f"Codebook version {index.version}; {decided} decided items, {findings} findings."
        _write_text(directory / "taxonomy_counts.md", counts_markdown(count_tables, title=title, intro=intro))
        _write_text(directory / "taxonomy_counts.tex", counts_latex(count_tables, title=title))
        counts = {
            "items": n_items,
            "decided_items": decided,
            "findings": findings,
            "annotations": annotations,
        }
        _write_text(
            directory / README,
            readme_text(
                study_name=study.name,
                codebook_version=index.version,
                counts=counts,
                dimensions=[(d.key, d.name) for d in index.all_dimensions],
            ),
        )
        files = {}
        for name in (README, *DATASET_FILES, *models, *paper):
            digest, size = _hash_file(directory / name)
            files[name] = {"sha256": digest, "bytes": size}
        manifest = {
            "format": PACKAGE_FORMAT,
            "format_version": PACKAGE_VERSION,
            "generator": "Taxonomist",
            "study": study.slug,
            "exported_at": timezone.now().isoformat(),
            "codebook_version": index.version,
            "counts": counts,
            "files": files,
        }
        _write_text(directory / MANIFEST, dump_json(manifest))
        note("Writing the zip…")
        write_zip(directory, [README, MANIFEST, *DATASET_FILES, *models, *paper], path)
    return Written(rows, decided)
