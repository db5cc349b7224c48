"""A replication package becomes a new study again: ``import_study STUDY PACKAGE.zip``.

Validation first, then one transaction. `import_study` reads the whole package and checks it before it
writes anything:

* the zip: `manifest.json` names the package format and every other file with its SHA-256 and size;
  every listed file must be present with that checksum, no unlisted file may be there, and the files the
  import needs must be listed (a package altered after export is refused);
* the codebook (`codebook.json`): a valid docs/design.md §5 codebook in ``codebook``, consistent with the
  full list of dimensions and categories (every parent, merge target and condition exists, the trees
  have no cycle, the active categories give exactly ``codebook``), with the latest stored version, and
  with every label of the dataset and of the annotations (each key exists, each path is the key's path);
* the items, rounds, annotations and decisions: every URL, round, username, status and timestamp.

Every problem is collected and raised together as one `PackageError` (file, line or row, field, value).
Only a package without problems is written, in one `transaction.atomic`: users, the study and its
members, the codebook (dimensions, categories, versions, change history, all as exported; `writing`),
the items as the item import stores them, with their screening and their bodies rendered again through
the sanitizer (rendered HTML in a package is never trusted; `restore_items`), rounds, assignments,
annotations, decisions (current ones, with their provenance, rationale, decider and time) and the
items' review state (`restore_labels`).

Size: a package of 100,000 items holds some 600,000 label rows. The checks keep what the writes need
(annotations, decisions, URLs) in compact form, items.jsonl is read twice rather than held, and every
table is written in bulk (`bulk.insert_rows`: COPY on PostgreSQL), with ids drawn before the rows go in,
so nothing is read back and no query runs per row. The rows are the ones the row-by-row writes made
before (tests/export/test_restore_rows.py).

Usernames: a username that exists on this instance is that user (so sharing a study between instances
keeps who did what); an unknown one becomes a new *inactive* user with no usable password, a
placeholder an administrator can activate later. Members of the package become members of the new study
with their roles.
"""

from __future__ import annotations

import zipfile
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.db import transaction

from apps.accounts.models import Membership, Study, User
from apps.accounts.services import new_slug_problem
from apps.adjudication.progress import refresh_progress
from apps.annotation.services.package import FILE as DISCUSSION
from apps.annotation.services.package import restore_discussion, usernames
from apps.corpus.services.search_index import fill_search_vectors
from apps.raters.package import ANSWERS_FILE, RATERS_FILE, PlannedAnswer, check_models, restore_models
from apps.taxonomy.models import Dimension

from .codebook_check import PackageCodebook, check_codebook
from .labels import PlannedAnnotation, PlannedDecision, read_annotations, read_decisions
from .reading import (
    PackageError,
    Problems,
    check_gold_items,
    check_rounds,
    check_study,
    json_file,
    open_package,
    read_items,
    text_lines,
    verify,
)
from .restore_guidelines import check_guidelines, write_guidelines
from .restore_items import write_items
from .restore_labels import (
    Target,
    undecided_reviews,
    write_annotations,
    write_decisions,
    write_gold_items,
    write_rounds,
)
from .writing import users_for, write_codebook


@dataclass(frozen=True)
class ImportedStudy:
    """What an import created."""

    study: Study
    items: int
    rounds: int
    annotations: int
    decisions: int
    codebook_version: int
    placeholders: tuple[str, ...]
    model_answers: int = 0

    def summary(self) -> str:
        made = (
            f"; inactive placeholder users created: {', '.join(self.placeholders)}"
            if self.placeholders
            else ""
        )
        models = f", {self.model_answers} model answers" if self.model_answers else ""
        return (
            f"Study {self.study.slug!r} created: {self.items} items, {self.rounds} rounds, "
            f"{self.annotations} submitted annotations, {self.decisions} decisions{models}, codebook version "
            f"{self.codebook_version}{made}."
        )


def _check_models(
    archive: zipfile.ZipFile,
    book: PackageCodebook | None,
    urls: Collection[str],
    round_numbers: Collection[int],
    problems: Problems,
) -> tuple[list[dict[str, Any]], list[PlannedAnswer]]:
    """The package's model raters and answers (`raters/package.py`), checked; none in a package without
    a ``models/`` folder (every package before it, and a study without model raters)."""
    names = set(archive.namelist())
    if RATERS_FILE not in names or book is None:
        return [], []
    lines = text_lines(archive, ANSWERS_FILE) if ANSWERS_FILE in names else iter(())
    raters, answers, found = check_models(
        json_file(archive, RATERS_FILE, problems), lines, urls, round_numbers, book.index
    )
    for where, message in found:
        problems.add(where, message)
    return raters, answers


def import_study(
    slug: str,
    package: str | Path,
    *,
    actor: User | None = None,
    echo: Callable[[str], None] | None = None,
) -> ImportedStudy:
    """Create study `slug` from the replication package at `package` (module docstring).

    Raises PackageError (every problem listed; nothing written) for a slug already taken or invalid, a
    file that is not a package, a checksum mismatch, an inconsistent codebook or any bad row.
    """
    say = echo or (lambda message: None)
    path = Path(package)
    problems = Problems()
    if slug_problem := new_slug_problem(slug):  # the rule create_study applies
        problems.add("STUDY", slug_problem)
    problems.raise_if_any()
    with open_package(path) as archive:
        say("Checking checksums…")
        verify(archive)
        users: set[str] = set()
        say("Checking the study, codebook, items, rounds, annotations and decisions…")
        study_data = json_file(archive, "study.json", problems)
        members = check_study(study_data, problems, users)
        guidelines = check_guidelines(study_data, problems, users)
        book = check_codebook(json_file(archive, "codebook.json", problems), problems, users)
        urls = read_items(archive, problems, users)
        sampling = json_file(archive, "sampling.json", problems)
        rounds = check_rounds(sampling, urls, problems, users)
        round_numbers = {r["number"] for r in rounds}
        # Packages built before round phases have no discussion.json: their rounds restore blind.
        discussion = json_file(archive, DISCUSSION, problems) if DISCUSSION in archive.namelist() else {}
        users |= usernames(discussion or {})
        annotations: list[PlannedAnnotation] = []
        decisions: list[PlannedDecision] = []
        if book is not None:
            annotations = read_annotations(archive, book, urls, round_numbers, problems, users)
            decisions = read_decisions(archive, book, urls, round_numbers, problems, users)
        gold = check_gold_items(sampling, urls, {d.url for d in decisions}, problems, users)
        model_raters, model_answers = _check_models(archive, book, urls, round_numbers, problems)
        problems.raise_if_any()
        assert book is not None
        with transaction.atomic():
            if slug_problem := new_slug_problem(slug):  # taken while the package was being checked
                raise PackageError([f"STUDY: {slug_problem}"])
            user_map, placeholders = users_for(users)
            study = Study.objects.create(
                slug=slug,
                name=study_data["name"],
                description=study_data.get("description") or "",
                overlap=study_data["overlap"],
                consolidation_rule=study_data["consolidation_rule"],
                show_annotator_names=study_data["show_annotator_names"],
                require_rationale_on_override=study_data["require_rationale_on_override"],
                reveal_labels_after_decision=study_data["reveal_labels_after_decision"],
                discuss_after_reveal=bool(study_data.get("discuss_after_reveal", False)),
                require_guidelines=bool(study_data.get("require_guidelines", False)),
                created_by=actor,
            )
            Membership.objects.bulk_create(
                Membership(study=study, user=user_map[name], role=role)
                for name, role in sorted(members.items())
            )
            write_guidelines(study, guidelines, user_map)
            say("Writing the codebook…")
            categories = write_codebook(study, book, user_map)
            category_ids = {book.ids[key]: c.pk for key, c in categories.items()}
            dimension_ids = dict(Dimension.objects.filter(codebook__study=study).values_list("key", "id"))
            say("Writing the items…")
            item_ids = urls  # URL → line number, then URL → item id as the items are written
            stored = write_items(study, archive, user_map, item_ids)
            if stored != len(item_ids):  # the checks above make this impossible; never half-import
                raise PackageError([f"items.jsonl: {len(item_ids)} items read but {stored} stored"])
            say("Writing rounds, annotations and decisions…")
            round_ids = write_rounds(study, rounds, item_ids, user_map)
            write_gold_items(study, gold, item_ids, user_map)
            target = Target(study, item_ids, round_ids, dimension_ids, category_ids, user_map)
            decided = {item_ids[d.url]: d.round for d in decisions}
            written = write_annotations(
                target,
                annotations,
                rounds,
                book.index.version,
                decided=decided,
                undecided={item_ids[a.url] for a in annotations if item_ids[a.url] not in decided},
            )
            write_decisions(target, decisions, written.sources)
            restore_discussion(study, discussion or {}, item_ids, user_map)
            refresh_progress(study=study)
            n_model_answers = restore_models(study, model_raters, model_answers, item_ids, round_ids)
            say("Bringing the review state of undecided items up to date…")
            undecided_reviews(target, written.undecided)
    say("Indexing the items for search…")
    fill_search_vectors(study.pk)  # a command: no worker to leave it to (a search parses them meanwhile)
    result = ImportedStudy(
        study=study,
        items=len(item_ids),
        rounds=len(rounds),
        annotations=sum(1 for a in annotations if a.status == "submitted"),
        decisions=len(decisions),
        codebook_version=book.index.version,
        placeholders=tuple(placeholders),
        model_answers=n_model_answers,
    )
    say(result.summary())
    return result


__all__ = ["ImportedStudy", "PackageError", "import_study"]
